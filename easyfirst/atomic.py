"""Writing files atomically, and JSON in and out.

Every file the project writes (models, checkpoints, metrics, tagged files, figures) goes to a temporary
name beside its destination and is renamed into place, so an interrupted write never leaves a
half-written file where a good one was. The file's mode follows the umask, as a file opened with
``open(path, "w")`` would (``tempfile.mkstemp`` alone creates it 0600, unreadable to colleagues).

Interrupts (SIGINT, SIGTERM) are here too, as what such a write must survive: :func:`signals_deferred`
holds them over a write that must not be cut (or a fork), and :class:`Interrupts` keeps the one a
command received, so that no file is put in place after it and the command never ends as a success.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from easyfirst.errors import InputError


def _umask() -> int:
    mask = os.umask(0)  # reading the umask means setting it: put it straight back
    os.umask(mask)
    return mask


def atomic_write(path: str | Path, write) -> None:
    """Call ``write(binary_file)`` on a temporary file beside ``path``, then rename it to ``path``."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(handle, 0o666 & ~_umask())
        with os.fdopen(handle, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        INTERRUPTS.check()  # one that a finalizer lost (see Interrupts): the file is not finished
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


SIGNALS = (
    signal.SIGINT,
    signal.SIGTERM,
)  # how a user (Ctrl-C) or a system (kill, a scheduler) stops a command


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) and SIGTERM until the block ends, then deliver the first one caught.

    For short writes that must not be cut (a model, a checkpoint): torch.save interrupted inside its
    C++ writer raises a RuntimeError ("unexpected pos") instead of KeyboardInterrupt, which would turn
    Ctrl-C into a crash. Also for forking a child and keeping its id, and for ending children: the
    signals are blocked in this thread too, so a child forked in the block starts with them blocked
    until it has set its own handlers (:func:`child_signals`). Only the main thread can set handlers;
    elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    for sig, handler in previous.items():
        if handler is not None:  # None: set outside Python, left alone
            signal.signal(sig, lambda number, frame: caught.append(number))
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if handler is not None:
                signal.signal(sig, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # one sent meanwhile reaches the handler now
        if caught:
            signal.raise_signal(caught[0])


def child_signals() -> None:
    """In a forked child that works for this process (a reader, a tagging or training worker): Ctrl-C
    ignored, as it is the parent's to handle (it ends its children), SIGTERM ending it at once and
    silently, then both unblocked (a child forked inside :func:`signals_deferred` starts with them
    blocked, so that none reaches the parent's handlers in it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)


class Interrupts:
    """SIGINT and SIGTERM for the life of a command (the ``easyfirst`` CLI): the first one received is
    kept, so that an interrupted command never ends as a success, and each is raised as
    KeyboardInterrupt while :attr:`raising` (during the command; not while it starts or ends).

    A KeyboardInterrupt raised inside a finalizer (``__del__``, a weakref callback) is lost: Python
    prints it as "Exception ignored" and goes on. Such a one is not printed but raised again, by the
    signal sent again, where the code goes on; and :func:`atomic_write` never puts a file in place once
    a signal was received."""

    def __init__(self):
        self.received: int | None = None
        self.raising = False
        self.previous: dict | None = None

    def install(self) -> None:
        """Catch the signals (not raising yet), until :meth:`uninstall`."""
        self.received, self.raising = None, False
        self.previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
        self.previous["hook"] = sys.unraisablehook
        for sig in SIGNALS:
            signal.signal(sig, self._handle)
        sys.unraisablehook = self._unraisable

    def uninstall(self) -> None:
        if self.previous is not None:
            sys.unraisablehook = self.previous.pop("hook")
            for sig, handler in self.previous.items():
                signal.signal(sig, handler)
        self.previous, self.received, self.raising = None, None, False

    def check(self) -> None:
        """Raise KeyboardInterrupt if a signal was received."""
        if self.received is not None:
            raise KeyboardInterrupt

    def _handle(self, number: int, frame) -> None:
        if self.received is None:
            self.received = number
        if self.raising:
            raise KeyboardInterrupt

    def _unraisable(self, unraisable) -> None:
        if issubclass(unraisable.exc_type, KeyboardInterrupt) and self.received is not None:
            if self.raising:  # lost in a finalizer: again, where the code goes on
                signal.raise_signal(self.received)
            return
        self.previous["hook"](unraisable)


INTERRUPTS = Interrupts()  # installed by the CLI (easyfirst.cli.run); elsewhere nothing is received


def write_json(path: str | Path, data) -> None:
    """``data`` as indented UTF-8 JSON, written atomically."""
    atomic_write(
        path, lambda out: out.write((json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
    )


def read_json(path: Path):
    """A JSON file of a run folder; a missing or malformed one is an InputError naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("not found (is this a model folder written by `easyfirst train`?)", path) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"not valid JSON: {error}", path) from None
