"""Hogwild training: K processes update one set of shared parameters and optimizer state without locks.

    easyfirst train --task pos --workers 2

At one sentence per update (the paper's regime, the POS default) an update is a few milliseconds of
tiny operations on one core (easyfirst.model.lean), so a second core helps only by running a second
stream of updates. Following Recht et al. (2011, "Hogwild!") and PyTorch's own Hogwild example, the
model's parameters and the optimizer's state (Adagrad's sums of squared gradients) are moved into
shared memory (:func:`share`), K − 1 worker processes are forked (:class:`Workers`), and every epoch
each of the K processes (this one included, as worker 0) takes every K-th sentence of the epoch's order
and runs its own forward, backward, clipping and optimizer step, writing into the shared tensors in
place, without locks. Their gradients are their own; their updates interleave.

Everything else stays with this process: dev evaluation after each epoch (the workers wait), the best
model, checkpoints and the log. A checkpoint holds the shared state and each worker's position in the
epoch (the ``board``), so ``--resume`` continues with as many workers from where each one was. The
order in which updates land depends on timing, so a run with K > 1 is not repeatable bit for bit;
``--workers 1`` is the single-process path, deterministic for a seed.

Only one sentence per update on the CPU takes workers: batched regimes (``batch_size`` > 1, a GPU) run
one process, whose batched operations already use the cores through torch's threads (and torchrun,
easyfirst.distributed, trains them data-parallel). The default (``workers`` unset) is one worker per
core this process may run on, at most :data:`MAX_WORKERS`, and at most one per
:data:`SENTENCES_PER_WORKER` training sentences (a small set trains in one process, deterministically).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import traceback
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from easyfirst.errors import InputError

MAX_WORKERS = 8  # beyond this, updates to the shared dense weights collide more than they gain
SENTENCES_PER_WORKER = 500  # fewer training sentences per worker: fork fewer workers
STEPS, LOSS, WORDS = range(3)  # the columns of the board: each worker's updates, loss sum, words


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. under ``taskset``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def choose_workers(
    requested: int | None, batch_size: int, device: torch.device, sentences: int, distributed: bool
) -> int:
    """How many processes train: ``requested`` if given (checked against the regime), else the default
    (see module): one per core for one sentence per update on the CPU, 1 for every other regime."""
    hogwild_regime = batch_size == 1 and device.type == "cpu" and not distributed
    if requested is None:
        if not hogwild_regime:
            return 1
        return max(1, min(available_cores(), MAX_WORKERS, sentences // SENTENCES_PER_WORKER))
    if requested > 1 and not hogwild_regime:
        why = (
            "under torchrun"
            if distributed
            else f"on {device.type}"
            if device.type != "cpu"
            else f"with {batch_size} sentences per update"
        )
        raise InputError(
            f"--workers {requested}: Hogwild workers train one sentence per update on the CPU, not {why}; "
            "use --workers 1 (batched updates already use the cores through torch's threads)"
        )
    return requested


def share(model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """Move ``model``'s parameters and ``optimizer``'s state tensors into shared memory, in place (the
    optimizer keeps pointing at them), so that forked workers update the same tensors."""
    model.share_memory()
    for state in optimizer.state.values():
        for value in state.values():
            if torch.is_tensor(value):
                value.share_memory_()


class Workers:
    """``count`` − 1 forked processes (ranks 1 … count − 1) that each run ``work(self, rank, message)`` for
    every :meth:`start`, beside this process (rank 0); :meth:`wait` collects them.

    ``board`` ``(count, 3)``, in shared memory: each worker's updates, loss sum and words so far in the
    epoch (:data:`STEPS`, :data:`LOSS`, :data:`WORDS`), which they write and this process reads for the
    progress bar, the epoch's loss and checkpoints. ``stop``: set by any worker that fails, read by all
    after each update, so that the others end their part early.
    """

    def __init__(self, count: int, work: Callable[[Workers, int, Any], None]):
        self.count = count
        self.board = torch.zeros(count, 3, dtype=torch.float64).share_memory_()
        self.stop = torch.zeros(1, dtype=torch.int32).share_memory_()
        context = multiprocessing.get_context("fork")  # the workers inherit the model, the data, the run
        self.pipes, self.processes = [], []
        for rank in range(1, count):
            here, there = context.Pipe()
            process = context.Process(target=_serve, args=(self, rank, there, work), daemon=True)
            process.start()
            there.close()
            self.pipes.append(here)
            self.processes.append(process)

    def start(self, messages: list[Any]) -> None:
        """Give worker k (1 … count − 1) ``messages[k]`` to work on."""
        self.stop.zero_()
        for pipe, message in zip(self.pipes, messages[1:], strict=True):
            pipe.send(message)

    def wait(self) -> None:
        """Wait for every worker's part; re-raise the first failure (FloatingPointError as it was)."""
        failures = []
        for rank, pipe in enumerate(self.pipes, 1):
            try:
                outcome = pipe.recv()
            except EOFError:
                outcome = ("error", f"worker {rank} exited (code {self.processes[rank - 1].exitcode})")
            if outcome is not None:
                failures.append(outcome)
        for kind, text in failures:
            if kind == "nan":
                raise FloatingPointError(text)
        if failures:
            raise RuntimeError(f"a Hogwild worker failed: {failures[0][1]}")

    def close(self) -> None:
        """End the workers (after an epoch's :meth:`wait`, or on an error or Ctrl-C: after the update
        each is in)."""
        self.stop.fill_(1)
        for pipe in self.pipes:
            try:
                pipe.send(None)
            except (BrokenPipeError, OSError):
                pass
        for process in self.processes:
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()
                process.join()


def _serve(workers: Workers, rank: int, pipe, work: Callable[[Workers, int, Any], None]) -> None:
    """A worker's life: one thread for torch (the cores are the workers'), Ctrl-C left to the main
    process (which ends the workers), then ``work`` for every message until None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(1)
    while (message := pipe.recv()) is not None:
        try:
            work(workers, rank, message)
            outcome = None
        except FloatingPointError as error:
            outcome = ("nan", str(error))
        except Exception:  # noqa: BLE001 (reported to the main process, which raises it)
            outcome = ("error", traceback.format_exc(limit=-3).strip().splitlines()[-1])
        pipe.send(outcome)
