"""No process the project starts outlives its parent (issue #47): the read-ahead, the tagging pool and
Hogwild's workers end when their parent is killed with SIGKILL (easyfirst.atomic.die_with_parent), and
with them the shared memory they held. (The server's workers: test_serve_workers.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from processes import alive, children_of, shared_memory_of

from conftest import ROOT, SAMPLE, sample_training
from easyfirst.parallel.cores import available_cores

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

# a parent with a read-ahead (blocked on a full pipe) and two pool workers (blocked reading theirs)
PARENT = """
import time
from easyfirst.parallel.workers import Workers
from easyfirst.tagging.readahead import ReadAhead

def forever():
    n = 0
    while True:
        n += 1
        yield n

reader = ReadAhead(forever)
workers = Workers(3, lambda workers, rank, message: None, columns=2)
print(reader.pid, *(p.pid for p in workers.processes), flush=True)
time.sleep(600)
"""


def kill_and_check(process: subprocess.Popen, children: set[int]) -> None:
    """SIGKILL ``process``; every one of ``children`` must end within seconds, releasing its memory."""
    assert children and all(alive(pid) for pid in children)
    process.kill()
    process.wait(timeout=30)
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in children if alive(pid)] == []
    assert shared_memory_of(process.pid) == []


def end(process: subprocess.Popen, children: set[int]) -> None:
    """Whatever the test's outcome: the process and the children it started, ended."""
    process.kill()
    process.wait(timeout=30)
    for pid in children:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_read_ahead_and_workers_end_with_their_killed_parent():
    process = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, cwd=ROOT)
    children: set[int] = set()
    try:
        children = {int(pid) for pid in process.stdout.readline().split()}
        assert len(children) == 3
        kill_and_check(process, children)
    finally:
        end(process, children)


def test_a_child_whose_parent_died_before_it_asked_the_kernel_exits():
    # as if forked by a process that is gone (the parent this one sees is not the one that forked it)
    script = "from easyfirst import atomic; atomic._forking[:] = [2**22 + 7]; atomic.die_with_parent(); print('on')"
    orphan = subprocess.run([sys.executable, "-c", script], capture_output=True, cwd=ROOT, timeout=60)
    assert (orphan.returncode, orphan.stdout) == (1, b"")
    script = "from easyfirst import atomic; atomic.die_with_parent(); print('on')"
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, cwd=ROOT, timeout=60)
    assert (child.returncode, child.stdout) == (0, b"on\n")


def wait_for_children(process: subprocess.Popen, count: int, seconds: float = 120) -> set[int]:
    """The children of ``process`` once there are ``count`` of them."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        if len(found := children_of(process.pid)) >= count:
            return found
        time.sleep(0.05)
    raise AssertionError(f"the command did not start {count} processes (exit {process.poll()})")


def test_easyfirst_tag_killed_leaves_no_process(tmp_path):
    inputs = []
    for k in range(3):
        inputs.append(tmp_path / f"in{k}.conllu")
        inputs[-1].write_bytes(SAMPLE.read_bytes() * 200)  # about 40,000 words each: a pool tags them
    command = [sys.executable, "-m", "easyfirst", "tag", *map(str, inputs), "-o", str(tmp_path / "out")]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children: set[int] = set()
    try:
        children = wait_for_children(process, min(2, available_cores()))  # its reader and tagging pool
        kill_and_check(process, children)
    finally:
        end(process, children)


def test_easyfirst_train_with_two_workers_killed_leaves_no_process(tmp_path):
    train = tmp_path / "train.conllu"
    train.write_bytes(SAMPLE.read_bytes() * 20)
    args = sample_training(tmp_path / "run", "--workers", "2", "--threads", "1", epochs=100)
    args[args.index("--train") + 1] = str(train)
    process = subprocess.Popen(
        [sys.executable, "-m", "easyfirst", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    children: set[int] = set()
    try:
        children = wait_for_children(process, 1)  # the second Hogwild worker
        time.sleep(0.5)  # into its epoch
        kill_and_check(process, children)
    finally:
        end(process, children)
