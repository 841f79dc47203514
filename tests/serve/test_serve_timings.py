"""easyfirst/serve/timings.py: the counts of where a request's time goes, off unless asked, summed over
the processes forked after they are made."""

from __future__ import annotations

import os

from easyfirst.serve.timings import DECODE, ENV, STAGES, TAG, Timings


def test_off_unless_the_environment_asks(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert not Timings().on
    monkeypatch.setenv(ENV, "yes")  # only "1" turns it on
    assert not Timings().on


def test_counts_add_up_across_a_fork(monkeypatch):
    monkeypatch.setenv(ENV, "1")
    timings = Timings()
    timings.add(TAG, 300, requests=2)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child, as a forked worker
        try:
            timings.add(TAG, 700, requests=1)
            timings.add(DECODE, 50)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    found = timings.as_json()
    assert found["requests"] == 3
    assert found["ns"] == {name: {"tag": 1000, "decode": 50}.get(name, 0) for name in STAGES}
