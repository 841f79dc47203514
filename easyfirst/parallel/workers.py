"""Forked worker processes: K − 1 children of this process (itself worker 0) that inherit what it holds
at the fork (the model, the data), each running one function on every message it is sent. Hogwild
training (easyfirst.training.hogwild) and tagging on every core (easyfirst.tagging.pool) both use them.

Messages and results travel pickled through pipes, tensors by value (not torch's shared-memory
handles), so what a worker sends back is its own copy. A worker runs torch on one thread: the cores
are the workers'.
"""

from __future__ import annotations

import multiprocessing
import pickle
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

from easyfirst.atomic import child_signals, signals_deferred
from easyfirst.errors import WorkerFailed


@contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one thread for the block, as in every worker: the small operations of loading a model
    and of tagging a small call (a sentence's sketch steps) lose more to waking a second thread than
    it gains them, and much more on a busy machine (docs/studies/speed.md, "The start of a command")."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class Workers:
    """``count`` − 1 forked processes (ranks 1 … count − 1) that each run ``work(self, rank, message)`` for
    every :meth:`start`, beside this process (rank 0); :meth:`wait` collects what they return.

    ``board`` ``(count, columns)``, float64 in shared memory, for the workers to report progress on
    (Hogwild: each worker's updates, loss sum and words). ``stop``: set by any worker that fails or by
    this process, for ``work`` to read between its steps and end early.
    """

    def __init__(self, count: int, work: Callable[[Workers, int, Any], Any], columns: int = 0):
        self.count = count
        with torch.inference_mode(False):  # written later, in or out of inference mode
            self.board = torch.zeros(count, columns, dtype=torch.float64).share_memory_()
            self.stop = torch.zeros(1, dtype=torch.int32).share_memory_()
        context = multiprocessing.get_context("fork")  # the workers inherit the model, the data, the run
        self.pipes, self.processes = [], []
        try:
            with signals_deferred():  # an interrupt comes once every forked worker is known, to be ended
                for rank in range(1, count):
                    here, there = context.Pipe()
                    process = context.Process(target=_serve, args=(self, rank, there, work), daemon=True)
                    process.start()
                    there.close()
                    self.pipes.append(here)
                    self.processes.append(process)
        except BaseException:
            self.close()
            raise

    def start(self, messages: list[Any]) -> None:
        """Give worker k (1 … count − 1) ``messages[k]`` to work on (``messages[0]`` is this process's)."""
        self.stop.zero_()
        for rank, (pipe, message) in enumerate(zip(self.pipes, messages[1:], strict=True), 1):
            try:
                pipe.send_bytes(pickle.dumps(message))
            except OSError:  # it has died (a broken pipe)
                raise WorkerFailed(self._exited(rank)) from None

    def wait(self) -> list[Any]:
        """What each worker's ``work`` returned, ranks 1 … count − 1; re-raises the first failure as it
        was raised (FloatingPointError, InputError, ...)."""
        results, failures = [], []
        for rank, pipe in enumerate(self.pipes, 1):
            try:
                kind, value = pickle.loads(pipe.recv_bytes())
            except (EOFError, OSError):  # it died without answering (killed, out of memory)
                kind, value = "error", self._exited(rank)
            if kind == "ok":
                results.append(value)
            else:
                failures.append((kind, value))
        for kind, error in failures:
            if kind == "exception":
                raise error
        if failures:
            raise WorkerFailed(f"a worker process failed: {failures[0][1]}")
        return results

    def _exited(self, rank: int) -> str:
        process = self.processes[rank - 1]
        process.join(timeout=1)
        return f"worker {rank} exited (code {process.exitcode})"

    def close(self) -> None:
        """End the workers (after :meth:`wait`, or on an error or Ctrl-C: after the step each is in),
        whole: an interrupt meanwhile comes after."""
        with signals_deferred():
            self._close()

    def _close(self) -> None:
        self.stop.fill_(1)
        for pipe in self.pipes:
            try:
                pipe.send_bytes(pickle.dumps(None))
            except (BrokenPipeError, OSError):
                pass
        for pipe, process in zip(self.pipes, self.processes, strict=True):
            _drain(pipe)  # answers no one will read, which a worker may be waiting to send
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()
                process.join()


def _drain(pipe, seconds: float = 5.0) -> None:
    """Read and drop what a worker sends until it closes its end (it has exited), for ``seconds`` at
    most."""
    deadline = time.monotonic() + seconds
    try:
        while pipe.poll(max(0.0, deadline - time.monotonic())):
            pipe.recv_bytes()
    except (EOFError, OSError):
        pass


def _serve(workers: Workers, rank: int, pipe, work: Callable[[Workers, int, Any], Any]) -> None:
    """A worker's life: one thread for torch, Ctrl-C left to the main process (which ends the workers),
    then ``work`` for every message until None."""
    child_signals()
    torch.set_num_threads(1)
    while (message := pickle.loads(pipe.recv_bytes())) is not None:
        try:
            outcome = ("ok", work(workers, rank, message))
        except Exception as error:  # noqa: BLE001 (reported to the main process, which raises it)
            outcome = ("exception", error)
            try:
                pickle.dumps(error)
            except Exception:  # noqa: BLE001 (an exception that does not pickle: its last line)
                outcome = ("error", traceback.format_exc(limit=-3).strip().splitlines()[-1])
        pipe.send_bytes(pickle.dumps(outcome))
