"""``easyfirst tune`` killed (SIGKILL) at a few moments and run again: the trial its process left
"running" is closed as failed at once and run again, and the study ends with exactly ``--trials``
finished trials; a trial that raises is recorded failed with its reason, and the search goes on."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from test_tune import SPACE, in_process, study_trials, tune_args

from conftest import SAMPLE, dies_with_the_test, end_session, extra, run_cli

optuna = extra("optuna", "tune")

TRIALS = 3


def finished(trials) -> int:
    """Trials that count towards --trials: complete, pruned, or failed with an error."""
    return sum(
        t.state.name in ("COMPLETE", "PRUNED") or (t.state.name == "FAIL" and "error" in t.user_attrs)
        for t in trials
    )


def run_until(folder: Path, args: list[str], ready) -> None:
    """Start ``easyfirst ARGS``, wait until ``ready()`` (at most 4 minutes), and kill it with SIGKILL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "easyfirst", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=dies_with_the_test(),
        start_new_session=True,  # end_session kills whatever it started too
    )
    try:
        deadline = time.monotonic() + 240
        while not ready() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert process.poll() is None, "the search ended before the moment to kill it"
    finally:
        end_session(process)


def epoch_logged(folder: Path, trial: int):
    log = folder / "trials" / f"{trial:04d}" / "train.log"
    return lambda: log.is_file() and "epoch   1" in log.read_text()


def trial_state(folder: Path, number: int) -> str | None:
    """Trial ``number``'s state in study.db, read as it is written (SQLite, read-only)."""
    path = folder / "study.db"
    if not path.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)) as db:
            found = db.execute("SELECT state FROM trials WHERE number = ?", (number,)).fetchone()
    except sqlite3.OperationalError:  # the tables not made yet
        return None
    return found and found[0]


MOMENTS = {
    # the study made, no trial yet started training
    "before trial 0": lambda folder: lambda: (folder / "study.json").is_file(),
    "as trial 0 starts": lambda folder: lambda: (folder / "trials" / "0000").is_dir(),
    "during trial 0": lambda folder: epoch_logged(folder, 0),
    "between trials": lambda folder: lambda: trial_state(folder, 0) == "COMPLETE",
}


@pytest.mark.parametrize("moment", MOMENTS)
def test_a_killed_search_run_again_ends_with_the_trials_asked_for(tmp_path, moment):
    space, folder = tmp_path / "space.toml", tmp_path / "study"
    space.write_text(SPACE)
    args = tune_args(folder, space, "--epochs", 3, "--trials", TRIALS, "--pruner", "none")
    run_until(folder, args, MOMENTS[moment](folder))
    result = run_cli(*args[:2], "--trials", str(TRIALS))  # at once: no waiting for a heartbeat to go stale
    assert result.returncode == 0, result.stderr.decode()
    trials = study_trials(folder)
    states = Counter(t.state.name for t in trials)
    assert states["RUNNING"] == states["WAITING"] == 0, states
    assert finished(trials) == TRIALS, states
    lost = [t for t in trials if t.state.name == "FAIL"]
    assert all(t.user_attrs.get("interrupted") == "process gone" for t in lost)
    retried = {t.user_attrs["retry_of"]: t for t in trials if "retry_of" in t.user_attrs}
    assert sorted(retried) == [t.number for t in lost]  # each lost trial run again, with its values
    assert all(retried[t.number].params == t.params for t in lost)
    assert not list(folder.glob("trials/*/checkpoint.pt"))
    if moment in ("as trial 0 starts", "during trial 0"):
        assert [t.number for t in lost] == [0]
    if lost:
        assert f"closed as failed, their process gone: trial {lost[0].number}" in result.stderr.decode()
    assert f"{len(trials)} trials: {TRIALS} complete" in result.stderr.decode()


def test_a_process_still_searching_keeps_its_trial(tmp_path):
    """A second process on the study, started while the first trains trial 0, leaves that trial to it."""
    space, folder = tmp_path / "space.toml", tmp_path / "study"
    space.write_text(SPACE)
    args = tune_args(folder, space, "--epochs", 30, "--trials", 2, "--pruner", "none")
    first = subprocess.Popen(
        [sys.executable, "-m", "easyfirst", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=dies_with_the_test(),
        start_new_session=True,
    )
    try:
        ready, deadline = epoch_logged(folder, 0), time.monotonic() + 240
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        from easyfirst.tuning import study as studies
        from easyfirst.tuning.liveness import searching

        study = studies.open_study(folder, None, ["maximize"])
        with searching(folder):
            assert studies.retry_interrupted(study, folder, local=True) == ([], [])
        assert [t.state.name for t in study_trials(folder)] == ["RUNNING"]
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        with searching(folder):  # now gone: closed at once and queued again
            assert studies.retry_interrupted(study, folder, local=True) == ([0], [0])
    finally:
        end_session(first)
    assert [t.state.name for t in study_trials(folder)] == ["FAIL", "WAITING"]


def test_a_trial_that_raises_is_failed_with_its_reason_and_the_search_goes_on(tmp_path, monkeypatch):
    from easyfirst.training import loop

    space, folder = tmp_path / "space.toml", tmp_path / "study"
    space.write_text(SPACE)
    train, calls = loop.train, []

    def out_of_memory_once(cfg, output, **kwargs):
        calls.append(output)
        if len(calls) == 2:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB\nsecond line")
        return train(cfg, output, **kwargs)

    monkeypatch.setattr(loop, "train", out_of_memory_once)
    in_process(
        tune_args(folder, space, "--epochs", 1, "--trials", 3, "--pruner", "none", data=(SAMPLE, SAMPLE))
    )
    trials = study_trials(folder)
    assert [t.state.name for t in trials] == ["COMPLETE", "FAIL", "COMPLETE"]
    assert (
        trials[1].user_attrs["error"] == "raised RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    )
    assert "retry_of" not in trials[2].user_attrs  # an error would happen again: not retried
