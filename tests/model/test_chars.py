"""Character-level word features (issue #36, item 3): a CNN over each word's characters, max-pooled over
the word (Ma & Hovy 2016), or a character BiLSTM (Lample et al. 2016), beside the affixes, in the
batched path and the one-sentence path alike."""

from __future__ import annotations

import json

import pytest
import torch

from conftest import NER_SAMPLE, SAMPLE, run_cli
from easyfirst.backends import compiled
from easyfirst.backends.chooser import plan_for
from easyfirst.backends.compiled import NUMBA
from easyfirst.config import Config
from easyfirst.data.batching import collate, encode
from easyfirst.data.conllu import read_conllu
from easyfirst.data.features import CHARS
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.training.loop import build_vocabularies


def char_model(model: str = "nef-f", **settings):
    config = Config.for_task("pos")
    config.model.model = model
    config.model.decoder.sketch_steps = 0 if model == "bilstm" else None
    config.model.embedder.char_dim, config.model.embedder.char_filters = 6, 5
    for key, value in settings.items():
        setattr(config.model.holder(key), key, value)
    sentences = read_conllu(SAMPLE)
    vocabs = build_vocabularies(config, sentences)
    torch.manual_seed(0)
    return EasyFirstTagger(config.model, config.loss, vocabs).double().eval(), vocabs, sentences


def test_characters_are_a_feature_with_their_own_vocabulary():
    model, vocabs, _ = char_model()
    assert "T" in vocabs.features[CHARS] and "t" in vocabs.features[CHARS]  # the case is kept
    # 64 words + 2 × 50 affixes + 5 filters
    assert model.embedder.output_dim == 64 + 100 + 5
    assert model.embedder.chars.net.weight.shape == (5, 6, 3)  # filters × character size × window


ENCODERS = [{}, {"char_encoder": "bilstm", "char_filters": 6}]


@pytest.mark.parametrize("encoder", ENCODERS, ids=["cnn", "bilstm"])
def test_a_words_character_features_do_not_depend_on_padding_or_neighbours(encoder):
    model, vocabs, _ = char_model(**encoder)
    item = lambda words: encode(vocabs, words)  # noqa: E731
    alone = collate([item(["dog"])], [0])
    padded = collate([item(["dog", "extraordinarily"]), item(["a"])], [0, 1])  # wider, padding words

    def chars(batch):
        ids = batch.features[CHARS]
        flat = ids.reshape(-1, ids.shape[2])
        return model.embedder.chars(model.embedder.features[CHARS](flat), flat).view(*ids.shape[:2], -1)

    with torch.no_grad():
        torch.testing.assert_close(chars(alone)[0, 0], chars(padded)[0, 0], atol=1e-12, rtol=0)  # dog
        assert torch.equal(chars(padded)[1, 1], torch.zeros(model.embedder.chars.size, dtype=torch.float64))
        assert not torch.equal(chars(padded)[0, 1], chars(padded)[0, 0])


@pytest.mark.parametrize("encoder", ENCODERS, ids=["cnn", "bilstm"])
@pytest.mark.parametrize("model_name", ["nef-f", "bilstm"])
def test_a_model_with_characters_tags_the_same_batched_and_one_sentence_at_a_time(
    model_name, encoder, monkeypatch
):
    """Tagged on the CPU, a batch and each sentence alone take the compiled BiLSTM (backend ``numba``)
    after the embedder: the same scores in float64, and those of the reference's nn.LSTM over packed
    sequences."""
    model, vocabs, sentences = char_model(model_name, **encoder)
    items = [encode(vocabs, s.words) for s in sentences[:6]]
    taken = []
    original = compiled._bilstm
    monkeypatch.setattr(compiled, "_bilstm", lambda *a, **k: taken.append(1) or original(*a, **k))
    with torch.no_grad():
        batch = collate(items, list(range(len(items))))
        plan = plan_for(model, batch.mask, training=False)
        assert plan.encoder is NUMBA
        batched, _ = model(batch, plan=plan)
        assert taken
        torch.testing.assert_close(batched, model(batch)[0], atol=1e-10, rtol=1e-9)  # the reference
        taken.clear()
        for b, item in enumerate(items):
            batch = collate([item], [0])
            plan = plan_for(model, batch.mask, training=False)
            assert plan.encoder is NUMBA
            alone, _ = model(batch, plan=plan)
            torch.testing.assert_close(alone[0], batched[b, : len(item)], atol=1e-10, rtol=1e-9)
    assert len(taken) == len(items) * len(model.encoder.layers)  # every sentence alone took it


@pytest.mark.parametrize("encoder", ENCODERS, ids=["cnn", "bilstm"])
def test_gradients_reach_the_character_embeddings_and_encoder(encoder):
    model, vocabs, sentences = char_model(**encoder)
    model.train()
    batch = collate([encode(vocabs, s.words, s.tags) for s in sentences[:4]], [0, 1, 2, 3])
    scores, attention = model(batch)
    model.loss(scores, batch.tags, batch.mask).backward()
    assert all(p.grad.abs().sum() > 0 for p in model.embedder.chars.parameters())
    assert model.embedder.features[CHARS].weight.grad.abs().sum() > 0


def test_a_model_saved_before_characters_loads_without_them():
    raw = Config.for_task("ner").to_dict()
    for key in ("char_dim", "char_encoder", "char_filters", "char_window"):
        del raw["model"][key]
    raw["model"]["pretrained_words"] = 0
    config = Config.from_saved(raw)
    assert config.model.embedder.char_dim == 0


@pytest.mark.slow
def test_train_ner_with_characters_instead_of_affixes_and_tag(tmp_path):
    run = run_cli(
        "train", "--task", "ner", "--train", NER_SAMPLE, "--dev", NER_SAMPLE, "--epochs", "1",
        "--char-dim", "8", "--char-filters", "7", "--affix-dim", "0", "--output", tmp_path / "run",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr.decode()
    assert "characters: 8-d, a CNN of 7 filters of 3" in run.stderr.decode()
    model = json.loads((tmp_path / "run" / "config.json").read_text())["model"]
    assert (model["char_dim"], model["char_filters"], model["affix_dim"]) == (8, 7, 0)
    vocab = json.loads((tmp_path / "run" / "vocab.json").read_text())  # no n-grams kept for nothing
    assert vocab["prefixes"]["symbols"] == vocab["suffixes"]["symbols"] == []
    tagged = run_cli("tag", NER_SAMPLE, "-m", tmp_path / "run")
    assert tagged.returncode == 0, tagged.stderr.decode()
    assert len(tagged.stdout.decode().split("\n")) > 100


def test_a_character_bilstm_needs_an_even_size(tmp_path):
    run = run_cli(
        "train", "--train", SAMPLE, "--dev", SAMPLE, "--char-dim", "8", "--char-encoder", "bilstm",
        "--char-filters", "7", "--output", tmp_path / "run",
    )  # fmt: skip
    assert run.returncode == 2
    assert run.stderr.decode().strip() == (
        "--char-filters: model.char_filters = 7: a character BiLSTM has char_filters / 2 units per "
        "direction, so it must be even"
    )
