"""Opening users' files, with their mistakes reported as InputError."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from easyfirst.errors import InputError


def open_binary(path: str | Path) -> BinaryIO:
    """Open ``path`` for reading bytes; a missing file, a folder or no permission is an InputError."""
    try:
        return open(path, "rb")  # noqa: SIM115 (the caller closes it)
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except IsADirectoryError:
        raise InputError("is a folder, not a file", path) from None
    except PermissionError:
        raise InputError("permission denied", path) from None
