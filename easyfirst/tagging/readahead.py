"""Reading ahead: the items of a generator made by a process forked before torch is imported, so that a
command reads and indexes its input on a second core while the first imports torch and loads the model.

``easyfirst tag FILE`` on a CoNLL-U file spends about a quarter of its time on one core starting (Python,
importing torch, the model) and a sixth reading the file and looking its words up in the vocabulary,
work that needs no torch (docs/studies/cores.md, "Tagging on every core"). :class:`ReadAhead` forks at once;
the child runs ``produce()`` and sends each item, pickled, through a pipe; the parent iterates over them
when it is ready. The child keeps what it has made in a bounded queue, sent by a thread, so that it is
not held up while the parent is still importing; it ignores Ctrl-C and ends when the parent closes its
end. An exception in ``produce`` (an :class:`~easyfirst.errors.InputError` for a malformed line) is
raised by the parent where the items stop, as if it had read the file itself. ``easyfirst tag`` also
has the child pack each window's batches (easyfirst.data.buckets) and send a copy of every window to
each process of the tagging pool (``copies``), which reads it for itself (easyfirst.tagging.pool).

This module must not import torch: it is imported, and forks, before torch is.
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection
from typing import Any

from easyfirst.atomic import child_signals, signals_deferred

AHEAD = 16  # items kept in the child before it waits for the parent (a window of 4,096 sentences each)


class ReadAhead:
    """``produce()``'s items, made in a child process forked now; iterate once, then :meth:`close`.

    ``copies``: as many more pipes, each carrying ``copy(item)`` of every item, for processes that this
    one forks before it starts iterating (the workers of a tagging pool that follow the windows,
    easyfirst.tagging.pool); its own ends of those pipes are closed when the iteration starts. A copy
    that no process reads any more is dropped by the reader, never waited for."""

    def __init__(
        self,
        produce: Callable[[], Iterable[Any]],
        copies: int = 0,
        copy: Callable[[Any], Any] | None = None,
    ):
        pipes = [os.pipe() for _ in range(1 + copies)]
        with signals_deferred():  # an interrupt comes once the child is known, to be ended at the exit
            self.pid = os.fork()
            if self.pid == 0:  # the child: never returns
                for here, _ in pipes:
                    os.close(here)
                _child(produce, [Connection(there, readable=False) for _, there in pipes], copy)
            self._end = weakref.finalize(self, _end_child, self.pid)  # also at the exit, if not closed
            for _, there in pipes:
                os.close(there)
            self.pipe: Connection | None = Connection(pipes[0][0], writable=False)
            self.copies = [Connection(here, writable=False) for here, _ in pipes[1:]]

    def __iter__(self) -> Iterator[Any]:
        if self.pipe is None:
            raise RuntimeError("this read-ahead is closed")
        self.release_copies()  # the processes that follow them have been forked (or never will be)
        try:
            yield from receive(self.pipe)
        except Exception:
            self.close()
            raise
        self.close()

    def release_copies(self) -> None:
        """Close this process's ends of the copies' pipes: those forked to read them hold their own."""
        for pipe in self.copies:
            pipe.close()
        self.copies = []

    def close(self) -> None:
        """End the child (if it is still reading) and collect it, whole: an interrupt meanwhile comes
        after."""
        with signals_deferred():
            self.release_copies()
            if self.pipe is None:
                return
            self.pipe.close()  # a child still sending gets a broken pipe and ends
            self.pipe = None
            self._end()


def _end_child(pid: int) -> None:
    """End the reading process ``pid`` and collect it."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # collected already
        pass


def receive(pipe: Connection) -> Iterator[Any]:
    """The items sent through ``pipe`` by a reader (the main pipe or a copy), until its end; the
    reader's exception is raised where its items stop."""
    while True:
        try:
            kind, value = pickle.loads(pipe.recv_bytes())
        except EOFError:
            raise RuntimeError("the process reading the input ended unexpectedly") from None
        if kind == "item":
            yield value
        elif kind == "error":
            raise value
        else:
            return


def _child(produce: Callable[[], Iterable[Any]], pipes: list[Connection], copy) -> None:
    """Run ``produce`` and send what it makes (then ``end``, or the exception it raised) through the
    first pipe, and ``copy`` of it through the others; exit."""
    child_signals()  # Ctrl-C is the parent's, which closes the pipe
    made: list[queue.Queue[bytes | None]] = [queue.Queue(AHEAD) for _ in pipes]

    def send(pipe: Connection, messages: queue.Queue[bytes | None], main: bool) -> None:
        try:
            while (message := messages.get()) is not None:
                pipe.send_bytes(message)
        except OSError:  # the reading process has gone or closed its end
            if main:  # the parent: nothing to read ahead for
                os._exit(1)
            while messages.get() is not None:  # a copy no one reads: dropped, so as not to wait for it
                pass

    senders = [
        threading.Thread(target=send, args=(pipe, messages, k == 0), daemon=True)
        for k, (pipe, messages) in enumerate(zip(pipes, made, strict=True))
    ]
    for sender in senders:
        sender.start()

    def put(message: bytes, copied: bytes | None = None) -> None:
        made[0].put(message)
        for messages in made[1:]:
            messages.put(message if copied is None else copied)

    code = 0
    try:
        try:
            for item in produce():
                copied = None if copy is None else pickle.dumps(("item", copy(item)), pickle.HIGHEST_PROTOCOL)
                put(pickle.dumps(("item", item), pickle.HIGHEST_PROTOCOL), copied)
            put(pickle.dumps(("end", None)))
        except Exception as error:  # noqa: BLE001 (raised again by the parent, where the items stop)
            try:
                message = pickle.dumps(("error", error))
            except Exception:  # noqa: BLE001 (one that does not pickle: its type and message)
                message = pickle.dumps(("error", RuntimeError(f"{type(error).__name__}: {error}")))
            put(message)
        for messages in made:
            messages.put(None)
        for sender in senders:
            sender.join()
    except BaseException:  # noqa: BLE001 (nothing may escape a forked child into the parent's code)
        code = 1
    os._exit(code)
