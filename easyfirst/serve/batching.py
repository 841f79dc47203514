"""Dynamic batching: requests that arrive together are tagged together, off the event loop.

One worker thread owns the model. Requests wait in a queue; the worker takes the first, gathers what
else arrives within a short window (or is already waiting, up to ``max_sentences``), tags all their
sentences in one call of :meth:`easyfirst.api.Tagger.tag` and hands each request its own sentences
back. A model server does the same: one sentence per request would otherwise pay a whole forward pass
each.

A gathered group is tagged as ``easyfirst tag`` tags a file: sorted by length, in batches of at most
:data:`GROUP_TOKENS` padded words (its cap, 1,024), one batch for the groups that a server of
one-sentence requests gathers. Where Numba is installed the app loads backend numba's compiled tagging
loops at its start (easyfirst.serve.create_app), and the batch runs there: each sentence its own sketch
steps over its own words, the sentences still running packed into one product a step, no torch
operation per step. Elsewhere (the GPU, bfloat16) the reference runs the batch's steps.

The worker is a thread, so its calls fork no tagging pool (easyfirst.tagging.pool forks from the main
thread only, and only when asked): a server's cores are its processes (``--workers``,
easyfirst.serve.processes), each tagging on its own.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import queue
import threading
import time
from dataclasses import dataclass

from easyfirst.data.buckets import INFERENCE_MAX_TOKENS
from easyfirst.serve.admission import Gate
from easyfirst.serve.requests import BATCH_WINDOW_MS, Job
from easyfirst.serve.timings import QUEUE, TAG, TIMINGS, cpu_ns, wall_ns
from easyfirst.tagging.tagged import Tagged

# Padded words per batch of a gathered group, easyfirst tag's cap. benchmarks/speed/serve_groups.py --cpu
# (docs/studies/serve-load.md, issue #46) with numba's loops: one batch 18,508 tokens per CPU second for groups of 13
# (2.26x one batch through the batched torch loop since removed, 2.9x one sentence at a time, 1.13x
# sub-batches of <= 256 padded words); through that torch loop alone, one batch was also the fastest
# (1.19x sub-batches of <= 256).
GROUP_TOKENS = INFERENCE_MAX_TOKENS


@dataclass
class Waiting:
    job: Job
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    queued: int = 0  # when it was queued (time.perf_counter_ns), with EASYFIRST_SERVE_TIMINGS
    expires: float = math.inf  # its deadline (time.monotonic): answered 504 if not tagged by then


class Batcher:
    """``await batcher.tag(job)`` → one :class:`Tagged` per sentence of the job."""

    def __init__(
        self,
        tagger,
        *,
        window: float = BATCH_WINDOW_MS / 1000,
        max_sentences: int = 256,
        gate: Gate | None = None,
    ):
        self.tagger, self.window, self.max_sentences = tagger, window, max_sentences
        self.gate = gate or Gate()  # answers a request past its deadline
        self.queue: queue.Queue[Waiting | None] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="easyfirst-tagger", daemon=True)
        # requests answered and forward passes made so far, in shared memory: with --workers, the
        # counts of every worker process (easyfirst.serve.processes forks after this)
        self.counts = multiprocessing.get_context("fork").Array("q", 2)

    @property
    def requests(self) -> int:
        return self.counts[0]

    @property
    def batches(self) -> int:
        return self.counts[1]

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        """Finish what is queued, then end the worker."""
        self.queue.put(None)
        self.thread.join()

    async def tag(self, job: Job, expires: float = math.inf) -> list[Tagged]:
        """``expires``: the request's deadline (time.monotonic); not tagged by then, it fails with a
        504 (:meth:`easyfirst.serve.admission.Gate.expired`)."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self.queue.put(Waiting(job, loop, future, wall_ns() if TIMINGS.on else 0, expires))
        return await future

    def _gather(self, first: Waiting) -> tuple[list[Waiting], bool]:
        """The requests tagged with ``first``, and whether the worker was asked to stop meanwhile."""
        items, count = [first], len(first.job.sentences)
        deadline = time.monotonic() + self.window
        while count < self.max_sentences:
            try:
                item = self.queue.get(timeout=max(deadline - time.monotonic(), 1e-4))
            except queue.Empty:
                break
            if item is None:
                return items, True
            items.append(item)
            count += len(item.job.sentences)
        return items, False

    def _run(self) -> None:
        stopping = False
        while not stopping:
            first = self.queue.get()
            if first is None:
                break
            items, stopping = self._gather(first)
            items = [item for item in items if not item.future.done()]  # not those whose client left
            items = self._in_time(items)
            if not items:  # (or whose request a stop cut off after --graceful-timeout)
                continue
            if TIMINGS.on:
                now = wall_ns()
                TIMINGS.add(QUEUE, sum(now - item.queued for item in items))
                start = cpu_ns()
            try:
                results = self._tag([item.job for item in items])
            except Exception as error:  # the requests fail; the worker goes on serving
                _hand_back(items, [None] * len(items), error)
                continue
            if TIMINGS.on:
                TIMINGS.add(TAG, cpu_ns() - start)
            with self.counts.get_lock():
                self.counts[0] += len(items)
                self.counts[1] += 1
            _hand_back(items, results, None)

    def _in_time(self, items: list[Waiting]) -> list[Waiting]:
        """The requests still within their deadline; the others are answered 504, untagged."""
        now = time.monotonic()
        late = [item for item in items if item.expires < now]
        if late:
            _hand_back(late, [None] * len(late), self.gate.expired(len(late)))
            items = [item for item in items if item.expires >= now]
        return items

    def _tag(self, jobs: list[Job]) -> list[list[Tagged]]:
        sentences = [s for job in jobs for s in job.sentences]
        extras = None if jobs[0].extras is None else [x for job in jobs for x in job.extras]
        tagged = self.tagger.tag(
            [list(s) for s in sentences],
            extras=extras,
            attention=any(job.attention for job in jobs),
            probabilities=any(job.probabilities for job in jobs),
            heads=extras is not None,  # QE: the gap and source tags too
            batch_size=max(len(sentences), 1),
            max_tokens=GROUP_TOKENS,
        )
        results, start = [], 0
        for job in jobs:
            mine = tagged[start : start + len(job.sentences)]
            start += len(job.sentences)
            for sentence in mine:  # only what this request asked for
                sentence.attention = sentence.attention if job.attention else None
                sentence.probabilities = sentence.probabilities if job.probabilities else None
            results.append(mine)
        return results


def _hand_back(items: list[Waiting], results: list, error: Exception | None) -> None:
    """Each request its result (or the error), in one call per event loop: every call wakes the loop
    (a write to its self-pipe), and a worker's requests share one loop."""
    loops: dict[asyncio.AbstractEventLoop, list] = {}
    for item, result in zip(items, results, strict=True):
        loops.setdefault(item.loop, []).append((item.future, result))
    for loop, settled in loops.items():
        loop.call_soon_threadsafe(_settle, settled, error)


def _settle(settled: list[tuple[asyncio.Future, object]], error: Exception | None) -> None:
    for future, result in settled:
        if future.done():  # the client went away
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
