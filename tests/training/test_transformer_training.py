"""Training and tagging with a transformer's vectors (issue #61): a tiny random BERT built by the test
(no download), the run folder's record of it, a frozen run computing each sentence once, fine-tuning;
and, on real data, the registry's MiniLM."""

from __future__ import annotations

import json

import pytest
import torch

from conftest import QE_SAMPLE, SAMPLE, extra, run_cli, sample_training
from easyfirst.api import Tagger
from easyfirst.data import transformer_models
from tiny_transformer import tiny_bert

extra("transformers", "transformers")


@pytest.fixture
def counted(monkeypatch):
    """How many windows each loaded transformer ran, from a hook on the transformers library's module."""
    windows: list[int] = []
    load = transformer_models.load_transformer

    def counting(name):
        net, tokenizer, digest = load(name)
        net.register_forward_hook(
            lambda module, args, kwargs, out: windows.append(len(kwargs["input_ids"])), with_kwargs=True
        )
        return net, tokenizer, digest

    monkeypatch.setattr(transformer_models, "load_transformer", counting)
    return windows


def word_rows(text: str) -> list[list[list[str]]]:
    """Each sentence's word lines of a CoNLL-U text, split into columns (no ranges, no empty nodes)."""
    rows = [[line.split("\t") for line in b.splitlines()] for b in text.strip().split("\n\n")]
    return [[r for r in sentence if r[0].isdigit()] for sentence in rows]


def sample_sentences() -> list[list[str]]:
    return [[r[1] for r in sentence] for sentence in word_rows(SAMPLE.read_text(encoding="utf-8"))]


def column(path, k: int) -> list[str]:
    return [r[k] for sentence in word_rows(path.read_text(encoding="utf-8")) for r in sentence]


def test_a_frozen_run_computes_each_sentence_once_however_many_epochs(tmp_path, counted):
    """train = dev = test = the sample: warmed once, the epochs' updates and dev scores, and the best
    model's scores at the end, read the cache. So one epoch and three run the transformer on as many
    windows: each of the sample's distinct sentences once."""
    bert = tiny_bert(tmp_path / "bert")
    distinct = len({tuple(s) for s in sample_sentences()})
    counts = []
    for epochs in (1, 3):
        counted.clear()
        done = run_cli(*sample_training(tmp_path / f"run{epochs}", "--transformer", bert, epochs=epochs))
        assert done.returncode == 0, done.stderr.decode()
        counts.append(sum(counted))
    assert counts == [distinct, distinct]


def test_a_cache_too_small_for_the_run_says_what_would_keep_every_sentence(tmp_path, monkeypatch):
    """A learned mix of MiniLM's seven states over EWT needs 2.2 GB, past the default 2 GB: the first
    sentences were dropped and computed again every epoch, and the log said "kept for the run"."""
    from easyfirst.model.transformer import SentenceCache, TransformerEmbedder

    bert = tiny_bert(tmp_path / "bert")
    distinct = len({tuple(s) for s in sample_sentences()})
    # 2 KB instead of the option's megabytes: a few of the sample's sentences (16 floats a word) fit
    monkeypatch.setattr(
        TransformerEmbedder, "start_cache", lambda self, mb: setattr(self, "cache", SentenceCache(2048))
    )
    done = run_cli(*sample_training(tmp_path / "small", "--transformer", bert, epochs=1))
    assert done.returncode == 0, done.stderr.decode()
    said = " ".join(done.stderr.decode().split())
    assert f"of the {distinct} sentences fit: the others are computed again every epoch" in said
    assert "--transformer-cache-mb 1 keeps them all" in said
    monkeypatch.undo()
    done = run_cli(*sample_training(tmp_path / "enough", "--transformer", bert, epochs=1))
    assert done.returncode == 0 and "sentences fit" not in done.stderr.decode()


def test_a_run_records_its_transformer_tags_through_every_path_and_refuses_other_weights(tmp_path):
    bert = tiny_bert(tmp_path / "bert")
    run = tmp_path / "run"
    options = ("--transformer", bert, "--transformer-pooling", "first_last", "--transformer-layers", "-2,-1")
    done = run_cli(*sample_training(run, *options, epochs=2))
    assert done.returncode == 0, done.stderr.decode()
    assert "transformer" in done.stderr.decode()
    model = json.loads((run / "config.json").read_text())["model"]
    assert model["transformer"] == str(bert) and model["transformer_pooling"] == "first_last"
    assert model["transformer_layers"] == "-2,-1" and len(model["transformer_sha256"]) == 64
    state = torch.load(run / "model.pt", weights_only=True)
    assert not any("transformer" in key for key in state)  # frozen: named, not saved
    out = tmp_path / "tagged.conllu"
    tagged = run_cli("tag", "--model", run, SAMPLE, "-o", out, process=True)
    assert tagged.returncode == 0, tagged.stderr.decode()
    upos = column(out, 3)
    assert len(upos) == sum(map(len, sample_sentences())) and "_" not in upos
    tagger = Tagger.load(run)  # the Python API: the same tags as the command line
    api = [tag for record in tagger.tag(sample_sentences(), processes=1) for tag in record.tags]
    assert api == upos
    exported = tmp_path / "exported"
    assert run_cli("export", run, exported).returncode == 0
    card = (exported / "README.md").read_text(encoding="utf-8")
    assert (
        f"| transformer | `{bert}`: layers -2,-1, first_last" in card and model["transformer_sha256"] in card
    )
    tiny_bert(bert, seed=1)  # other weights under the same name
    refused = run_cli("tag", "--model", run, SAMPLE, "-o", tmp_path / "other.conllu", process=True)
    assert refused.returncode == 2
    assert "not the ones the model was trained with" in refused.stderr.decode()
    assert "Traceback" not in refused.stderr.decode() and not (tmp_path / "other.conllu").exists()


def test_a_fine_tuned_transformer_is_trained_at_its_rate_and_saved_with_the_model(tmp_path):
    bert = tiny_bert(tmp_path / "bert")
    run = tmp_path / "run"
    options = ("--transformer", bert, "--transformer-finetune", "--transformer-lr", "0.01")
    done = run_cli(*sample_training(run, *options, "--optimizer", "adam", "--batch-size", "4", epochs=1))
    assert done.returncode == 0, done.stderr.decode()
    assert "fine-tuned at lr 0.01" in done.stderr.decode()
    state = torch.load(run / "model.pt", weights_only=True)
    key = "embedder.transformer.net.embeddings.word_embeddings.weight"
    from transformers import AutoModel

    before = AutoModel.from_pretrained(bert).embeddings.word_embeddings.weight
    assert key in state and not torch.allclose(state[key], before)
    tagger = Tagger.load(run)  # loads the base weights, checks them, then the tuned ones
    assert len(tagger.tag(sample_sentences()[:2], processes=1)) == 2


def test_quality_estimation_reads_the_source_sentence_through_the_transformer_too(tmp_path):
    bert = tiny_bert(tmp_path / "bert")
    run = tmp_path / "run"
    data = ("--train", QE_SAMPLE, "--dev", QE_SAMPLE, "--epochs", "1", "--output", run)
    done = run_cli("train", "--task", "qe", *data, "--transformer", bert, "--transformer-source")
    assert done.returncode == 0, done.stderr.decode()
    assert "the source words too" in done.stderr.decode()
    tagger = Tagger.load(run)
    assert tagger.model.embedder.transformer_source
    mt, source = ["das", "Haus"], ["the", "house"]
    extras = [{"source": source, "alignment": [(0, 0), (1, 1)]}]
    (record,) = tagger.tag([mt], extras=extras, processes=1)
    assert set(record.tags) <= {"OK", "BAD"} and len(record.tags) == 2
    pos = sample_training(tmp_path / "pos")[1:]
    refused = run_cli("train", "--task", "pos", *pos, "--transformer", bert, "--transformer-source")
    assert refused.returncode == 2 and "for QE's source words" in refused.stderr.decode()


@pytest.mark.realdata
@pytest.mark.slow
def test_the_registry_minilm_trains_a_pos_model_for_an_epoch_and_tags(tmp_path, ewt, monkeypatch):
    """The acceptance check: ``--transformer all-minilm-l6-v2`` on a small CoNLL-U file for one epoch,
    a file tagged with the result, the run folder naming the transformer. Fails under CI when the
    registry package is missing (the dev extra installs it)."""
    extra("all_minilm_l6_v2", "transformers")
    monkeypatch.setenv("EASYFIRST_CACHE", str(tmp_path / "cache"))
    blocks = ewt["train"].read_text(encoding="utf-8").split("\n\n")
    small = tmp_path / "small.conllu"
    small.write_text("\n\n".join(blocks[:120]) + "\n\n", encoding="utf-8")
    dev = tmp_path / "dev.conllu"
    dev.write_text("\n\n".join(blocks[120:160]) + "\n\n", encoding="utf-8")
    run = tmp_path / "run"
    done = run_cli(
        "train", "--task", "pos", "--transformer", "all-minilm-l6-v2", "--train", small, "--dev", dev,
        "--epochs", "1", "--output", run,
        env={"EASYFIRST_CACHE": str(tmp_path / "cache")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    model = json.loads((run / "config.json").read_text())["model"]
    assert model["transformer"] == "all-minilm-l6-v2" and len(model["transformer_sha256"]) == 64
    out = tmp_path / "tagged.conllu"
    tagged = run_cli(
        "tag", "--model", run, dev, "-o", out, process=True, env={"EASYFIRST_CACHE": str(tmp_path / "cache")}
    )
    assert tagged.returncode == 0, tagged.stderr.decode()
    upos, gold = column(out, 3), column(dev, 3)
    assert len(upos) == len(gold)
    assert (
        sum(u == g for u, g in zip(upos, gold, strict=True)) / len(gold) > 0.5
    )  # one epoch on 120 sentences, far above chance
