"""CoNLL column files (CoNLL-2002/2003 NER and the like): reading sentences and tagging files.

One token per line in whitespace-separated columns (the token and tag columns are configurable: by
default the first and the last), a blank line between sentences (lines of spaces count as blank, and
several in a row are one break), ``-DOCSTART-`` document lines (skipped for training, kept when
writing). Files are read in a given encoding (UTF-8 by default; the original CoNLL-2002/2003 files are
Latin-1) and written back in the same one.

Tags are read in the file's scheme (IOB1, BIO or BIOES; see easyfirst.data.schemes), detected over the
whole file, and converted to BIO; tagging writes predictions back in the input's scheme. Every token
line must have as many columns as the first one. Mistakes are reported as ``path:line: message``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from easyfirst.data import detect, schemes
from easyfirst.data.files import (
    BOM,
    TAG_WINDOW,
    Block,
    magic_hint,
    open_source,
    source_name,
    text_lines,
    without_bom,
)
from easyfirst.data.sentence import Sentence
from easyfirst.errors import InputError

DOCSTART = "-DOCSTART-"
FIELD = re.compile(r"\S+")


def _decoder(encoding: str):
    def decode(raw: bytes, name: str, number: int) -> str:
        if b"\x00" in raw:
            raise InputError(
                f"binary data (NUL byte): not a CoNLL column file{magic_hint(raw, number)}", name, number
            )
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError as error:
            hint = " (the original CoNLL-2002/2003 files are Latin-1: try --encoding latin-1)"
            hint = magic_hint(raw, number) or hint
            raise InputError(
                f"not valid {encoding} (byte {error.start + 1} of the line)"
                + (hint if encoding.replace("-", "").lower() == "utf8" or hint.startswith(":") else ""),
                name,
                number,
            ) from None

    return decode


def _lines(source: str | Path | BinaryIO, encoding: str, name: str | None) -> Iterator[tuple[int, str, str]]:
    """``(number, text, ending)`` for each line, decoded."""
    stream, name, close = open_source(source, name)
    try:
        yield from text_lines(stream, name, _decoder(encoding))
    finally:
        if close:
            stream.close()


def _column(index: int, width: int, what: str, name: str, number: int) -> int:
    resolved = index if index >= 0 else width + index
    if not 0 <= resolved < width:
        raise InputError(
            f"the {what} column {index} does not exist: the line has {width} columns", name, number
        )
    return resolved


def _blocks(
    source, token_column: int, tag_column: int | None, encoding: str, name: str | None
) -> Iterator[Block | tuple[str, str]]:
    """Sentences, and ``(text, ending)`` for blank and ``-DOCSTART-`` lines. ``tag_column`` None: no tags."""
    name = source_name(source, name)
    width: tuple[int, int] | None = None  # (columns, line where first seen)
    first, token = 0, 0  # the line of the file's first word (its sentence's shape is checked), its column
    block: Block | None = None

    def wrong(message: str, number: int) -> InputError:  # the cause, if the file is of another kind
        lines = [*(block.lines if block is not None else []), content]
        path = source if isinstance(source, str | Path) else None
        return detect.explain(InputError(message, name, number), detect.COLUMNS, path, lines)

    for number, content, ending in _lines(source, encoding, name):
        fields = without_bom(content, number).split()
        if not fields or fields[0] == DOCSTART:
            if block is not None:
                yield _not_conllu(block, token, name) if block.line == first else block
                block = None
            yield content, ending
            continue
        if width is None:
            width, first = (len(fields), number), number
            token = _column(token_column, width[0], "token", name, number)
            tag = None if tag_column is None else _column(tag_column, width[0], "tag", name, number)
            if tag is not None and tag == token:
                raise wrong(
                    "the tag column is the token column: this file has only one column (no tags)", number
                )
        elif len(fields) != width[0]:
            raise wrong(f"expected {width[0]} columns (as on line {width[1]}), found {len(fields)}", number)
        if block is None:
            block = Block(number)
        block.add(content, ending, number)
        block.word_lines.append(len(block.lines) - 1)
        block.words.append(fields[token])
        if tag is not None:
            block.tags.append(fields[tag])
    if block is not None:
        yield _not_conllu(block, token, name) if block.line == first else block


def _not_conllu(block: Block, token: int, name: str) -> Block:
    """The file's first sentence, refused if it is CoNLL-U's (easyfirst.data.detect.conllu_sentence) and
    the token column is the first: the word ids would be read as the words, and every tag as wrong as
    the words. With comment lines or without, the file is refused by its shape, before any tag is read."""
    if token == 0 and detect.conllu_sentence(block.lines):
        looks = detect.Looks(detect.CONLLU, "10 tab-separated columns per word, numbered from 1")
        symptom = "its first column numbers the words 1, 2, 3, ... (the token column would hold the ids)"
        raise detect.WrongKind(symptom, looks, detect.COLUMNS, name, block.line)
    return block


def _to_bio(blocks: Sequence[Block], scheme: str, name: str, path: str | Path | None) -> list[list[str]]:
    """Each block's tags converted from ``scheme`` to BIO; a malformed tag is an error at its line."""
    converted = []
    for block in blocks:
        try:
            converted.append(schemes.convert(block.tags, scheme, "bio"))
        except schemes.SchemeError as error:
            problem = InputError(str(error), name, block.numbers[error.index])
            raise detect.explain(problem, detect.COLUMNS, path, block.lines) from None
    return converted


def read_conll(
    path: str | Path | BinaryIO,
    token_column: int = 0,
    tag_column: int = -1,
    encoding: str = "utf-8",
    scheme: str | None = None,
) -> list[Sentence]:
    """The sentences of a column file with BIO tags (converted from ``scheme``; None: detected).

    ``Sentence.extra["scheme"]`` holds the file's scheme. ``path`` may also be a binary stream.
    """
    name = source_name(path)
    blocks = [b for b in _blocks(path, token_column, tag_column, encoding, name) if isinstance(b, Block)]
    found = scheme or schemes.detect([b.tags for b in blocks])
    return [
        Sentence(b.words, tags, b.line, {"scheme": found})
        for b, tags in zip(
            blocks, _to_bio(blocks, found, name, path if isinstance(path, str | Path) else None), strict=True
        )
    ]


def tag_conll(
    source: str | Path | BinaryIO,
    out: BinaryIO,
    predict: Callable[[list[list[str]]], Sequence[Sequence[str]]],
    *,
    token_column: int = 0,
    tag_column: int = -1,
    encoding: str = "utf-8",
    replace: bool = False,
    scheme: str | None = None,
    window: int = TAG_WINDOW,
    name: str | None = None,
) -> int:
    """Write ``source`` to ``out`` with ``predict``'s BIO tags, converted to the output scheme, as a new
    last column (``replace``: in place of the tag column). Every other column, the whitespace between
    columns, blank and ``-DOCSTART-`` lines and line endings are copied unchanged.

    The output scheme is ``scheme``, or else the one detected in the file's tag column when it holds
    entity tags, or else BIO. The file is read whole before anything is written (detection needs it),
    so a malformed line is reported before any output. Returns the number of sentences.
    """
    name = source_name(source, name)
    items = list(_blocks(source, token_column, tag_column if replace else None, encoding, name))
    blocks = [item for item in items if isinstance(item, Block)]
    if scheme is None:
        gold = _existing_tags(blocks, tag_column)
        scheme = schemes.detect(gold) if gold is not None else "bio"
    predicted: list[Sequence[str]] = []
    for start in range(0, len(blocks), window):  # the tagger's memory: a window of sentences at a time
        predicted.extend(predict([b.words for b in blocks[start : start + window]]))
    chunks = []
    tags_of = {id(b): schemes.convert(t, "bio", scheme) for b, t in zip(blocks, predicted, strict=True)}
    for item in items:
        if not isinstance(item, Block):
            chunks.append(item[0] + item[1])
            continue
        for content, ending, tag in zip(item.lines, item.endings, tags_of[id(item)], strict=True):
            chunks.append(_with_tag(content, tag, tag_column if replace else None) + ending)
    try:
        out.write("".join(chunks).encode(encoding))
    except UnicodeEncodeError as error:
        raise InputError(f"a predicted tag cannot be written in {encoding}: {error.reason}", name) from None
    return len(blocks)


def _existing_tags(blocks: Sequence[Block], tag_column: int) -> list[list[str]] | None:
    """The file's tag column if every line has one and all of it are entity tags, else None."""
    tags = []
    for block in blocks:
        row = []
        for content in block.lines:
            fields = content.removeprefix(BOM).split()
            index = tag_column if tag_column >= 0 else len(fields) + tag_column
            if len(fields) < 2 or not 0 <= index < len(fields) or not schemes.is_entity_tag(fields[index]):
                return None
            row.append(fields[index])
        tags.append(row)
    return tags


def _with_tag(content: str, tag: str, replace_column: int | None) -> str:
    """``content`` with ``tag`` appended as a column (separated as its columns are), or in place of
    column ``replace_column``."""
    if content.startswith(BOM):  # the file's byte-order mark stays first, outside every column
        return BOM + _with_tag(content[1:], tag, replace_column)
    if replace_column is None:
        separator = "\t" if "\t" in content else " "
        return content.rstrip() + separator + tag
    spans = [m.span() for m in FIELD.finditer(content)]
    start, end = spans[replace_column]
    return content[:start] + tag + content[end:]
