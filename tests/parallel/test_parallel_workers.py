"""Forked worker processes (easyfirst/parallel/workers.py): each worker runs the work on its own message in
a process of its own on one torch thread, writes the shared board, sends its result back; a failure is
raised as it was raised, a death as WorkerFailed; close ends them all."""

from __future__ import annotations

import os
import signal

import pytest
import torch

from easyfirst.errors import WorkerFailed
from easyfirst.parallel.workers import Workers, one_thread


def work(workers, rank, message):
    if message == "fail":
        raise ValueError(f"worker {rank} refused")
    if message == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    workers.board[rank, 0] = message * 10
    return rank, message * 2, os.getpid(), torch.get_num_threads()


@pytest.fixture
def workers():
    made = Workers(3, work, columns=1)
    yield made
    made.close()


def test_each_worker_works_on_its_own_message_in_its_own_process(workers):
    workers.start([None, 5, 7])
    results = workers.wait()
    assert [(rank, doubled) for rank, doubled, _, _ in results] == [(1, 10), (2, 14)]
    pids = {pid for _, _, pid, _ in results}
    assert len(pids) == 2 and os.getpid() not in pids
    assert [threads for *_, threads in results] == [1, 1]
    assert workers.board[:, 0].tolist() == [0.0, 50.0, 70.0]  # written there, read here
    workers.start([None, 1, 2])  # the same processes take the next messages
    assert {pid for _, _, pid, _ in workers.wait()} == pids


def test_a_failure_is_raised_as_it_was_raised(workers):
    workers.start([None, 1, "fail"])
    with pytest.raises(ValueError, match="worker 2 refused"):
        workers.wait()


def test_a_worker_that_dies_is_a_worker_failed(workers):
    workers.start([None, "die", 1])
    with pytest.raises(WorkerFailed, match=r"worker 1 exited \(code -9\)"):
        workers.wait()


def test_close_ends_every_worker(workers):
    workers.close()
    assert all(not process.is_alive() for process in workers.processes)
    assert all(process.exitcode is not None for process in workers.processes)
    assert workers.stop.item() == 1


def test_one_thread_for_the_block_then_as_before():
    before = torch.get_num_threads()
    with one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
