"""Annealing the attention temperature over the epochs (easyfirst.training.anneal, issue #26): the schedule's
values, the temperature a saved model tags with, and --resume continuing the schedule."""

from __future__ import annotations

import json

import pytest
import torch

from conftest import SAMPLE, run_cli, train_on_sample
from easyfirst.config import Config, TrainConfig
from easyfirst.data.batching import collate, encode
from easyfirst.data.conllu import read_conllu
from easyfirst.data.vocab import Vocabularies
from easyfirst.errors import InputError
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.runs import load_model, save_model
from easyfirst.training import anneal

TIMING = ("seconds", "eval_seconds", "tokens_per_second", "seconds_per_epoch", "eval_seconds_per_epoch")


@pytest.mark.parametrize(
    ("epochs", "expected"),
    [
        # hand-worked: the ratio 0.25 spread evenly in log over E − 1 epochs, then held
        (3, [1.0, 0.5, 0.25, 0.25, 0.25]),
        (5, [1.0, 0.5**0.5, 0.5, 0.5**1.5, 0.25, 0.25]),
        (1, [0.25, 0.25, 0.25]),
    ],
)
def test_the_schedule_goes_geometrically_from_the_start_to_the_end_and_stays(epochs, expected):
    t = TrainConfig(anneal_epochs=epochs, anneal_from=1.0, anneal_to=0.25)
    values = [anneal.temperature(t, epoch) for epoch in range(1, len(expected) + 1)]
    assert values == pytest.approx(expected, rel=1e-12)


def test_a_rising_schedule_and_a_flat_one():
    assert [
        anneal.temperature(TrainConfig(anneal_epochs=3, anneal_from=0.5, anneal_to=2.0), e) for e in (1, 2, 3)
    ] == (pytest.approx([0.5, 1.0, 2.0]))
    assert anneal.temperature(TrainConfig(anneal_epochs=4, anneal_from=0.5, anneal_to=0.5), 3) == 0.5


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("train.anneal_epochs=-1", "anneal_epochs must be an integer >= 0"),
        ("train.anneal_from=0", "anneal_from must be a finite number > 0"),
        ("train.anneal_to=-0.5", "anneal_to must be a finite number > 0"),
        ("train.anneal_to=inf", "anneal_to must be a finite number > 0"),
    ],
)
def test_out_of_range_schedules_are_refused(assignment, message):
    config = Config.for_task("pos")
    config.set_dotted(assignment)
    with pytest.raises(InputError, match=message):
        config.validate()


def test_annealing_needs_learned_attention_scores(tmp_path):
    result = train_on_sample(tmp_path / "run", "--anneal-epochs", "3", "--attention", "left-to-right")
    assert result.returncode == 2, result.stderr.decode()
    assert b"anneal_epochs anneals learned attention scores" in result.stderr
    assert b"Traceback" not in result.stderr and not (tmp_path / "run" / "model.pt").exists()


def test_the_saved_model_tags_with_the_temperature_of_its_epoch(tmp_path):
    """start_epoch puts epoch 2's temperature in the model, and epoch_config in the config that
    save_model writes, the run's own left as it was resolved: the reloaded model scores a batch exactly
    as the model did in that epoch, not at the schedule's end."""
    config = Config.for_task("pos")
    config.train.anneal_epochs, config.train.anneal_to = 3, 0.25
    config = config.resolved()
    sentences = read_conllu(SAMPLE)[:6]
    vocabs = Vocabularies.build((s.words, s.tags) for s in sentences)
    torch.manual_seed(0)
    model = EasyFirstTagger(config.model, config.loss, vocabs)
    with torch.no_grad():  # a larger v, so that the temperature changes the attention visibly
        model.decoder.v.weight.mul_(20)
    model.eval()
    assert anneal.start_epoch(config, model, 2) == pytest.approx(0.5)
    save_model(tmp_path, model, anneal.epoch_config(config, model), vocabs)
    # the pos default: the run's config is not written
    assert config.model.decoder.attention_temperature == 0.35
    batch = collate([encode(vocabs, s.words) for s in sentences], list(range(len(sentences))))
    with torch.no_grad():
        expected = model(batch)[0]
        loaded, saved, _ = load_model(tmp_path)
        got = loaded(batch)[0]
    assert saved.model.decoder.attention_temperature == pytest.approx(0.5)
    assert torch.allclose(got, expected, atol=1e-6)
    model.decoder.temperature = 0.25  # the end of the schedule scores differently: the check can fail
    with torch.no_grad():
        assert not torch.allclose(model(batch)[0], expected, atol=1e-4)


def comparable(metrics: dict) -> dict:
    metrics = {k: v for k, v in metrics.items() if k not in (*TIMING, "data")}
    metrics["epochs"] = [{k: v for k, v in row.items() if k not in TIMING} for row in metrics["epochs"]]
    return metrics


def test_an_annealed_run_logs_its_schedule_saves_its_best_epochs_temperature_and_resumes_it(tmp_path):
    flags = ("--anneal-epochs", "3", "--anneal-from", "1", "--anneal-to", "0.25", "--batch-size", "4")
    straight = train_on_sample(tmp_path / "straight", *flags, epochs=4)
    assert straight.returncode == 0, straight.stderr.decode()
    metrics = json.loads((tmp_path / "straight" / "metrics.json").read_text())
    assert [row["attention_temperature"] for row in metrics["epochs"]] == pytest.approx(
        [1.0, 0.5, 0.25, 0.25]
    )
    best = metrics["epochs"][metrics["best_epoch"] - 1]
    saved = json.loads((tmp_path / "straight" / "config.json").read_text())
    assert saved["model"]["attention_temperature"] == pytest.approx(best["attention_temperature"])
    assert metrics["dev"]["accuracy"] == pytest.approx(best["dev_accuracy"])  # the saved model, rescored
    log = (tmp_path / "straight" / "train.log").read_text()
    assert "annealed from 1 (epoch 1) to 0.25 (epoch 3 on)" in log and "T 0.5" in log

    # two epochs, then --resume to four: epochs 3 and 4 must train at 0.25, whatever config.json holds
    first = train_on_sample(tmp_path / "resumed", *flags, epochs=2)
    assert first.returncode == 0, first.stderr.decode()
    resumed = run_cli("train", "--resume", str(tmp_path / "resumed"), "--epochs", "4")
    assert resumed.returncode == 0, resumed.stderr.decode()
    again = json.loads((tmp_path / "resumed" / "metrics.json").read_text())
    assert comparable(again) == comparable(metrics)


def test_a_prescribed_attention_trains_with_the_tasks_defaults_but_not_with_a_temperature_given():
    """POS's default temperature (0.35) gives way to an attention without scores; one given does not."""
    config = Config.for_task("pos")
    config.update({"model": {"attention": "left-to-right"}}, "--attention")
    assert config.resolved().model.decoder.attention_temperature == 1.0
    config = Config.for_task("pos")
    config.update({"model": {"attention": "left-to-right", "attention_temperature": 0.5}}, "--set")
    with pytest.raises(InputError, match="has none"):
        config.resolved()
