"""Which trials lost their process, and running them again.

A process that searches a study holds a lock on a file of its own, ``STUDY/.processes/NAME.lock``
(an ``flock``, which the kernel releases when the process ends, however it ends), and writes ``NAME``
into each of its trials (user attribute ``lock``). A later ``easyfirst tune`` on the study closes as
failed every running trial whose lock it can take: its process is gone (SIGKILL, a crash, a reboot),
at once rather than after Optuna's heartbeat grace period. The name holds the start time as well as
the process id, so that a process id used again is never taken for the old process.

What this cannot see, the heartbeat does: the trials of processes on other machines (``--storage``
with a server), closed by Optuna once their heartbeat is older than its grace period. Either way a
closed trial is queued again with its values (user attribute ``retry_of``), so that the study still
ends with the trials asked for.
"""

from __future__ import annotations

import contextlib
import os
import platform
import time
from collections.abc import Iterator
from pathlib import Path

PROCESSES = ".processes"
CLOSED = "process gone"  # the ``interrupted`` attribute of a trial closed here


@contextlib.contextmanager
def searching(folder: Path) -> Iterator[str]:
    """Hold this process's lock file while it searches; yields the name its trials record."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock, the heartbeat alone finds a lost trial
        yield ""
        return
    name = f"{platform.node()}/{os.getpid()}-{time.time_ns()}"
    path = lock_path(folder, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield name
        finally:
            path.unlink(missing_ok=True)
            fcntl.flock(handle, fcntl.LOCK_UN)


def lock_path(folder: Path, name: str) -> Path:
    return folder / PROCESSES / f"{name.partition('/')[2]}.lock"


def gone(folder: Path, name: str) -> bool:
    """Whether the process that recorded ``name`` has ended: it ran on this machine and its lock file
    is gone or can be locked. False for another machine's process (its heartbeat tells)."""
    host, _, _ = name.partition("/")
    if host != platform.node():
        return False
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        return False
    try:
        handle = lock_path(folder, name).open("r")
    except FileNotFoundError:  # removed as its process ended
        return True
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
    lock_path(folder, name).unlink(missing_ok=True)
    return True


def others_searching(folder: Path) -> bool:
    """Whether a process of this machine other than this one holds a lock file of the study."""
    locks = folder / PROCESSES
    mine = f"{os.getpid()}-"
    names = [p.stem for p in locks.glob("*.lock")] if locks.is_dir() else []
    return any(not gone(folder, f"{platform.node()}/{name}") for name in names if not name.startswith(mine))


def close_lost_trials(study, folder: Path, local: bool) -> list[int]:
    """Close as failed every running trial whose process has ended; returns their numbers. ``local``:
    every process of the study runs on this machine (SQLite), so that a running trial that recorded no
    lock (a process killed as it created the trial) is lost too, unless another process is searching.
    Call it under :func:`easyfirst.tuning.study.locked`, before this process starts a trial."""
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    running = [t for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
    unnamed_lost = local and any("lock" not in t.user_attrs for t in running) and not others_searching(folder)
    closed = []
    for trial in running:
        name = trial.user_attrs.get("lock")
        if not (gone(folder, name) if name else unnamed_lost):
            continue
        storage = study._storage
        try:
            storage.set_trial_user_attr(trial._trial_id, "interrupted", CLOSED)
            storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        except UpdateFinishedTrialError:  # closed meanwhile (Optuna's heartbeat, in another process)
            continue
        run = trial.user_attrs.get("run")
        if run:  # a trial is never resumed: it runs again from the start
            (folder / run / "checkpoint.pt").unlink(missing_ok=True)
        closed.append(trial.number)
    return closed


def queue_again(study, trial) -> bool:
    """Queue ``trial`` (failed without an error: interrupted, or its process lost) again with its
    values, unless it is queued already; whether it was. Also Optuna's callback for a trial whose
    heartbeat went stale."""
    if "error" in trial.user_attrs:  # refused or broken: it would fail again
        return False
    if any(t.user_attrs.get("retry_of") == trial.number for t in study.get_trials(deepcopy=False)):
        return False
    study.enqueue_trial(trial.params, user_attrs={"retry_of": trial.number}, skip_if_exists=False)
    return True
