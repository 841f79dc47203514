"""Reading ahead: the items of a generator made by a process forked before torch is imported, so that a
command reads and indexes its input on a second core while the first imports torch and loads the model.

``easyfirst tag FILE`` on a CoNLL-U file spends about a quarter of its time on one core starting (Python,
importing torch, the model) and a sixth reading the file and looking its words up in the vocabulary,
work that needs no torch (docs/cores.md, "Tagging on every core"). :class:`ReadAhead` forks at once;
the child runs ``produce()`` and sends each item, pickled, through a pipe; the parent iterates over them
when it is ready. The child keeps what it has made in a bounded queue, sent by a thread, so that it is
not held up while the parent is still importing; it ignores Ctrl-C and ends when the parent closes its
end. An exception in ``produce`` (an :class:`~easyfirst.errors.InputError` for a malformed line) is
raised by the parent where the items stop, as if it had read the file itself.

This module must not import torch: it is imported, and forks, before torch is.
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection
from typing import Any

AHEAD = 16  # items kept in the child before it waits for the parent (a window of 4,096 sentences each)


class ReadAhead:
    """``produce()``'s items, made in a child process forked now; iterate once, then :meth:`close`."""

    def __init__(self, produce: Callable[[], Iterable[Any]]):
        here, there = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns
            os.close(here)
            _child(produce, Connection(there, readable=False))
        os.close(there)
        self.pipe: Connection | None = Connection(here, writable=False)

    def __iter__(self) -> Iterator[Any]:
        if self.pipe is None:
            raise RuntimeError("this read-ahead is closed")
        while True:
            try:
                kind, value = pickle.loads(self.pipe.recv_bytes())
            except EOFError:
                self.close()
                raise RuntimeError("the process reading the input ended unexpectedly") from None
            if kind == "item":
                yield value
            elif kind == "error":
                self.close()
                raise value
            else:
                self.close()
                return

    def close(self) -> None:
        """End the child (if it is still reading) and collect it."""
        if self.pipe is None:
            return
        self.pipe.close()  # a child still sending gets a broken pipe and ends
        self.pipe = None
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)


def _child(produce: Callable[[], Iterable[Any]], pipe: Connection) -> None:
    """Run ``produce`` and send what it makes (then ``end``, or the exception it raised); exit."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's, which closes the pipe
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    made: queue.Queue[bytes | None] = queue.Queue(AHEAD)

    def send() -> None:
        try:
            while (message := made.get()) is not None:
                pipe.send_bytes(message)
        except OSError:  # the parent has gone or closed its end: nothing to read ahead for
            os._exit(1)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    code = 0
    try:
        try:
            for item in produce():
                made.put(pickle.dumps(("item", item), pickle.HIGHEST_PROTOCOL))
            made.put(pickle.dumps(("end", None)))
        except Exception as error:  # noqa: BLE001 (raised again by the parent, where the items stop)
            try:
                message = pickle.dumps(("error", error))
            except Exception:  # noqa: BLE001 (one that does not pickle: its type and message)
                message = pickle.dumps(("error", RuntimeError(f"{type(error).__name__}: {error}")))
            made.put(message)
        made.put(None)
        sender.join()
    except BaseException:  # noqa: BLE001 (nothing may escape a forked child into the parent's code)
        code = 1
    os._exit(code)
