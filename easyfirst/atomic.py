"""Writing files atomically, and JSON in and out.

Every file the project writes (models, checkpoints, metrics, tagged files, figures) goes to a temporary
name beside its destination and is renamed into place, so an interrupted write never leaves a
half-written file where a good one was. The file's mode follows the umask, as a file opened with
``open(path, "w")`` would (``tempfile.mkstemp`` alone creates it 0600, unreadable to colleagues).
"""

from __future__ import annotations

import json
import os
import signal
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
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) and SIGTERM until the block ends, then deliver the first one caught.

    For short writes that must not be cut (a model, a checkpoint): torch.save interrupted inside its
    C++ writer raises a RuntimeError ("unexpected pos") instead of KeyboardInterrupt, which would turn
    Ctrl-C into a crash. Only the main thread can set handlers; elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig, handler in previous.items():
        if handler is not None:  # None: set outside Python, left alone
            signal.signal(sig, lambda number, frame: caught.append(number))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if handler is not None:
                signal.signal(sig, handler)
        if caught:
            signal.raise_signal(caught[0])


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
