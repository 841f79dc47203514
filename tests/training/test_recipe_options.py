"""The options of the classic BiLSTM-CRF recipes (issue #44): stacked layers, dropout per place and locked
(variational) dropout, the Adam family and SGD with momentum and a decaying rate, early stopping, and
training NER in BIOES."""

from __future__ import annotations

import json

import pytest
import torch

from conftest import NER_SAMPLE, run_cli
from easyfirst.config import Config
from easyfirst.data.schemes import learned_scheme, to_bio
from easyfirst.data.vocab import Vocabularies
from easyfirst.errors import InputError
from easyfirst.model.dropout import LockedDropout, make_dropout
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.training.optim import make_optimizer, schedule_lr


def test_locked_dropout_drops_the_same_units_at_every_word():
    torch.manual_seed(0)
    drop = LockedDropout(0.5)
    x = torch.ones(3, 7, 40)
    y = drop(x)
    kept = y != 0
    assert torch.equal(kept, kept[:, :1].expand_as(kept))  # one mask per sentence, the same at every word
    assert not torch.equal(kept[0], kept[1])  # ... and its own per sentence
    assert set(y.unique().tolist()) == {0.0, 2.0}  # kept units scaled by 1 / (1 - p)
    drop.eval()
    assert torch.equal(drop(x), x)
    naive = make_dropout("naive", 0.5)(x)
    assert not torch.equal(naive != 0, (naive != 0)[:, :1].expand_as(naive))  # a mask per word


def tiny_model(**model: object) -> EasyFirstTagger:
    vocabs = Vocabularies.build([(["a", "b"], ["B-X", "I-X"])], word_min_freq=1)
    config = Config()
    for key, value in model.items():
        setattr(config.model.holder(key), key, value)
    return EasyFirstTagger(config.model, config.loss, vocabs)


def test_dropout_per_place_and_stacked_layers():
    model = tiny_model(
        encoder_layers=3, dropout=0.2, embedding_dropout=0.5, dropout_kind="locked", hidden_dim=6
    )
    assert model.embedding_dropout.p == 0.5 and model.encoder.between.p == 0.2 and model.dropout.p == 0.2
    assert isinstance(model.dropout, LockedDropout)
    names = set(model.state_dict())
    # the first layer keeps the names of a one-layer model, so models saved before load as they were
    assert "encoder.lstm.weight_ih_l0" in names and "encoder.upper.1.weight_hh_l0_reverse" in names
    assert model.encoder.upper[0].input_size == 12
    one = tiny_model()
    assert not any(name.startswith("encoder.upper") for name in one.state_dict())


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"model": {"encoder_dropout": 0.3}}, "needs encoder_layers >= 2"),
        ({"train": {"optimizer": "adam", "momentum": 0.9}}, "train.momentum is SGD's"),
        ({"data": {"scheme": "bioes"}}, "the pos task learns bio"),
        ({"model": {"dropout_kind": "gaussian"}}, "one of naive, locked"),
        ({"model": {"encoder_layers": 0}}, "an integer >= 1"),
    ],
)
def test_settings_that_do_not_go_together_are_refused(settings, message):
    with pytest.raises(InputError, match=message):
        Config.from_dict(settings)


def test_optimizers_and_the_decaying_rate():
    model = tiny_model()
    kinds = {"nadam": torch.optim.NAdam, "adamw": torch.optim.AdamW, "adam": torch.optim.Adam}
    for name, kind in kinds.items():
        assert isinstance(make_optimizer(name, 0.01, model), kind)
        assert not model.embedder.words.sparse  # their moments move every row: dense gradients
    sgd = make_optimizer("sgd", 0.1, model, momentum=0.9)
    assert sgd.param_groups[0]["momentum"] == 0.9 and not model.embedder.words.sparse
    make_optimizer("sgd", 0.1, model)
    assert model.embedder.words.sparse  # plain SGD leaves untouched rows alone: sparse
    with pytest.raises(ValueError):
        make_optimizer("adam", 0.1, model, momentum=0.9)
    grouped = make_optimizer("sgd", 0.1, model, embedding_lr=0.02)
    schedule_lr(grouped, [0.02, 0.1], 0.05, epoch=5)  # lr / (1 + 0.05 · 4) = lr / 1.2
    assert [g["lr"] for g in grouped.param_groups] == pytest.approx([0.02 / 1.2, 0.1 / 1.2])
    schedule_lr(grouped, [0.02, 0.1], 0.05, epoch=1)
    assert [g["lr"] for g in grouped.param_groups] == pytest.approx([0.02, 0.1])


def test_bioes_predictions_read_out_as_bio():
    tags = ["O", "B-PER", "I-PER", "E-PER", "S-PER", "S-LOC"]
    assert learned_scheme(tags) == "bioes" and learned_scheme(["O", "B-X", "I-X"]) == "bio"
    assert learned_scheme(["NOUN", "VERB"]) == "bio"
    assert to_bio(["S-PER", "B-LOC", "E-LOC", "O"], "bioes") == ["B-PER", "B-LOC", "I-LOC", "O"]


@pytest.mark.slow
def test_a_bioes_ner_model_learns_bioes_and_tags_in_the_inputs_scheme(tmp_path):
    run = tmp_path / "run"
    args = ["train", "--task", "ner", "--train", NER_SAMPLE, "--dev", NER_SAMPLE, "--epochs", "2"]
    args += ["--scheme", "bioes", "--encoder-layers", "2", "--dropout-kind", "locked", "--hidden-dim", "8"]
    args += ["--optimizer", "nadam", "--lr", "0.01", "-o", run]
    done = run_cli(*args)
    assert done.returncode == 0, done.stderr.decode()
    assert "CRF with BIOES constraints" in (run / "train.log").read_text()
    tags = json.loads((run / "vocab.json").read_text())["tags"]["symbols"]
    assert any(t.startswith("E-") for t in tags) and any(t.startswith("S-") for t in tags)
    out = tmp_path / "tagged.conll"
    tagged = run_cli("tag", NER_SAMPLE, "-m", run, "-o", out)
    assert tagged.returncode == 0, tagged.stderr.decode()
    predicted = {line.split()[-1] for line in out.read_text().splitlines() if line and "DOCSTART" not in line}
    assert predicted and not any(t[:2] in ("E-", "S-") for t in predicted)  # the input's BIO


@pytest.mark.slow
def test_patience_stops_a_run_whose_dev_score_does_not_improve(tmp_path):
    run = tmp_path / "run"
    # at a learning rate of 1e-30 the model does not change: no epoch is better than the first
    args = ["train", "--task", "ner", "--train", NER_SAMPLE, "--dev", NER_SAMPLE, "--epochs", "6"]
    done = run_cli(*args, "--optimizer", "sgd", "--lr", "1e-30", "--patience", "2", "-o", run)
    assert done.returncode == 0, done.stderr.decode()
    metrics = json.loads((run / "metrics.json").read_text())
    assert len(metrics["epochs"]) == 3 and metrics["stopped_early"] == 3 and metrics["best_epoch"] == 1
    assert "stopping early after epoch 3 of 6" in (run / "train.log").read_text()
