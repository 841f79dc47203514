"""Training never loses more than minutes (issue #47): a checkpoint every ``checkpoint_minutes`` of
training within an epoch, a run stopped before its first checkpoint trained again in place, and an
interrupt that says what is kept. (Resuming mid-epoch bit for bit: test_robustness.py.)"""

from __future__ import annotations

import json

import pytest
import torch
from rich.console import Console
from verbs import easyfirst

from conftest import SAMPLE, run_cli, sample_training, train_on_sample
from easyfirst.config import Config
from easyfirst.training import distributed
from easyfirst.training.epochs import train_epoch
from easyfirst.training.loop import prepare_run
from easyfirst.training.reporting import RunLog


def one_epoch(folder, minutes: float, workers: int = 1) -> dict | None:
    """The checkpoint that one epoch on the sample leaves with ``checkpoint_minutes`` = ``minutes``."""
    config = Config.for_task("pos")
    config.data.train = config.data.dev = str(SAMPLE)
    config.train.workers, config.train.epochs, config.train.checkpoint_minutes = workers, 1, minutes
    log = RunLog(Console(quiet=True), folder / "train.log")
    run = prepare_run(config, folder, torch.device("cpu"), log, False, distributed.Group())
    try:
        train_epoch(run, 1)
    finally:
        if run.workers is not None:
            run.workers.close()
        log.close()
    path = folder / "checkpoint.pt"
    return torch.load(path, weights_only=True) if path.exists() else None


@pytest.mark.parametrize("workers", [1, 2])
def test_a_checkpoint_is_written_within_the_epoch_once_its_minutes_have_passed(tmp_path, workers):
    (tmp_path / "due").mkdir()
    due = one_epoch(tmp_path / "due", 1e-9, workers)  # due after every update
    assert due is not None and due["epoch"] == 1
    sentences = len(SAMPLE.read_text().strip().split("\n\n"))
    # the last is written after the update before the epoch's last (the epoch's end is the loop's)
    if workers == 1:
        assert due["step"] == sentences - 1
    else:
        assert 0 < due["step"] < sentences and sum(due["worker_steps"]) == due["step"]
    (tmp_path / "off").mkdir()
    assert one_epoch(tmp_path / "off", 0.0, workers) is None  # 0: none within the epoch
    (tmp_path / "default").mkdir()
    assert one_epoch(tmp_path / "default", 5.0, workers) is None  # the sample's epoch is seconds


def test_a_run_stopped_before_its_first_checkpoint_is_trained_again_in_place(tmp_path):
    run = tmp_path / "run"
    done = train_on_sample(run, epochs=1)
    assert done.returncode == 0, done.stderr.decode()
    # as a kill between the first model.pt and the first checkpoint.pt leaves it, with a temporary
    (run / "checkpoint.pt").unlink()
    (run / "metrics.json").unlink()
    left = run / ".checkpoint.pt.k3x_9q0a.tmp"
    left.write_bytes(b"")
    again = train_on_sample(run, epochs=1)
    assert again.returncode == 0, again.stderr.decode()
    assert again.stderr.decode().startswith(
        f"{run}: the run there stopped before its first checkpoint; training it again from the start"
    )
    assert (run / "metrics.json").is_file() and not left.exists()

    (run / "checkpoint.pt").unlink()
    (run / "metrics.json").unlink()
    left.write_bytes(b"")
    resumed = run_cli("train", "--resume", run)
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert resumed.stderr.decode().startswith(
        f"{run}: no checkpoint to resume from, the run stopped before its first one; training it again "
        "from the start, as its config.json says"
    )
    assert json.loads((run / "metrics.json").read_text())["best_epoch"] == 1 and not left.exists()


def test_a_run_with_a_checkpoint_and_no_metrics_is_not_restarted_without_overwrite(tmp_path):
    run = tmp_path / "run"
    done = train_on_sample(run, epochs=1)
    assert done.returncode == 0, done.stderr.decode()
    (run / "metrics.json").unlink()
    code, _, stderr = easyfirst(*sample_training(run, epochs=1))  # a refusal: in this process
    assert code == 2
    assert stderr.strip() == (
        f"{run}: holds an unfinished run: continue it with `easyfirst train --resume {run}`, or pass "
        "--overwrite to start it again"
    )


def test_resume_of_a_run_that_stopped_before_it_began_says_to_run_its_command_again(tmp_path):
    (tmp_path / "train.log").write_text("data train ...\n")
    result = run_cli("train", "--resume", tmp_path)
    assert result.returncode == 2
    assert result.stderr.decode().strip() == (
        f"{tmp_path}: nothing to resume: the run stopped before it began training (no config.json); run the "
        "command that started it again"
    )


def test_checkpoint_minutes_can_change_on_resume(tmp_path):
    run = tmp_path / "run"
    done = run_cli(*sample_training(run, "--checkpoint-minutes", "0", epochs=1))
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads((run / "config.json").read_text())["train"]["checkpoint_minutes"] == 0
    longer = run_cli("train", "--resume", run, "--epochs", "2", "--checkpoint-minutes", "1")
    assert longer.returncode == 0, longer.stderr.decode()
    code, _, stderr = easyfirst("train", "--resume", run, "--lr", "0.5")  # a refusal: in this process
    assert code == 2
    assert stderr.strip().endswith(
        "(only --epochs, --threads, --workers, --checkpoint-minutes and --device can)"
    )
