"""Admission control: a bound on the words waiting to be tagged, and an optional deadline per request.

A server process has one tagging thread; what it has not tagged yet waits. Without a bound a burst
makes every answer late (the queue grows, and each request waits for all before it) while memory
rises. So each process counts the words of the requests it has admitted and not yet answered, and
refuses a request (``503 Service Unavailable``, a ``Retry-After`` header and a JSON body) when its words
would take the count over ``max_words`` (``easyfirst serve --max-queue``); a request is always admitted
when nothing waits, so that the largest request the limits allow can be tagged.

With a deadline (``--deadline``), a request is also refused when the words before it and its own
would take longer than the deadline at the rate this process has been answering (words answered per
second while some waited, recent seconds weighing most: what a request admitted now meets, tagging,
answers and the event loop's work included), and a request still untagged when its deadline passes is
answered ``504`` instead of being tagged late. A refusal is cheap: once the bound is reached a request is refused before its
body is parsed. ``GET /health`` is answered by the event loop, never queued behind the tagging.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from dataclasses import dataclass

from easyfirst.serve.requests import RequestError

# Words each server process admits at once (`easyfirst serve --max-queue`): under 2 s of answering for
# a worker of `--workers 2` on this project's loaded 2-core machine, which answered about 5,500 words/s
# each (requests of 100 sentences of 30 words). At 10x that load, 10,000 words kept the slowest
# answered request at 3.9 s where 20,000 let it reach 5.5 s (benchmarks/speed/serve_overload.py;
# docs/serve.md, "Under overload"). A request is always admitted when nothing waits, so the largest
# one the limits allow (100 sentences of 200 words) is still tagged.
MAX_QUEUE_WORDS = 10_000
RETRY_AFTER_MAX = 60  # seconds: a Retry-After beyond this tells a client nothing useful
RATE_MEMORY = 3.0  # seconds: the busy time over which the answering rate forgets (exponentially)
# The share of a request's time left that the words before it may fill: the rest is for what the rate
# does not see (the answer's writing, connections waiting for the event loop, the rate falling).
DEADLINE_SHARE = 0.8


@dataclass(frozen=True)
class Admission:
    """What a server process admits: ``max_words`` waiting at most (at least one request), and with
    ``deadline`` (seconds, None: none) what it can tag within it."""

    max_words: int = MAX_QUEUE_WORDS
    deadline: float | None = None


class Overloaded(RequestError):
    """503: the request is refused, to be sent again after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(503, message)
        self.retry_after = retry_after


class Gate:
    """The words a server process has admitted and not yet answered (``waiting``) and the rate at which
    it answers them (``rate``, words per second while some wait), both on its event loop. Counts over
    every worker process (shared memory, made before the fork): words waiting, requests refused,
    requests past their deadline."""

    def __init__(self, admission: Admission = Admission()):
        self.admission = admission
        self.waiting = 0  # this process's
        self.answered = self.busy = 0.0  # words answered, seconds with words waiting: both fading
        self.since = 0.0  # when busy was last brought up to date (time.monotonic)
        self.counts = multiprocessing.get_context("fork").Array("q", 3)  # waiting, refused, expired

    @property
    def rate(self) -> float | None:
        """Words answered per second while some waited, recently; None before the first answer."""
        return self.answered / self.busy if self.answered and self.busy > 0 else None

    def check_room(self) -> None:
        """Raise :class:`Overloaded` if any request would be refused now (before its body is parsed)."""
        if self.waiting >= self.admission.max_words:
            self.refuse(
                f"{self.waiting:,} words are waiting to be tagged (a bound of {self.admission.max_words:,})"
            )

    def admit(self, words: int, started: float) -> None:
        """Count ``words`` as waiting, or raise :class:`Overloaded`; ``started``: when the request
        arrived (time.monotonic), so that its deadline counts the time its body took."""
        limit, deadline = self.admission.max_words, self.admission.deadline
        if self.waiting and self.waiting + words > limit:
            self.refuse(f"{self.waiting:,} words are waiting to be tagged (a bound of {limit:,})")
        if deadline is not None and self.waiting and self.rate:
            left = deadline - (time.monotonic() - started)
            expected = (self.waiting + words) / self.rate
            if expected > DEADLINE_SHARE * left:
                self.refuse(
                    f"the {self.waiting:,} words waiting and this request's {words:,} would take "
                    f"about {expected:.1f} s, past the deadline of {deadline:g} s"
                )
        if not self.waiting:
            self.since = time.monotonic()  # busy from now
        self.waiting += words
        self.add(0, words)

    def refuse(self, why: str) -> None:
        self.add(1, 1)
        after = self.retry_after()
        raise Overloaded(f"the server is busy: {why}; try again in {after} s", after)

    def release(self, words: int, tagged: bool = True) -> None:
        """The request answered (or failed): its words wait no more, and count towards the rate if
        ``tagged`` (not those of a request given up at its deadline)."""
        now = time.monotonic()
        elapsed, self.since = now - self.since, now
        fade = math.exp(-elapsed / RATE_MEMORY)
        self.answered = self.answered * fade + (words if tagged else 0)
        self.busy = self.busy * fade + elapsed
        self.waiting -= words
        self.add(0, -words)

    def expired(self, requests: int) -> RequestError:
        """The answer to ``requests`` whose deadline passed before they were tagged (504)."""
        self.add(2, requests)
        deadline = self.admission.deadline
        return RequestError(504, f"not tagged within the deadline of {deadline:g} s: the server is busy")

    def retry_after(self) -> int:
        """Seconds until the words waiting are tagged, at the recent rate (1 before any is known)."""
        if not self.rate:
            return 1
        return max(1, min(RETRY_AFTER_MAX, math.ceil(self.waiting / self.rate)))

    def add(self, slot: int, value: int) -> None:
        with self.counts.get_lock():
            self.counts[slot] += value

    def as_json(self) -> dict:
        waiting, refused, expired = self.counts[:]
        return {"waiting_words": waiting, "refused": refused, "expired": expired}
