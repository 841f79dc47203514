"""CoNLL-U: reading sentences for training and evaluation, and tagging files byte for byte.

Only syntactic words (integer IDs) are tagged. Multiword-token ranges (``3-4``) and empty nodes
(``8.1``) are read past, and written back untouched, like comments, every other column and the file's
line endings (LF or CRLF), a leading UTF-8 byte-order mark and a missing final newline. IDs are parsed
with the ``conllu`` package's ID parser; malformed lines are reported as ``path:line: what is wrong``.
Both readers stream: memory holds one sentence (a window of sentences when tagging, TAG_WINDOW).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from conllu.parser import ParseException, parse_id_value

from easyfirst.data import detect
from easyfirst.data.files import TAG_WINDOW, Block, decode_line, open_source, text_lines, without_bom
from easyfirst.data.sentence import Sentence
from easyfirst.errors import InputError

COLUMNS = {"upos": 3, "xpos": 4}


def _decode(raw: bytes, name: str, number: int) -> str:
    return decode_line(raw, name, number, "CoNLL-U")


def _blocks(source, tag_column: str, name: str | None) -> Iterator[Block | tuple[str, str]]:
    """Sentence blocks, and ``(text, ending)`` pairs for the blank lines between them."""
    column = COLUMNS[tag_column]
    stream, name, close = open_source(source, name)

    def wrong(message: str, number: int) -> InputError:  # the cause, if the file is of another kind
        lines = block.lines if block is not None else [content]
        return detect.explain(
            InputError(message, name, number), detect.CONLLU, source if close else None, lines
        )

    try:
        block: Block | None = None
        expected = 1  # next integer ID within the sentence
        range_end = 0
        for number, content, ending in text_lines(stream, name, _decode):
            parsed = without_bom(content, number)
            if not parsed.strip():
                if block is not None:
                    if not block.words:
                        raise InputError("sentence without words", name, block.line)
                    yield block
                    block = None
                yield content, ending
                continue
            if block is None:
                block, expected, range_end = Block(number), 1, 0
            block.add(content, ending, number)
            if parsed.startswith("#"):
                if block.words:
                    raise InputError("comment line inside a sentence", name, number)
                continue
            fields = parsed.split("\t")
            if len(fields) != 10:
                raise wrong(f"expected 10 tab-separated columns, found {len(fields)}", number)
            try:
                identifier = parse_id_value(fields[0])
            except ParseException:
                identifier = None
            if identifier is None:
                raise wrong(f"ID {fields[0]!r} is not an integer, a range (3-4) or a decimal (8.1)", number)
            if isinstance(identifier, tuple):
                if identifier[1] == "-":
                    if identifier[0] != expected:
                        raise InputError(
                            f"range {fields[0]} out of sequence: expected it to start at {expected}",
                            name,
                            number,
                        )
                    range_end = identifier[2]
                elif identifier[0] != expected - 1:
                    raise InputError(f"empty node {fields[0]} out of sequence", name, number)
                continue
            if identifier != expected:
                raise InputError(f"word ID {identifier} out of sequence: expected {expected}", name, number)
            if not fields[1]:
                raise InputError("empty word form", name, number)
            expected += 1
            block.word_lines.append(len(block.lines) - 1)
            block.words.append(fields[1])
            block.tags.append(fields[column])
        if block is not None:
            if range_end >= expected:
                raise InputError("multiword token range goes past the last word", name, block.line)
            if not block.words:
                raise InputError("sentence without words", name, block.line)
            yield block
    finally:
        if close:
            stream.close()


def iter_conllu(
    source: str | Path | BinaryIO, tag_column: str = "upos", name: str | None = None
) -> Iterator[Sentence]:
    """Stream the sentences of a CoNLL-U file (a path or a binary stream)."""
    if tag_column not in COLUMNS:
        raise ValueError(f"tag_column must be one of {', '.join(COLUMNS)}")
    for item in _blocks(source, tag_column, name):
        if isinstance(item, Block):
            yield Sentence(item.words, item.tags, item.line)


def read_conllu(path: str | Path, tag_column: str = "upos") -> list[Sentence]:
    """All sentences of a CoNLL-U file."""
    return list(iter_conllu(path, tag_column))


# what a CoNLL-U writer works through: a window's items (sentence blocks, and the blank lines between
# them as ``(text, ending)``), and its sentences' ids (Vocabularies.index) when they were read ahead
Window = tuple[list[Block | tuple[str, str]], list | None]


def conllu_windows(
    source: str | Path | BinaryIO, tag_column: str = "upos", window: int = TAG_WINDOW, name: str | None = None
) -> Iterator[list[Block | tuple[str, str]]]:
    """The items of a CoNLL-U file, ``window`` sentences at a time (the last window: what is left, maybe
    nothing)."""
    pending: list[Block | tuple[str, str]] = []
    in_window = 0
    for item in _blocks(source, tag_column, name):
        pending.append(item)
        if isinstance(item, Block):
            in_window += 1
            if in_window == window:
                yield pending
                pending, in_window = [], 0
    yield pending


def indexed_windows(
    source: str | Path | BinaryIO, vocabs, tag_column: str = "upos", name: str | None = None
) -> Iterator[Window]:
    """:func:`conllu_windows` with each sentence's ids in ``vocabs``: what ``easyfirst tag`` reads
    ahead (easyfirst.readahead) while torch is imported."""
    for pending in conllu_windows(source, tag_column, name=name):
        yield pending, [vocabs.index(item.words) for item in pending if isinstance(item, Block)]


def tag_conllu(
    source: str | Path | BinaryIO,
    out: BinaryIO,
    predict: Callable[..., Sequence[Sequence[str]]],
    tag_column: str = "upos",
    window: int = TAG_WINDOW,
    name: str | None = None,
    windows: Iterable[Window] | None = None,
) -> int:
    """Write ``source`` to ``out`` with the tag column of every word replaced by ``predict``'s tags.

    ``predict`` receives up to ``window`` sentences (lists of words) at a time, and their ``ids=`` when
    ``windows`` (:func:`indexed_windows` of ``source``, read ahead) are given in place of reading
    ``source``. Every other byte is copied unchanged. Returns the number of sentences.
    """
    column = COLUMNS[tag_column]
    if windows is None:
        windows = ((pending, None) for pending in conllu_windows(source, tag_column, window, name))
    count = 0
    for pending, ids in windows:
        blocks = [item for item in pending if isinstance(item, Block)]
        words = [b.words for b in blocks]
        tags = (predict(words) if ids is None else predict(words, ids=ids)) if blocks else []
        for block, predicted in zip(blocks, tags, strict=True):
            for index, tag in zip(block.word_lines, predicted, strict=True):
                fields = block.lines[index].split("\t")
                fields[column] = tag
                block.lines[index] = "\t".join(fields)
        out.write(
            "".join(item.text() if isinstance(item, Block) else item[0] + item[1] for item in pending).encode(
                "utf-8"
            )
        )
        count += len(blocks)
    return count
