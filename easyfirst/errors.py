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


class WorkerFailed(RuntimeError):
    """A forked worker process (Hogwild training, tagging on every core) ended without answering:
    killed, out of memory, or failed in a way it could not report. The CLI prints it on one line and
    exits with status 1; what the command was writing is left unwritten."""


def suggest(name: str, known: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the nearest known name, else the known names."""
    known = list(known)
    near = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {near[0]}?)" if near else f" (known: {', '.join(known)})"
