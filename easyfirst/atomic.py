"""Writing files atomically, and JSON in and out.

Every file the project writes (models, checkpoints, metrics, tagged files, figures) goes to a temporary
name beside its destination and is renamed into place, so an interrupted write never leaves a
half-written file where a good one was. The file's mode follows the umask, as a file opened with
``open(path, "w")`` would (``tempfile.mkstemp`` alone creates it 0600, unreadable to colleagues).

Interrupts (SIGINT, SIGTERM) are here too, as what such a write must survive: :func:`signals_deferred`
holds them over a write that must not be cut (or a fork), and :class:`Interrupts` keeps the one a
command received, so that no file is put in place after it and the command never ends as a success.

And what a kill (SIGKILL, which no handler sees) leaves: the temporary file of a write in progress, which
the next command writing that output removes (:func:`remove_stale_temporaries`), and forked children,
which the kernel ends with their parent (:func:`die_with_parent`, in :func:`child_signals`).
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import fcntl
import io
import json
import os
import re
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from easyfirst.errors import InputError, WriteFailed


def _umask() -> int:
    mask = os.umask(0)  # reading the umask means setting it: put it straight back
    os.umask(mask)
    return mask


BUFFER = 1 << 20  # bytes a write holds before the system has them: torch.save's small records in few writes


class OutputFile(io.FileIO):
    """The file descriptor that every file the project writes goes through (:func:`atomic_write`'s
    temporaries, :class:`LogFile`): the one place where bytes leave for the disk. It keeps the first
    error the system gave a write (``failure``: a full disk, ENOSPC; an I/O error, EIO), which a writer
    in between may have turned into another (torch.save's C++ writer reports a RuntimeError, "unexpected
    pos"), so that the error reported is the system's, naming the file (:class:`WriteFailed`).
    ``destination``: the file being written (not the temporary's name)."""

    def __init__(self, handle: int, destination: Path):
        super().__init__(handle, "wb", closefd=True)
        self.destination = destination
        self.failure: OSError | None = None

    def write(self, data) -> int | None:
        try:
            return system_write(self, data)
        except OSError as error:
            self.failure = self.failure or error
            raise


def system_write(raw: OutputFile, data) -> int | None:
    """Hand ``data`` to the system for ``raw``: the one call through which every byte the project writes
    to a file goes (tests/training/test_full_disk.py fails it, as a full disk would)."""
    return io.FileIO.write(raw, data)


def atomic_write(path: str | Path, write) -> None:
    """Call ``write(binary_file)`` on a temporary file beside ``path``, then rename it to ``path``.

    The temporary (``.NAME.XXXXXXXX.tmp``) is locked (``flock``) for as long as it is written, so that
    :func:`remove_stale_temporaries` tells the one a killed process left (no one holds its lock: the
    kernel released it with the process) from one being written now. A write the system refuses (a
    full disk, an I/O error) raises :class:`~easyfirst.errors.WriteFailed` naming ``path``, whatever
    ``write`` made of it, and leaves ``path`` as it was; any other error of ``write`` is raised as it is."""
    path = Path(path)
    temporary = None
    try:
        with signals_deferred(), _refused(path):  # an interrupt between the creation and the name left it
            handle, temporary = _locked_temporary(path)
        with _refused(path):
            os.fchmod(handle, 0o666 & ~_umask())
        raw = OutputFile(handle, path)
        out = io.BufferedWriter(raw, BUFFER)
        try:
            write(out)
            with _refused(path):
                out.flush()
                os.fsync(raw.fileno())
            if raw.failure is not None:  # one that ``write`` caught and went on from
                raise WriteFailed(path, raw.failure)
            INTERRUPTS.check()  # one that a finalizer lost (see Interrupts): the file is not finished
            with _refused(path):
                os.replace(temporary, path)  # still locked: no cleaner takes it before it has its name
        except BaseException as error:
            _discard(out)
            if raw.failure is not None and not isinstance(error, WriteFailed | KeyboardInterrupt):
                raise WriteFailed(path, raw.failure) from None
            raise
        out.close()
    except BaseException:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
        raise


@contextmanager
def _refused(path: Path) -> Iterator[None]:
    """The system's refusal of a step of writing ``path`` (OSError) as :class:`WriteFailed`."""
    try:
        yield
    except OSError as error:
        raise WriteFailed(path, error) from None


def _discard(out: io.BufferedWriter) -> None:
    """Close a file that failed, its unwritten buffer dropped: the flush that closing tries fails
    again on a full disk, and is no news (the file is removed)."""
    with contextlib.suppress(OSError, ValueError):
        out.close()
    if not out.closed:  # pragma: no cover - BufferedWriter.close closes the descriptor even so
        with contextlib.suppress(OSError):
            out.raw.close()


class LogFile:
    """A log the project appends to (``train.log``), written line by line through :class:`OutputFile`,
    unbuffered: what is written is on its way to the disk, and a write the system refuses (a full disk)
    raises :class:`~easyfirst.errors.WriteFailed` naming the log; the lines before it stay. ``append``:
    keep what the file holds (a resumed run), else start it empty."""

    def __init__(self, path: str | Path, append: bool = False):
        self.path = Path(path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_APPEND if append else os.O_TRUNC)
        with _refused(self.path):
            self.raw = OutputFile(os.open(self.path, flags, 0o666), self.path)

    def write(self, text: str) -> int:
        data = memoryview(text.encode("utf-8"))
        with _refused(self.path):
            while data:
                data = data[self.raw.write(data) or 0 :]
        return len(text)

    def flush(self) -> None:
        """Nothing is held back: each write went to the system."""

    def close(self) -> None:
        self.raw.close()


def _locked_temporary(path: Path) -> tuple[int, str]:
    """A new temporary file for ``path``, open and locked: a cleaner that took it between its creation
    and the lock (and removed it) makes another one."""
    while True:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            if os.stat(temporary).st_ino == os.fstat(handle).st_ino:
                return handle, temporary
        except FileNotFoundError:
            pass
        os.close(handle)


# the name of atomic_write's temporary for NAME: tempfile's 8 random characters between
TEMPORARY = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp")


def remove_stale_temporaries(paths) -> int:
    """Remove the temporaries that :func:`atomic_write` left beside ``paths`` (files about to be
    written) when a kill ended it, and only those: ``.NAME.XXXXXXXX.tmp`` for a NAME of ``paths``, that
    no living process holds locked; returns how many. One listing per folder, for a corpus's outputs."""
    wanted: dict[Path, set[str]] = {}
    for path in map(Path, paths):
        wanted.setdefault(path.parent, set()).add(path.name)
    removed = 0
    for folder, names in wanted.items():
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            match = TEMPORARY.fullmatch(entry.name)
            if match and match["name"] in names and entry.is_file(follow_symlinks=False):
                removed += _remove_if_unlocked(entry.path)
    return removed


def _remove_if_unlocked(temporary: str) -> bool:
    """Remove ``temporary`` unless a process holds its lock (it is being written)."""
    try:
        handle = os.open(temporary, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:  # gone meanwhile (renamed into place), or not ours to open
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(handle)
        return False
    try:
        os.unlink(temporary)  # under its lock: a writer that locks it now finds it gone
        return True
    except FileNotFoundError:
        return False
    finally:
        os.close(handle)


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
    """In a forked child that works for this process (a reader, a tagging or training worker): ended
    when the parent dies (:func:`die_with_parent`), Ctrl-C ignored, as it is the parent's to handle (it
    ends its children), SIGTERM ending it at once and silently, then both unblocked (a child forked
    inside :func:`signals_deferred` starts with them blocked, so that none reaches the parent's handlers
    in it)."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)


PR_SET_PDEATHSIG = 1  # linux/prctl.h
_forking: list[int] = []  # the id of the process that last forked (noted before each fork): a child's parent


def _note_forking() -> None:
    _forking[:] = [os.getpid()]


os.register_at_fork(before=_note_forking)


def die_with_parent(number: int = signal.SIGKILL) -> None:
    """Ask the kernel to send this process signal ``number`` when its parent dies (Linux's
    ``PR_SET_PDEATHSIG``), so that no worker outlives a parent killed with SIGKILL, and its shared
    memory (the deleted /dev/shm files it holds) is released with it; exit at once if the parent has
    died already (between the fork and this call). Every process the project starts calls it, first
    thing (:func:`child_signals`; docs/studies/cores.md, "Nothing left behind").

    The parent is the process that forked this one (noted by a hook before every fork), or for a process
    started otherwise (by torchrun) the parent it has now. The signal comes when the parent's *thread*
    that forked ends: every fork of the project is made by the main thread. Elsewhere than Linux, a no-op."""
    forked = _forking[0] if _forking else None
    parent = forked if forked is not None and forked != os.getpid() else os.getppid()
    if not sys.platform.startswith("linux"):
        return
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, number, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:  # it died before the kernel was asked: no signal will come
        os._exit(1)


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

    def held(self) -> AbstractContextManager[None]:
        """Keep an interrupt received in the block (not raised there), raised when the block ends if
        it was raising before: for code that a KeyboardInterrupt must not cut (torch's import, a write
        to Optuna's storage, which one cut between taking a lock and its ``try`` left held)."""
        return self._raising(False)

    def raised(self) -> AbstractContextManager[None]:
        """Raise an interrupt in the block (one received before it, at its start), inside a
        :meth:`held` one: the training of a trial, within Optuna's bookkeeping."""
        return self._raising(True)

    @contextmanager
    def _raising(self, raising: bool) -> Iterator[None]:
        before, self.raising = self.raising, raising
        try:
            if raising:
                self.check()
            yield
        finally:
            self.raising = before
        if before:  # the block ended without an exception
            self.check()

    def _handle(self, number: int, frame) -> None:
        if self.received is None:
            self.received = number
        if self.raising:
            if _inside(frame, self._unraisable.__func__.__code__):
                self._again()  # raised in the hook, Python would print it with a traceback: later
                return
            raise KeyboardInterrupt

    def _unraisable(self, unraisable) -> None:
        if issubclass(unraisable.exc_type, KeyboardInterrupt) and self.received is not None:
            if self.raising:  # lost in a finalizer: again, where the code goes on
                self._again()
            return
        self.previous["hook"](unraisable)

    def _again(self) -> None:
        """The signal received, sent again a moment later from another thread (the handler runs in the
        main thread where its code is then; still inside the hook, it sends it again)."""
        again = threading.Timer(0.001, _thread.interrupt_main, (self.received,))
        again.daemon = True
        again.start()


def _inside(frame, code) -> bool:
    """Whether ``code`` runs in ``frame`` or in one of its callers."""
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


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
