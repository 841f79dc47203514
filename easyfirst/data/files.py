"""Opening users' files, with their mistakes reported as InputError."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from easyfirst.errors import EMPTY_NAME, InputError

# Sentences that the file writers (easyfirst tag) read and hand to the tagger at a time. The tagger
# sorts them by length into its batches (easyfirst.data.buckets.bucket_indices), so a larger window
# pads less, and gives the processes of easyfirst.tagging.pool more batches to share out (256 before;
# 2,048 and 8,192 were no faster on EWT's first 100k words: docs/studies/cores.md, "Tagging on every core").
# The window is the same whatever the cores, so the batches, and the output, are too.
TAG_WINDOW = 4096


def open_binary(path: str | Path) -> BinaryIO:
    """Open ``path`` for reading bytes; a missing file, a folder or no permission is an InputError."""
    if path == "":  # `easyfirst tag "$FILE"` with FILE unset
        raise InputError(EMPTY_NAME)
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


BOM = "\ufeff"  # a UTF-8 byte-order mark: kept where a file is copied, never read as part of a token


def without_bom(text: str, number: int) -> str:
    """Line ``number`` (from 1) of a file as its fields are read: the first line without a byte-order mark."""
    return text[1:] if number == 1 and text.startswith(BOM) else text


def source_name(source, name: str | None = None) -> str:
    """How messages name an input: ``name``, else the path, else the stream's name."""
    if name:
        return name
    return str(source) if isinstance(source, str | Path) else getattr(source, "name", "<stream>")


def open_source(source, name: str | None = None) -> tuple[BinaryIO, str, bool]:
    """``(binary stream, name for messages, whether the caller must close it)`` for a path or a stream
    (a text stream is read through its binary buffer)."""
    if isinstance(source, str | Path):
        return open_binary(source), source_name(source, name), True
    if isinstance(source, io.TextIOBase):
        source = source.buffer
    return source, source_name(source, name), False


def text_lines(stream: BinaryIO, name: str, decode) -> Iterator[tuple[int, str, str]]:
    """``(number, text without its line ending, the ending)`` for each line, decoded by
    ``decode(raw, name, number)``."""
    for number, raw in enumerate(stream, 1):
        text = decode(raw, name, number)
        content = text.rstrip("\r\n")
        yield number, content, text[len(content) :]


@dataclass
class Block:
    """One sentence of a line-based file as read: its raw lines (without their endings), the file line
    number of each, which lines hold its words, and the words and tags. Writers copy the lines back with
    only the tag changed."""

    line: int  # where the sentence starts
    lines: list[str] = field(default_factory=list)
    endings: list[str] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    word_lines: list[int] = field(default_factory=list)  # indices into lines
    words: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)

    def add(self, content: str, ending: str, number: int) -> None:
        self.lines.append(content)
        self.endings.append(ending)
        self.numbers.append(number)
