"""Tagging on every core: the batches of one :meth:`easyfirst.api.Tagger.tag` call shared among forked
processes that hold the model (easyfirst.workers), for every front end (the CLI, the API, the server).

A tagging batch is a few thousand small operations (the sketch steps of N = L, each a constrained
softmax): torch's threads gain little on them, and Python's lock keeps threads from running two batches
at once, so each core gets a process. The batches are formed exactly as with one process
(:func:`easyfirst.data.batching.iterate_batches`, from the same sentences), and every batch is tagged
whole by one process on one torch thread, so the output is byte for byte that of one core (``taskset -c
0``). The processes are forked at the first large call (:data:`MIN_WORDS` words or more, on the CPU,
from the main thread) and kept for later calls; they hold the model as it was then.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch

from easyfirst.cores import available_cores
from easyfirst.data.batching import Batch, collate, encode
from easyfirst.model.qe_heads import decode_heads
from easyfirst.model.sketch import sentence_steps
from easyfirst.workers import Workers

MAX_PROCESSES = 8  # beyond this, a call's batches are too few to keep the processes busy
MIN_WORDS = 2000  # a call with fewer words is tagged in this process (a pool costs a fork)


def processes_for(requested: int | None, device: torch.device) -> int:
    """How many processes tag a large call: ``requested``, else one per core (at most
    :data:`MAX_PROCESSES`); 1 off the CPU."""
    if device.type != "cpu":
        return 1
    return requested if requested is not None else min(available_cores(), MAX_PROCESSES)


def tag_batch(model, batch: Batch, device: torch.device, asked: tuple[bool, bool, bool]) -> dict:
    """One batch through the model: its order and lengths, the best tags and what ``asked`` names
    (attention, probabilities, QE heads), on the CPU."""
    attention, probabilities, heads = asked
    batch = batch.to(device)
    scores, alpha, head_scores = model(batch, heads=True)
    best, distribution = (t.cpu() for t in model.predict(scores, batch.mask))
    out = {"order": batch.order, "lengths": batch.lengths.tolist(), "best": best}
    if heads:
        out["heads"] = decode_heads(head_scores, batch)
    if probabilities:
        out["probabilities"] = distribution.float()
    if attention:  # each sentence's rows of the attention history: the steps it ran
        out["steps"] = sentence_steps(batch.lengths, model.steps, model.steps_beyond_length).tolist()
        out["attention"] = alpha.float().cpu() if alpha is not None else None
    return out


# a batch to tag: the sentence numbers (its ``order``), their words, their extras (QE) or None, and
# their ids (Vocabularies.index, read ahead) or None
Job = tuple[list[int], list, list, list]


def tag_job(model, vocabs, job: Job, device: torch.device, asked: tuple[bool, bool, bool]) -> dict:
    """:func:`tag_batch` of one batch, encoded and collated here (so that a pool's processes share that
    work too)."""
    indices, words, extras, ids = job
    items = [encode(vocabs, w, extra=x, ids=i) for w, x, i in zip(words, extras, ids, strict=True)]
    return tag_batch(model, collate(items, indices), device, asked)


class TaggingPool:
    """``count`` processes (this one and ``count`` − 1 forked) tagging the batches of a call together."""

    def __init__(self, model, vocabs, device: torch.device, count: int):
        self.model, self.vocabs, self.device, self.closed = model, vocabs, device, False

        def work(_workers: Workers, _rank: int, message: tuple[list[Job], tuple]) -> list[dict]:
            jobs, asked = message
            with torch.inference_mode():
                return [tag_job(model, vocabs, job, device, asked) for job in jobs]

        self.workers = Workers(count, work)

    def run(self, batches: list[Job], asked: tuple[bool, bool, bool]) -> list[dict]:
        """:func:`tag_job` of every batch, in the order given."""
        count = self.workers.count
        shares = balanced_shares([cost(b) for b in batches], count)
        self.workers.start([([batches[i] for i in share], asked) for share in shares])
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # the other cores are the workers'; one thread as they have
        try:
            own = [tag_job(self.model, self.vocabs, batches[i], self.device, asked) for i in shares[0]]
        except BaseException:
            self.close()  # the workers' answers would be read by the next call
            raise
        finally:
            torch.set_num_threads(threads)
        outputs: list[dict | None] = [None] * len(batches)
        for share, results in zip(shares, [own, *self.workers.wait()], strict=True):
            for i, result in zip(share, results, strict=True):
                outputs[i] = result
        return outputs

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.workers.close()


def cost(job: Job) -> int:
    """A batch's work, roughly: sentences × longest length², as N = L sketch steps each attend over L."""
    longest = max(len(words) for words in job[1])
    return len(job[1]) * longest * longest


def balanced_shares(costs: list[int], count: int) -> list[list[int]]:
    """Batch indices for each of ``count`` processes, the costliest batch first to the least loaded
    (longest processing time first); each share in increasing index."""
    shares: list[list[int]] = [[] for _ in range(count)]
    loads = [0] * count
    for i in sorted(range(len(costs)), key=lambda i: -costs[i]):
        least = loads.index(min(loads))
        shares[least].append(i)
        loads[least] += costs[i]
    return [sorted(share) for share in shares]


def tag_batches(
    batches: list[Job],
    one: Callable[[Job], dict],
    pool: Callable[[], TaggingPool | None],
    words: int,
    asked: tuple[bool, bool, bool],
) -> list[dict]:
    """Every batch's :func:`tag_job`: through the pool that ``pool()`` gives for a large call from the
    main thread (None: no pool), else one by one with ``one``."""
    large = words >= MIN_WORDS and len(batches) > 1
    if large and threading.current_thread() is threading.main_thread():
        found = pool()
        if found is not None:
            return found.run(batches, asked)
    return [one(batch) for batch in batches]
