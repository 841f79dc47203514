"""CoNLL-U: reading sentences for training and evaluation, and tagging files byte for byte.

Only syntactic words (integer IDs) are tagged. Multiword-token ranges (``3-4``) and empty nodes
(``8.1``) are read past, and written back untouched, like comments, every other column and the file's
line endings (LF or CRLF), a leading UTF-8 byte-order mark and a missing final newline. IDs are parsed
with the ``conllu`` package's ID parser; malformed lines are reported as ``path:line: what is wrong``.
Both readers stream: memory holds one sentence (a window of sentences when tagging, TAG_WINDOW).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from conllu.parser import ParseException, parse_id_value

from easyfirst.data import detect
from easyfirst.data.buckets import INFERENCE_MAX_TOKENS, Packed, pack_batches
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


@dataclass
class Window:
    """Up to a window of sentences of a CoNLL-U file, ready to be written back with their tags: the text
    is ``pieces[0] + tag + pieces[1] + tag + … + pieces[-1]``, a tag for each word of ``words`` in file
    order. ``batches``: the batches of its sentences that have words, as the tagger forms them, padded
    by the reading process (:func:`packed_windows`)."""

    pieces: list[str]
    words: list[list[str]]
    batches: list[Packed] | None = None

    def text(self, tags: Sequence[Sequence[str]]) -> str:
        for words, predicted in zip(self.words, tags, strict=True):
            if len(predicted) != len(words):
                raise ValueError(f"{len(predicted)} tags for a sentence of {len(words)} words")
        parts = [""] * (2 * len(self.pieces) - 1)
        parts[::2] = self.pieces
        parts[1::2] = [tag for predicted in tags for tag in predicted]
        return "".join(parts)


def conllu_windows(
    source: str | Path | BinaryIO, tag_column: str = "upos", window: int = TAG_WINDOW, name: str | None = None
) -> Iterator[Window]:
    """The sentences of a CoNLL-U file, ``window`` at a time (the last window: what is left, maybe
    nothing)."""
    column = COLUMNS[tag_column]
    pieces: list[str] = []
    words: list[list[str]] = []
    text: list[str] = []  # since the last tag
    for item in _blocks(source, tag_column, name):
        if not isinstance(item, Block):
            text.append(item[0] + item[1])
            continue
        word_lines = set(item.word_lines)
        for index, (line, ending) in enumerate(zip(item.lines, item.endings, strict=True)):
            if index in word_lines:
                fields = line.split("\t")
                text.append("\t".join(fields[:column]) + "\t")
                pieces.append("".join(text))
                text = ["\t" + "\t".join(fields[column + 1 :]) + ending]
            else:
                text.append(line + ending)
        words.append(item.words)
        if len(words) == window:
            yield Window([*pieces, "".join(text)], words)
            pieces, words, text = [], [], []
    yield Window([*pieces, "".join(text)], words)


def packed_windows(
    source: str | Path | BinaryIO,
    vocabs,
    batch_size: int,
    max_tokens: int | None = INFERENCE_MAX_TOKENS,
    tag_column: str = "upos",
    name: str | None = None,
) -> Iterator[Window]:
    """:func:`conllu_windows` with each window's batches formed as ``Tagger.tag(words, batch_size=,
    max_tokens=)`` forms them and their ids in ``vocabs`` padded (easyfirst.data.buckets.pack): what
    ``easyfirst tag`` reads ahead (easyfirst.tagging.readahead) while torch is imported. Not for a model with
    features beside its words and affixes (the batches hold neither)."""
    for window in conllu_windows(source, tag_column, name=name):
        window.batches = pack_batches(window.words, vocabs, batch_size, max_tokens)
        yield window


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

    ``predict`` receives up to ``window`` sentences (lists of words) at a time, and their ``batches=``
    when ``windows`` (:func:`packed_windows` of ``source``, read ahead) are given in place of reading
    ``source``. Every other byte is copied unchanged. Returns the number of sentences.
    """
    if windows is None:
        windows = conllu_windows(source, tag_column, window, name)
    count = 0
    for part in windows:
        if not part.words:
            tags = []
        elif part.batches is None:
            tags = predict(part.words)
        else:
            tags = predict(part.words, batches=part.batches)
        out.write(part.text(tags).encode("utf-8"))
        count += len(part.words)
    return count
