"""JSON out: one object per tagged sentence, the same bytes from ``easyfirst tag --output-format jsonl``
and from the server.

The object is :meth:`easyfirst.tagging.tagged.Tagged.as_json` (its schema: docs/tagging.md, "JSON
out"), written by :func:`encode`, which the server's answers are written by too: one line of the
JSONL holds exactly the bytes of that sentence's object in the server's ``sentences``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from typing import Any, BinaryIO

try:  # the extra `serve`: a faster writer of JSON, for content without floats
    import orjson as _orjson
except ImportError:
    _orjson = None


def encode(content, floats: bool = False) -> bytes:
    """``content`` as Starlette's JSONResponse writes it (json.dumps, compact, UTF-8), by orjson where
    installed unless it holds ``floats``: orjson writes the same strings, integers and structure, but
    floats otherwise (``0.00001`` where Python writes ``1e-05``)."""
    if _orjson is not None and not floats:
        return _orjson.dumps(content)
    return json.dumps(
        content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
    ).encode()


def write_jsonl(
    out: BinaryIO,
    tagger,
    sentences: Iterable,
    *,
    text: str | None = None,
    extras: Sequence[dict] | None = None,
    attention: bool = False,
    probabilities: bool = False,
    batch_size: int = 256,
    counted: Callable[[int], Any] | None = None,
) -> int:
    """Tag ``sentences`` with ``tagger`` (easyfirst.api.Tagger) a window (TAG_WINDOW) at a time and
    write one line of JSON per sentence to ``out``, with its attention and probabilities where asked.
    ``sentences`` holds words (lists of strings), or with ``text`` the tokens of easyfirst.data.text
    read from it, whose offsets the lines then give; QE: ``extras`` holds each sentence's source and
    alignment, and the lines give the model's gap and source tags. ``counted(words)``: told the words
    of each window written (a progress bar). Returns the number of sentences."""
    from easyfirst.data.files import TAG_WINDOW
    from easyfirst.tagging.entities import locate

    stream, count = iter(sentences), 0
    while chunk := list(islice(stream, TAG_WINDOW)):
        words = [[token.form for token in tokens] for tokens in chunk] if text is not None else chunk
        tagged = tagger.tag(
            words,
            attention=attention,
            probabilities=probabilities,
            extras=None if extras is None else extras[count : count + len(chunk)],
            heads=extras is not None,
            batch_size=batch_size,
        )
        if text is not None:
            locate(tagged, chunk, text)
        floats = attention or probabilities
        out.write(b"".join(encode(sentence.as_json(), floats) + b"\n" for sentence in tagged))
        count += len(chunk)
        if counted is not None:
            counted(sum(map(len, words)))
    return count
