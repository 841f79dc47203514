"""The best epoch on dev (easyfirst/training/selection.py) and the run's state (easyfirst/training/state.py),
on a run prepared on the sample (train = dev = test) without training: the dev score logged is the
count of words the saved model tags right, the best epoch kept, patience, metrics.json."""

from __future__ import annotations

import json

import pytest
import torch
from rich.console import Console

from conftest import SAMPLE
from easyfirst.api import Tagger
from easyfirst.config import Config
from easyfirst.training import distributed
from easyfirst.training.loop import prepare_run
from easyfirst.training.reporting import RunLog
from easyfirst.training.selection import evaluate_and_select, finish, stop_early
from easyfirst.training.state import Run, RunProgress, Splits


@pytest.fixture
def run(tmp_path):
    config = Config.for_task("pos")
    config.data.train = config.data.dev = config.data.test = str(SAMPLE)
    config.train.epochs, config.train.patience = 5, 2
    log = RunLog(Console(quiet=True), tmp_path / "train.log")
    made = prepare_run(config, tmp_path, torch.device("cpu"), log, False, distributed.Group())
    yield made
    log.close()


def test_a_prepared_run_starts_at_the_first_epoch_with_its_splits(run):
    assert isinstance(run, Run) and isinstance(run.splits, Splits)
    assert run.progress == RunProgress(best={"accuracy": -1.0, "epoch": 0})
    assert run.splits.paths["dev"] == str(SAMPLE) and len(run.splits.dev) == len(run.dev_items)
    assert (run.metric, run.metric_label) == ("accuracy", "acc")


def right_on_dev(folder) -> float:
    """The fraction of the sample's words that the model saved in ``folder`` tags right, counted here."""
    from easyfirst.data.conllu import read_conllu

    sentences = read_conllu(SAMPLE)
    predicted = [t.tags for t in Tagger.load(folder).tag([s.words for s in sentences])]
    pairs = [
        (g, p) for s, t in zip(sentences, predicted, strict=True) for g, p in zip(s.tags, t, strict=True)
    ]
    return sum(g == p for g, p in pairs) / len(pairs)


def test_the_first_epoch_is_the_best_so_far_and_its_model_saved(run, tmp_path):
    run.progress.loss_sum, run.progress.seen = 5.0, 10
    evaluate_and_select(run, 1, 2.0)
    row = run.progress.history[0]
    assert row["epoch"] == 1 and row["loss"] == 0.5 and row["seconds"] == 2.0
    assert row["dev_accuracy"] == pytest.approx(right_on_dev(tmp_path))
    assert run.progress.best == {"accuracy": row["dev_accuracy"], "epoch": 1}
    assert (run.progress.step, run.progress.loss_sum, run.progress.seen) == (0, 0.0, 0)
    checkpoint = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert (checkpoint["epoch"], checkpoint["step"]) == (2, 0)
    assert "best" in (tmp_path / "train.log").read_text().splitlines()[-1]


def test_an_epoch_no_better_keeps_the_best_and_patience_stops_the_run(run, tmp_path):
    for epoch in (1, 2):
        run.progress.loss_sum, run.progress.seen = 1.0, 1
        evaluate_and_select(run, epoch, 1.0)  # the same model: the same score, not better
    assert run.progress.best["epoch"] == 1
    assert not (tmp_path / "train.log").read_text().splitlines()[-1].endswith("best")
    assert not stop_early(run, 2)  # one epoch without a better score; patience 2
    assert stop_early(run, 3) and run.progress.stopped_early == 3
    assert (
        "stopping early after epoch 3 of 5: no better dev acc for 2 epochs (the best: epoch 1)"
        in (tmp_path / "train.log").read_text()
    )
    run.config = run.config.replaced("train", patience=0)  # the run's config is read-only
    assert not stop_early(run, 4)


def test_finish_scores_the_best_model_on_dev_and_test(run, tmp_path):
    run.progress.loss_sum, run.progress.seen = 1.0, 1
    evaluate_and_select(run, 1, 1.0)
    metrics = finish(run, 0.0)
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["best_epoch"] == 1 and len(saved["epochs"]) == 1
    assert saved["dev"]["accuracy"] == pytest.approx(right_on_dev(tmp_path))
    assert saved["test"]["accuracy"] == saved["dev"]["accuracy"]  # the same file
    assert "per_tag" not in saved["dev"] and metrics["best_metric"] == "accuracy"
