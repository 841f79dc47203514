"""Where a request's time goes in `easyfirst serve`, counted when ``EASYFIRST_SERVE_TIMINGS=1`` is set
(off by default: each count costs a clock read and a lock); ``GET /health`` then has ``"timings"``.

Per request, over every worker process (the counts are in shared memory, made before the fork):

- ``http``: reading HTTP (the protocol's parsing of what arrives, and uvicorn's setting up of the
  request), CPU time of the event loop's thread;
- ``decode``: the body read from the ASGI messages, JSON decoded and checked (easyfirst.serve.requests);
- ``queue``: waiting for the tagging thread (the gather window included): wall time, not CPU;
- ``tag``: the tagging thread's CPU time for the group, shared among its requests;
- ``encode``: the answer built and encoded as JSON;
- ``write``: the answer handed to uvicorn (its status line and headers, and the socket's write).

What the worker spends besides (the event loop itself, tasks, the ASGI calls in between) is its CPU
time, read from /proc, less these (benchmarks/speed/serve_load.py does the sum).
"""

from __future__ import annotations

import multiprocessing
import os
import time

ENV = "EASYFIRST_SERVE_TIMINGS"
STAGES = ("http", "decode", "queue", "tag", "encode", "write")
HTTP, DECODE, QUEUE, TAG, ENCODE, WRITE = range(len(STAGES))
cpu_ns = time.thread_time_ns
wall_ns = time.perf_counter_ns


class Timings:
    """Nanoseconds per stage and the requests answered, summed over the processes forked after it."""

    def __init__(self) -> None:
        self.on = os.environ.get(ENV) == "1"
        # the stages' nanoseconds, then the requests counted
        self.sums = multiprocessing.get_context("fork").Array("q", len(STAGES) + 1) if self.on else None

    def add(self, stage: int, ns: int, requests: int = 0) -> None:
        with self.sums.get_lock():
            self.sums[stage] += ns
            self.sums[-1] += requests

    def as_json(self) -> dict:
        """``{"requests": n, "ns": {stage: nanoseconds}}``, the sums so far."""
        return {"requests": self.sums[-1], "ns": {name: self.sums[k] for k, name in enumerate(STAGES)}}


TIMINGS = Timings()  # read once, when the serving modules are imported (before any fork)
