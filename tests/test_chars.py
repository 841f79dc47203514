"""Character-level word features (issue #36, item 3): a CNN over each word's characters, max-pooled over
the word (Ma & Hovy 2016), beside the affixes, in the batched path and the one-sentence path alike."""

from __future__ import annotations

import json

import pytest
import torch

from conftest import NER_SAMPLE, SAMPLE, run_cli
from easyfirst.config import Config
from easyfirst.data.batching import collate, encode
from easyfirst.data.conllu import read_conllu
from easyfirst.data.features import CHARS
from easyfirst.model.fast import lean
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.training.loop import build_vocabularies


def char_model(model: str = "nef-f", **settings):
    config = Config.for_task("pos")
    config.model.model = model
    config.model.sketch_steps = 0 if model == "bilstm" else None
    config.model.char_dim, config.model.char_filters = 6, 5
    for key, value in settings.items():
        setattr(config.model, key, value)
    sentences = read_conllu(SAMPLE)
    vocabs = build_vocabularies(config, sentences)
    torch.manual_seed(0)
    return EasyFirstTagger(config.model, config.loss, vocabs).double().eval(), vocabs, sentences


def test_characters_are_a_feature_with_their_own_vocabulary():
    model, vocabs, _ = char_model()
    assert "T" in vocabs.features[CHARS] and "t" in vocabs.features[CHARS]  # the case is kept
    # 64 words + 2 × 50 affixes + 5 filters
    assert model.embedder.output_dim == 64 + 100 + 5
    assert model.embedder.chars.weight.shape == (5, 6, 3)  # filters × character size × window


def test_a_words_character_features_do_not_depend_on_padding_or_neighbours():
    model, vocabs, _ = char_model()
    item = lambda words: encode(vocabs, words)  # noqa: E731
    alone = collate([item(["dog"])], [0])
    padded = collate(
        [item(["dog", "extraordinarily"]), item(["a"])], [0, 1]
    )  # wider characters, padding words

    def chars(batch):
        return model.embedder._characters(model.embedder.features[CHARS], batch.features[CHARS])

    with torch.no_grad():
        assert torch.equal(chars(alone)[0, 0], chars(padded)[0, 0])  # dog
        assert torch.equal(chars(padded)[1, 1], torch.zeros(5, dtype=torch.float64))  # a padding word
        assert not torch.equal(chars(padded)[0, 1], chars(padded)[0, 0])


@pytest.mark.parametrize("model_name", ["nef-f", "bilstm"])
def test_a_model_with_characters_tags_the_same_batched_and_one_sentence_at_a_time(model_name, monkeypatch):
    """One sentence on the CPU takes easyfirst.model.fast.lean after the embedder; a batch takes the
    batched torch path: the same scores in float64."""
    model, vocabs, sentences = char_model(model_name)
    items = [encode(vocabs, s.words) for s in sentences[:6]]
    taken = []
    original = lean.lean_bilstm
    monkeypatch.setattr(lean, "lean_bilstm", lambda *a: taken.append(1) or original(*a))
    import easyfirst.model.encoder as encoder

    monkeypatch.setattr(encoder, "lean_bilstm", lean.lean_bilstm)
    with torch.no_grad():
        batched, _ = model(collate(items, list(range(len(items)))))
        assert not taken
        for b, item in enumerate(items):
            alone, _ = model(collate([item], [0]))
            torch.testing.assert_close(alone[0], batched[b, : len(item)], atol=1e-10, rtol=1e-9)
    assert len(taken) == len(items)  # every sentence alone took the lean path


def test_gradients_reach_the_character_embeddings_and_filters():
    model, vocabs, sentences = char_model()
    model.train()
    batch = collate([encode(vocabs, s.words, s.tags) for s in sentences[:4]], [0, 1, 2, 3])
    scores, attention = model(batch)
    model.loss(scores, batch.tags, batch.mask).backward()
    assert model.embedder.chars.weight.grad.abs().sum() > 0
    assert model.embedder.features[CHARS].weight.grad.abs().sum() > 0


def test_a_model_saved_before_characters_loads_without_them():
    raw = Config.for_task("ner").to_dict()
    for key in ("char_dim", "char_filters", "char_window"):
        del raw["model"][key]
    raw["model"]["pretrained_words"] = 0
    config = Config.from_saved(raw)
    assert config.model.char_dim == 0


@pytest.mark.slow
def test_train_ner_with_characters_and_tag(tmp_path):
    run = run_cli(
        "train", "--task", "ner", "--train", NER_SAMPLE, "--dev", NER_SAMPLE, "--epochs", "1",
        "--char-dim", "8", "--char-filters", "7", "--output", tmp_path / "run",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr.decode()
    assert "character CNN: 8-d characters, 7 filters of 3" in run.stderr.decode()
    model = json.loads((tmp_path / "run" / "config.json").read_text())["model"]
    assert (model["char_dim"], model["char_filters"]) == (8, 7)
    tagged = run_cli("tag", NER_SAMPLE, "-m", tmp_path / "run")
    assert tagged.returncode == 0, tagged.stderr.decode()
    assert len(tagged.stdout.decode().split("\n")) > 100
