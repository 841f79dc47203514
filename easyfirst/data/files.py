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
        if Path(f"{path}.mt").is_file():  # the prefix of a QE data set, given where a file was expected
            raise InputError(
                f"no such file; {path}.mt exists: this names a QE data set (PREFIX.src, PREFIX.mt, ...), "
                "read by qe models only",
                path,
            ) from None
        raise InputError("no such file", path) from None
    except IsADirectoryError:
        raise InputError("is a folder, not a file", path) from None
    except PermissionError:
        raise InputError("permission denied", path) from None


def decode_line(raw: bytes, path: str | Path, number: int, kind: str = "text") -> str:
    """One line of a user's file as text; NUL bytes (a binary file) and invalid UTF-8 are InputErrors."""
    if b"\x00" in raw:
        raise InputError(f"binary data (NUL byte): not a {kind} file{magic_hint(raw, number)}", path, number)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            f"not valid UTF-8 (byte {error.start + 1} of the line){magic_hint(raw, number)}", path, number
        ) from None


def magic_hint(raw: bytes, number: int) -> str:
    """``: this looks like gzip-compressed data ...`` when the file's first bytes say what it is."""
    from easyfirst.data.detect import MAGIC

    if number == 1:
        for magic, what in MAGIC.items():
            if raw.startswith(magic):
                return f": this looks like {what}"
    return ""
