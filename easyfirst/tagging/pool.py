"""Tagging on every core: the batches of one :meth:`easyfirst.api.Tagger.tag` call shared among forked
processes that hold the model (easyfirst.parallel.workers), for the front ends that ask (the CLI's verbs;
a library call, the spaCy component and the Dask workers tag in their own process).

A tagging batch is a few thousand small operations (the sketch steps of N = L, each a constrained
softmax): torch's threads gain little on them, and Python's lock keeps threads from running two batches
at once, so each core gets a process. The batches are formed exactly as with one process
(:func:`easyfirst.data.batching.iterate_batches`, from the same sentences), and every batch is tagged
whole by one process on one torch thread, so the output is byte for byte that of one core (``taskset -c
0``). The processes are forked at the first large call (easyfirst.parallel.cores.MIN_WORDS words or more, on the CPU,
from the main thread) that asks for them (``Tagger.tag(processes=)`` or ``Tagger.processes``: the CLI
asks, a library call by default does not) and kept for later calls; they hold the model as it was then.

A pool that *follows* (``easyfirst tag`` on a file read ahead, :class:`Follow`) is forked before the
first window of sentences arrives: each worker reads the windows itself, from its own copy of what the
reading process sends (easyfirst.tagging.readahead), and the processes take the batches of each window from a
shared counter, the costliest first. The main process's calls, one per window, then only take their
part: while it writes one window and reads the next, the workers go on with the next window's batches,
so no process waits for another between windows.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

import torch

from easyfirst.backends.chooser import plan_for
from easyfirst.data.batching import Batch, collate, encode, unpack
from easyfirst.data.buckets import Packed, bucket_indices, pack
from easyfirst.data.features import feature_rows, of_words_alone
from easyfirst.model.heads import decode_heads
from easyfirst.model.sketch import sentence_steps
from easyfirst.parallel.cores import pooled
from easyfirst.parallel.workers import Workers, one_thread

NOTHING_ASKED = (False, False, False)  # tags only: no attention, probabilities or extra outputs
NEXT_WINDOW = "next window"  # a following worker's message: take your part of the next window


def processes_for(requested: int | None, device: torch.device) -> int:
    """How many processes tag a large call: ``requested`` (None: 1, this process alone, the library's
    default; the CLI asks for one per core, easyfirst.parallel.cores.tagging_processes); 1 off the CPU."""
    if requested is not None and (
        isinstance(requested, bool) or not isinstance(requested, int) or requested < 1
    ):
        raise ValueError(
            f"processes: a number of processes, 1 or more (None: this one alone), not {requested!r}"
        )
    return (requested or 1) if device.type == "cpu" else 1


def tag_batch(model, batch: Batch, device: torch.device, asked: tuple[bool, bool, bool]) -> dict:
    """One batch through the model: its order and lengths, the best tags and what ``asked`` names
    (attention, probabilities, extra outputs), on the CPU."""
    attention, probabilities, heads = asked
    batch = batch.to(device)
    scores, alpha, head_scores = model(batch, heads=True, plan=plan_for(model, batch.mask, False))
    best, distribution = model.predict(scores, batch.mask, distribution=probabilities)
    out = {"order": batch.order, "lengths": batch.lengths.tolist(), "best": best.cpu()}
    if heads:
        out["heads"] = decode_heads(head_scores, batch, model.outputs)
    if probabilities:
        out["probabilities"] = distribution.float().cpu()
    if attention:  # each sentence's rows of the attention history: the steps it ran
        out["steps"] = sentence_steps(batch.lengths, model.steps, model.steps_beyond_length).tolist()
        out["attention"] = alpha.float().cpu() if alpha is not None else None
    return out


# a batch to tag: the sentence numbers (its ``order``), their words, their extras (QE) or None, and
# its ids padded by the reading process (easyfirst.data.buckets.Packed) or None
Job = tuple[list[int], list, list, Packed | None]


def make_jobs(
    sentences: Sequence[Sequence[str]],
    extras,
    packed: Sequence[Packed] | None,
    batch_size: int,
    max_tokens: int | None,
) -> tuple[list[int], list[Job]]:
    """The sentences that have words (their indices) and the batches they are tagged in, sorted by
    length (easyfirst.data.buckets.bucket_indices); a job's ``order`` counts the kept sentences.
    ``packed``: the batches' ids, made before for the same sentences and options, checked against them."""
    keep = [k for k, s in enumerate(sentences) if len(s) > 0]
    lengths = [len(sentences[k]) for k in keep]
    batches = bucket_indices(lengths, batch_size, max_tokens=max_tokens)
    if packed is not None and [p.lengths for p in packed] != [[lengths[i] for i in b] for b in batches]:
        raise ValueError("batches: not made for these sentences with this batch size and max tokens")
    jobs = [
        (
            indices,
            [sentences[keep[i]] for i in indices],
            [extras[keep[i]] if extras else None for i in indices],
            None if packed is None else packed[j],
        )
        for j, indices in enumerate(batches)
    ]
    return keep, jobs


def tag_job(model, vocabs, job: Job, device: torch.device, asked: tuple[bool, bool, bool]) -> dict:
    """:func:`tag_batch` of one batch, encoded and collated here (so that a pool's processes share that
    work too) unless it was packed before."""
    indices, words, extras, packed = job
    if packed is None and not model.outputs and not any(extras) and of_words_alone(vocabs.features):
        # ids padded into one buffer each: the words', the affixes' and those of features of the word alone
        features = [feature_rows(vocabs.features, w) for w in words] if vocabs.features else ()
        packed = pack([vocabs.index(w) for w in words], vocabs.max_affix, features)
    if packed is not None:
        return tag_batch(model, unpack(packed, indices, words), device, asked)
    items = [encode(vocabs, w, extra=x, heads=model.outputs) for w, x in zip(words, extras, strict=True)]
    return tag_batch(model, collate(items, indices), device, asked)


@dataclass
class Follow:
    """A pool's windows of sentences followed from a reading process: a pipe per worker (the copies of
    an easyfirst.tagging.readahead.ReadAhead, each item a window's ``(sentences, batches)``, as the main process's
    calls get them) and the options every window is tagged with. ``base`` and ``windows`` are each
    process's own: the batches of the windows before its current one, and the worker's stream."""

    pipes: list[Connection]
    batch_size: int
    max_tokens: int | None
    base: int = 0
    windows: Iterator | None = field(default=None, repr=False)

    def claimed(self, claims: Claims, jobs: list[Job]) -> Iterator[int]:
        """The batches of the current window this process takes, the costliest first; the next
        window's count then starts after this one's."""
        base, order = self.base, sorted(range(len(jobs)), key=lambda i: -cost(jobs[i]))
        self.base += len(jobs)
        while (number := claims.take(base + len(jobs))) is not None:
            yield order[number - base]


class Claims:
    """A counter in shared memory: the batches, numbered over all the windows, that some process took."""

    def __init__(self):
        self.next = multiprocessing.get_context("fork").Value("q", 0)

    def take(self, end: int) -> int | None:
        """The next batch number, if it is below ``end`` (the current window's last, exclusive)."""
        with self.next.get_lock():
            number = self.next.value
            if number >= end:
                return None
            self.next.value = number + 1
            return number


class TaggingPool:
    """``count`` processes (this one and ``count`` − 1 forked) tagging the batches of a call together;
    with ``follow``, the windows that a reading process sends (see the module's doc)."""

    AHEAD = 2  # windows a following worker is asked for ahead of the main process's call

    def __init__(self, model, vocabs, device: torch.device, count: int, follow: Follow | None = None):
        self.model, self.vocabs, self.device, self.closed = model, vocabs, device, False
        self.follow, self.claims = follow, Claims() if follow is not None else None

        def work(workers: Workers, rank: int, message: tuple[list[Job], tuple] | str):
            with torch.inference_mode():
                if message == NEXT_WINDOW:  # following: the batches this worker took of the next window
                    return self._follow_next(workers, rank)
                jobs, asked = message
                return [tag_job(model, vocabs, job, device, asked) for job in jobs]

        self.workers = Workers(count, work)
        try:
            if follow is not None:
                for _ in range(self.AHEAD):
                    self.workers.start([NEXT_WINDOW] * count)
        except BaseException:  # an interrupt: no one else holds the workers yet
            self.close()
            raise

    def check_call(self, batch_size: int, max_tokens: int | None, extras) -> None:
        """A following pool's calls are the windows it follows, with the options it was given."""
        follow = self.follow
        announced = None if follow is None else (follow.batch_size, follow.max_tokens, None)
        if announced is not None and (batch_size, max_tokens, extras) != announced:
            raise RuntimeError("this tagger's processes follow a read-ahead: tag its windows as announced")

    def run(self, batches: list[Job], asked: tuple[bool, bool, bool]) -> list[dict]:
        """:func:`tag_job` of every batch, in the order given."""
        outputs: list[dict | None] = [None] * len(batches)
        if self.follow is not None:
            self._run_followed(batches, asked, outputs)
            return outputs
        shares = balanced_shares([cost(b) for b in batches], self.workers.count)
        self.workers.start([([batches[i] for i in share], asked) for share in shares])
        with self._tagging_here():
            own = [tag_job(self.model, self.vocabs, batches[i], self.device, asked) for i in shares[0]]
        for share, results in zip(shares, [own, *self.workers.wait()], strict=True):
            for i, result in zip(share, results, strict=True):
                outputs[i] = result
        return outputs

    @contextmanager
    def _tagging_here(self):
        """This process tagging its batches on one torch thread (the other cores are the workers')."""
        try:
            with one_thread():
                yield
        except BaseException:
            self.close()  # the workers' answers would be read by the next call
            raise

    def _run_followed(self, batches: list[Job], asked: tuple[bool, bool, bool], outputs: list) -> None:
        """This window's batches into ``outputs``: those this process takes, then the workers' (asked
        for a window ahead, so that they went on while this process wrote the last window and read
        this one)."""
        if asked != NOTHING_ASKED:
            raise RuntimeError("a pool that follows a read-ahead tags its windows' tags only")
        with self._tagging_here():
            for i in self.follow.claimed(self.claims, batches):
                outputs[i] = tag_job(self.model, self.vocabs, batches[i], self.device, asked)
        for done in self.workers.wait():
            if done is None:
                raise RuntimeError("a tagging process found the windows ended before this one's")
            for i, result in done.items():
                outputs[i] = result
        self.workers.start([NEXT_WINDOW] * self.workers.count)  # the window after the next
        if any(result is None for result in outputs):
            raise RuntimeError("a window's batches were not all tagged: the processes lost count")

    def _follow_next(self, workers: Workers, rank: int) -> dict[int, dict] | None:
        """In worker ``rank``: the batches it took of the next window that the pool shares (the
        windows too small for it are the main process's alone), by number; None at the end."""
        follow = self.follow
        if follow.windows is None:
            from easyfirst.tagging.readahead import receive

            for k, pipe in enumerate(follow.pipes):  # the other workers' copies
                if k != rank - 1:
                    pipe.close()
            follow.windows = receive(follow.pipes[rank - 1])
        for sentences, packed in follow.windows:
            _, jobs = make_jobs(sentences, None, packed, follow.batch_size, follow.max_tokens)
            if not pooled(sum(len(s) for s in sentences), len(jobs)):
                continue
            done, small = {}, torch.int16 if len(self.vocabs.tags.itos) < 2**15 else torch.int64
            for i in follow.claimed(self.claims, jobs):
                if workers.stop.item():
                    break
                output = tag_job(self.model, self.vocabs, jobs[i], self.device, NOTHING_ASKED)
                done[i] = {**output, "best": output["best"].to(small)}  # less to send back
            return done
        return None

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
    held: bool = False,
) -> list[dict]:
    """Every batch's :func:`tag_job`: through the pool that ``pool()`` gives for a large call from the
    main thread (None: no pool), else one by one with ``one``; a small call on one torch thread (the
    first call of ``easyfirst tag --text`` on two sentences: 63–481 ms with two threads, 13–25 ms
    with one, five runs each on the busy 2-core machine of docs/studies/speed.md) unless the caller
    ``held`` its own count (a Tagger's ``threads``)."""
    if pooled(words, len(batches)):
        found = pool() if threading.current_thread() is threading.main_thread() else None
        if found is not None:
            return found.run(batches, asked)
        return [one(batch) for batch in batches]
    if held:
        return [one(batch) for batch in batches]
    with one_thread():
        return [one(batch) for batch in batches]
