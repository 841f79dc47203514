"""Checkpoints (easyfirst/training/checkpoints.py): what save_checkpoint writes, restore_checkpoint puts
back exactly; what load_checkpoint refuses; the clock of checkpoint_minutes; the temporaries a killed run
left, removed."""

from __future__ import annotations

import time

import pytest
import torch
from rich.console import Console

from conftest import SAMPLE
from easyfirst.config import Config
from easyfirst.errors import InputError
from easyfirst.training import distributed
from easyfirst.training.checkpoints import (
    CheckpointClock,
    load_checkpoint,
    remove_run_temporaries,
    restore_checkpoint,
    save_checkpoint,
)
from easyfirst.training.loop import prepare_run
from easyfirst.training.reporting import RunLog


@pytest.fixture
def run(tmp_path):
    config = Config.for_task("pos")
    config.data.train = config.data.dev = str(SAMPLE)
    config.train.epochs = 3
    log = RunLog(Console(quiet=True), tmp_path / "train.log")
    yield prepare_run(config, tmp_path, torch.device("cpu"), log, False, distributed.Group())
    log.close()


def test_a_checkpoint_restores_the_weights_the_progress_and_the_data_order(run, tmp_path):
    weights = {k: v.clone() for k, v in run.model.state_dict().items()}
    order = run.generator.get_state()
    p = run.progress
    p.history, p.best, p.loss_sum, p.seen = [{"epoch": 1}], {"accuracy": 0.5, "epoch": 1}, 3.0, 12
    save_checkpoint(run, 2, 7, order, 4.5)
    with torch.no_grad():
        for value in run.model.parameters():
            value.zero_()
    torch.randperm(10, generator=run.generator)  # the generator moves on
    p.history, p.best, p.loss_sum, p.seen, p.epoch, p.step = [], {}, 0.0, 0, 1, 0
    restore_checkpoint(run, load_checkpoint(tmp_path / "checkpoint.pt", 3))
    assert all(torch.equal(run.model.state_dict()[k], v) for k, v in weights.items())
    assert torch.equal(run.generator.get_state(), order)
    assert (p.epoch, p.step, p.loss_sum, p.seen, p.elapsed) == (2, 7, 3.0, 12, 4.5)
    assert p.history == [{"epoch": 1}] and p.best == {"accuracy": 0.5, "epoch": 1}
    assert "resuming from" in (tmp_path / "train.log").read_text()


def test_a_checkpoint_of_other_processes_or_workers_is_refused(run, tmp_path):
    save_checkpoint(run, 2, 0, run.generator.get_state(), 0.0)
    checkpoint = load_checkpoint(tmp_path / "checkpoint.pt")
    with pytest.raises(InputError, match="trained by 4 process\\(es\\); resume it with as many"):
        restore_checkpoint(run, {**checkpoint, "processes": 4})
    within = {**checkpoint, "step": 5, "worker_steps": [3, 2]}
    with pytest.raises(
        InputError, match="within an epoch of 2 Hogwild worker\\(s\\); resume it with --workers 2"
    ):
        restore_checkpoint(run, within)


def test_load_checkpoint_refuses_what_it_cannot_resume(tmp_path):
    with pytest.raises(InputError, match="no checkpoint to resume from"):
        load_checkpoint(tmp_path / "checkpoint.pt")
    (tmp_path / "checkpoint.pt").write_bytes(b"junk")
    with pytest.raises(InputError, match=r"checkpoint.pt: not a readable checkpoint"):
        load_checkpoint(tmp_path / "checkpoint.pt")
    torch.save({"epoch": 4, "step": 0}, tmp_path / "checkpoint.pt")
    assert load_checkpoint(tmp_path / "checkpoint.pt", 3)["epoch"] == 4  # no metrics.json: scored again
    (tmp_path / "metrics.json").write_text("{}")
    with pytest.raises(InputError, match="has finished its 3 epochs .* --epochs N with N over 3"):
        load_checkpoint(tmp_path / "checkpoint.pt", 3)
    assert load_checkpoint(tmp_path / "checkpoint.pt", 5)["epoch"] == 4  # trained longer


def test_the_clock_is_due_after_its_minutes_and_off_under_torchrun():
    clock = CheckpointClock(1e-6, distributed.Group())
    time.sleep(0.01)
    assert clock.due()
    clock.restart()
    assert CheckpointClock(60, distributed.Group()).due() is False
    assert CheckpointClock(1e-6, distributed.Group(rank=0, size=2)).seconds == 0.0
    assert CheckpointClock(0, distributed.Group()).due() is False


def test_only_the_temporaries_of_run_files_are_removed(tmp_path):
    stale = [tmp_path / ".model.pt.abcd1234.tmp", tmp_path / ".checkpoint.pt.x1y2z3w4.tmp"]
    kept = [tmp_path / ".notes.txt.abcd1234.tmp", tmp_path / "model.pt"]
    for path in stale + kept:
        path.write_text("x")
    remove_run_temporaries(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in kept)
