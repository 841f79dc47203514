"""A study of ``easyfirst tune``: its folder, its Optuna storage, and the trials it runs.

``STUDY/study.json`` keeps what the study was started with (the command's settings, the base config they
made, the search space's text, the pruner and the objectives), so that ``easyfirst tune STUDY`` alone
goes on with it; ``STUDY/study.db`` is Optuna's storage (SQLite, or the RDB URL of ``--storage``) that
every process of the study shares; ``STUDY/trials/NNNN/`` is trial NNNN's run folder, a normal one
(``easyfirst evaluate -m``), without its checkpoint. A trial stops when the pruner says so after an
epoch's dev score (:func:`easyfirst.training.loop.train`'s ``on_epoch``); one interrupted (Ctrl-C, a
killed process: easyfirst.tuning.liveness finds it) is marked failed and run again, with the same values,
by the next ``easyfirst tune`` on the study. A trial that raises (a NaN loss, out of memory, values the
training refuses) is marked failed with its reason (user attribute ``error``), and the search goes on.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import platform
import time
import typing
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from easyfirst.atomic import INTERRUPTS
from easyfirst.config import Config
from easyfirst.errors import InputError
from easyfirst.tuning.liveness import close_lost_trials, queue_again
from easyfirst.tuning.space import Space

STUDY_FILE = "study.json"
TRIALS = "trials"
OBJECTIVES = ("score", "sharpness")  # the task's dev score; the attention's sharpness on dev
PRUNERS = ("median", "halving", "none")
HEARTBEAT_SECONDS = 60  # a running trial's process writes a heartbeat this often; 3× without one: failed


def require_optuna():
    """Optuna, imported on first use (the extra ``tune``), or the one line that says how to get it."""
    try:
        import optuna
    except ImportError:
        raise InputError("easyfirst tune needs Optuna: pip install 'easyfirst[tune]'") from None
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # each trial gets our own line instead
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    return optuna


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold ``STUDY/.lock`` (one process at a time sets up the study, so that two started together
    neither write study.json nor create the storage's tables over each other)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock (start the processes one after the other)
        yield
        return
    with (folder / ".lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def make_pruner(name: str):
    """``median``: a trial stops when its best dev score so far is below the median of the earlier
    trials' at the same epoch (from epoch 3, once 5 trials have finished); ``halving``: successive
    halving (Optuna's asynchronous one); ``none``: every trial trains all its epochs."""
    optuna = require_optuna()
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=3)  # epochs 1 and 2 spared
    if name == "halving":
        return optuna.pruners.SuccessiveHalvingPruner()
    return optuna.pruners.NopPruner()


def open_study(folder: Path, storage: str | None, directions: list[str], pruner=None):
    """The study named after ``folder`` in ``storage`` (default: SQLite in ``folder/study.db``), made on
    first use; a process that dies mid-trial leaves a trial that the next process marks failed."""
    optuna = require_optuna()
    url = storage or f"sqlite:///{(folder / 'study.db').resolve()}"
    engine = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}  # wait for a writer
    # a trial closed by the heartbeat (another machine's process gone) is queued again; the argument's
    # name from Optuna 4.9 (failed_trial_callback before, deprecated since)
    stale = "heartbeat_stale_trial_callback"
    if stale not in inspect.signature(optuna.storages.RDBStorage).parameters:
        stale = "failed_trial_callback"
    try:
        rdb = optuna.storages.RDBStorage(
            url,
            engine_kwargs=engine,
            heartbeat_interval=HEARTBEAT_SECONDS,
            grace_period=3 * HEARTBEAT_SECONDS,
            **{stale: queue_again},
        )
    except Exception as error:  # noqa: BLE001 (SQLAlchemy's errors: a bad URL, no driver, no server)
        # SQLAlchemy's message goes on with the SQL it ran and a link: its first line says what failed
        said = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
        where = f"--storage: cannot open {url}" if storage else f"{folder / 'study.db'}: cannot write"
        raise InputError(f"{where}: {said}") from None
    return optuna.create_study(
        storage=rdb,
        study_name=folder.resolve().name,
        directions=directions,
        load_if_exists=True,
        pruner=pruner,
    )


def retry_interrupted(study, folder: Path, local: bool) -> tuple[list[int], list[int]]:
    """Close the running trials whose process has ended (easyfirst.tuning.liveness), then queue again,
    with the same values, every failed trial that was interrupted rather than refused or broken (an
    error, kept in its ``error`` attribute, would fail again) and not queued yet; returns the numbers
    of the trials closed and of those queued. ``local``: the storage is SQLite (every process of the
    study on this machine). Call it under :func:`locked`, in :func:`easyfirst.tuning.liveness.searching`,
    so that two processes do not both queue one."""
    from optuna.storages import fail_stale_trials
    from optuna.trial import TrialState

    closed = close_lost_trials(study, folder, local)
    fail_stale_trials(study)  # another machine's lost trial, once its heartbeat is 3 × 60 s old
    failed = study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
    return closed, [t.number for t in failed if queue_again(study, t)]


def counted(study) -> int:
    """Trials that count towards ``--trials``: finished (complete, pruned, or failed with an error) and
    running (in this process or another); an interrupted one does not, it is run again."""
    from optuna.trial import TrialState

    done = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
    return sum(
        t.state in done or (t.state == TrialState.FAIL and "error" in t.user_attrs)
        for t in study.get_trials(deepcopy=False)
    )


def split_paths(cfg: Config) -> dict[str, str | None]:
    """The data files of the config: those given, or with none given the task's data set's (as
    easyfirst.training.loop.load_splits finds them), so that a trial can be given train and dev alone."""
    from easyfirst.data.datasets import DATASETS, resolve_split
    from easyfirst.tasks import get_task

    d = cfg.data
    if d.train is None and d.dev is None and d.test is None:
        dataset = DATASETS[get_task(d.task).dataset]
        found = {
            s: str(resolve_split(dataset.name, s)) for s in ("train", "dev", "test") if s in dataset.splits
        }
        return {s: found.get(s) for s in ("train", "dev", "test")}
    if d.train is None or d.dev is None:
        raise InputError("give both --train and --dev (the dev set is what a study maximises), or neither")
    return {"train": d.train, "dev": d.dev, "test": d.test}


class TrialRefused(Exception):
    """A trial that cannot run or diverged: marked failed (its ``error`` attribute says why), and the
    study goes on."""


@dataclass
class Search:
    """What a study's trials share: the study, its folder, the base config and the space, the device
    and where the trials' lines go."""

    study: Any
    folder: Path
    base: Config
    space: Space
    paths: dict[str, str | None]  # the data files (split_paths)
    device: str
    objectives: list[str]
    console: Console
    label: str  # the dev score's name in the lines: "F1", "accuracy"
    lock: str = ""  # this process's lock (easyfirst.tuning.liveness.searching), recorded by each trial

    def run(self, trials: int, timeout: float | None) -> None:
        """Run trials until the study counts ``trials`` (:func:`counted`, all processes together) or
        ``timeout`` seconds have passed (a trial running then finishes)."""

        def stop(study, _trial) -> None:
            if counted(study) >= trials:
                study.stop()

        with INTERRUPTS.held():  # Optuna's bookkeeping is not cut: a trial's training is (objective)
            self.study.optimize(
                self.objective, timeout=timeout, callbacks=[stop], catch=(TrialRefused,), gc_after_trial=True
            )

    def trial_config(self, trial) -> Config:
        """The base config with the trial's values, resolved (easyfirst.config.Config.resolved); the test
        set left out."""
        cfg = self.base.thawed()
        self.space.apply(cfg, self.space.suggest(trial), f"trial {trial.number}")
        cfg.data.train, cfg.data.dev = self.paths["train"], self.paths["dev"]
        cfg.data.test = None  # never read while searching
        try:
            return cfg.resolved(f"trial {trial.number}")
        except InputError as error:  # values that do not go together: this trial only
            self.refuse(trial, f"its values do not go together: {error}")

    def objective(self, trial) -> float | tuple[float, float]:
        """Train the trial; one that raises (a NaN loss, out of memory, values the training refuses) is
        refused with its reason and the search goes on, but not one whose data or vectors cannot be
        read (an InputError: every trial would fail) nor an interrupted one."""
        trial.set_user_attr("lock", self.lock)  # first: its process known (liveness)
        trial.set_user_attr("process", f"{platform.node()}:{os.getpid()}")
        trial.set_user_attr("run", f"{TRIALS}/{trial.number:04d}")
        try:
            return self.train_trial(trial)
        except (TrialRefused, InputError, require_optuna().TrialPruned):
            raise
        except Exception as error:  # noqa: BLE001 (this trial's failure, said in one line)
            first = (str(error).strip().splitlines() or [""])[0]
            reason = f"{type(error).__name__}: {first[:300]}" if first else type(error).__name__
            self.refuse(trial, f"raised {reason}")

    def train_trial(self, trial) -> float | tuple[float, float]:
        from easyfirst.training.loop import train

        cfg = self.trial_config(trial)
        output = self.folder / TRIALS / f"{trial.number:04d}"
        self.say(trial, "started")
        pruned = []

        def on_epoch(epoch: int, score: float) -> bool:
            if len(self.objectives) > 1:  # Optuna prunes single-objective studies only
                return False
            with INTERRUPTS.held():  # the storage's write whole, then the interrupt
                trial.report(score, epoch)
                if trial.should_prune():
                    pruned.append(epoch)
            return bool(pruned)

        started = time.perf_counter()
        try:
            with INTERRUPTS.raised():
                metrics = train(
                    cfg, output, device=self.device, console=Console(quiet=True), on_epoch=on_epoch
                )
        except KeyboardInterrupt:
            self.console.print(
                f"trial {trial.number} interrupted: the next easyfirst tune on the study runs it again"
            )
            trial.set_user_attr("interrupted", True)
            raise
        except FloatingPointError as error:  # diverged (a learning rate too high)
            self.refuse(trial, f"training stopped: {error}")
        except InputError as error:  # the data or the vectors: every trial would fail, the study stops
            trial.set_user_attr("error", str(error))
            raise
        finally:
            (output / "checkpoint.pt").unlink(missing_ok=True)  # a trial is never resumed: run again
        score = metrics["dev"][metrics["best_metric"]]
        trial.set_user_attr("dev", score)
        trial.set_user_attr("best_epoch", metrics["best_epoch"])
        trial.set_user_attr("epochs", len(metrics["epochs"]))
        trial.set_user_attr("seconds", time.perf_counter() - started)
        values = (score,)
        if "sharpness" in self.objectives:
            values += (sharpness(output, cfg),)
            trial.set_user_attr("sharpness", values[-1])
        if pruned:
            self.say(trial, f"pruned after epoch {pruned[0]}", score)
            raise require_optuna().TrialPruned()
        self.say(trial, "finished", score, values[1:])
        return values[0] if len(values) == 1 else values

    def refuse(self, trial, reason: str) -> typing.NoReturn:
        trial.set_user_attr("error", reason)
        self.say(trial, f"failed: {reason}")
        raise TrialRefused(reason)

    def say(self, trial, what: str, score: float | None = None, others: tuple = ()) -> None:
        """One line per trial event: ``trial 3 started: model.hidden_dim 120, train.lr 0.0123``, then
        ``trial 3 finished: dev F1 91.20 at epoch 4 of 4 (35 s)``."""
        if what == "started":
            shown = ", ".join(f"{name} {show(value)}" for name, value in trial.params.items())
            retry = trial.user_attrs.get("retry_of")
            again = f" (trial {retry} again)" if retry is not None else ""
            self.console.print(f"trial {trial.number}{again} started: {escape(shown)}", highlight=False)
            return
        line = f"trial {trial.number} {escape(what)}"
        if score is not None:
            attrs = trial.user_attrs
            line += (
                f": dev {self.label} {100 * score:.2f} at epoch {attrs['best_epoch']} of {attrs['epochs']} "
                f"({attrs['seconds']:.0f} s)"
            )
            line += "".join(f", sharpness {value:.3f}" for value in others)
        self.console.print(line, highlight=False)


def show(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def sharpness(folder: Path, cfg: Config) -> float:
    """The attention's sharpness on dev of the run in ``folder`` (easyfirst.viz.analysis: the largest α of
    a step averaged over the first half of the steps); 0 for a model without sketch steps."""
    from easyfirst.api import Tagger
    from easyfirst.parallel.cores import tagging_processes
    from easyfirst.tasks import get_task
    from easyfirst.viz.analysis import analyze

    tagger = Tagger.load(folder)
    tagger.processes = tagging_processes()  # dev on every core, as easyfirst analyze tags it
    if tagger.model.decoder is None:
        return 0.0
    sentences = get_task(cfg.data.task).read(cfg.data.dev, cfg.data)
    extras = [s.extra for s in sentences] if any(s.extra for s in sentences) else None
    stats = analyze(tagger, [s.words for s in sentences], batch_size=cfg.train.eval_batch_size, extras=extras)
    value = stats["sharpness"]["max_weight_first_half"]
    return value if math.isfinite(value) else 0.0
