"""User-facing errors: bad input files, bad options, missing models.

Every error a user can cause by what they pass in is an :class:`InputError`. The CLI prints it as
``path:line: message`` on stderr and exits with status 2, without a traceback.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable

EMPTY_NAME = "the name is empty (an unset shell variable?)"  # a file or folder given as ""


class InputError(Exception):
    """A problem with something the user gave us (a file, a path, an option value).

    ``path`` and ``line`` (1-based) locate it where they apply.
    """

    def __init__(self, message: str, path: str | os.PathLike | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where += ": "
        return where + self.message


class WriteFailed(InputError):
    """A file that could not be written: the disk is full, a quota is reached, an I/O error. ``path``
    names the file, the message the system's reason (``cannot write: No space left on device``); the
    CLI prints it on one line with exit status 2, and the file's last complete version is intact (every
    file is written atomically: easyfirst.atomic). ``errno`` is the system's error number."""

    def __init__(self, path: str | os.PathLike, error: OSError):
        reason = error.strerror or str(error) or type(error).__name__
        super().__init__(f"cannot write: {reason}", path)
        self.errno = error.errno


class WorkerFailed(RuntimeError):
    """A forked worker process (Hogwild training, tagging on every core) ended without answering:
    killed, out of memory, or failed in a way it could not report. The CLI prints it on one line and
    exits with status 1; what the command was writing is left unwritten."""


def suggest(name: str, known: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the nearest known name, else the known names."""
    known = list(known)
    near = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {near[0]}?)" if near else f" (known: {', '.join(known)})"
