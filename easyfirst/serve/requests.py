"""The body of ``POST /tag``: read, checked against the limits, and turned into sentences to tag.

Every mistake is a :class:`RequestError` with an HTTP status (400 not JSON, 413 over a limit, 415 not
declared JSON, 422 a JSON of the wrong shape) and one line saying what is wrong; the server answers it
as ``{"error": message}``. Nothing here imports Starlette, so that it can be tested without a server.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from easyfirst.errors import InputError

try:  # the extra `serve`: a faster reader of JSON (decode)
    import orjson as _orjson
except ImportError:
    _orjson = None

TEXT_KEYS = ("text", "sentences")  # what a model of plain text takes
PAIR_KEYS = ("src", "mt", "alignments")  # what a model of sentence pairs (QE) takes
FLAGS = ("attention", "probabilities", "pretokenized")
# How deeply a body may nest arrays and objects: a request needs 3 levels ({"sentences": [[...]]}), and
# json's parser recurses once per level, so 100,000 "[" would exhaust the stack (a RecursionError).
MAX_DEPTH = 64


# How long the tagging thread waits after a group's first request for more (`easyfirst serve
# --batch-window`). Requests that arrive while a group is tagged join the next group anyway; the wait
# only idles the core. benchmarks/speed/serve_load.py, 2 workers on 2 cores (docs/studies/serve-load.md, "The goal
# met"): 0.25 ms against 2 ms gave 6,748 against 2,945 tokens/s for one client, 24,337 against 16,385
# for 8 and 36,366 against 29,663 for 32, in groups nearly as large (13.4 against 14.5 requests).
BATCH_WINDOW_MS = 0.25


class RequestError(Exception):
    """A bad request: ``status`` (4xx) and ``message`` (one line)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


@dataclass(frozen=True)
class Limits:
    """What one request may hold. Attention with N = L steps is O(L²) per sentence, hence ``words``."""

    body_bytes: int = 1_000_000
    sentences: int = 100
    words: int = 200  # per sentence
    # αⁿ values (steps × words, summed over the sentences) one request with "attention" may ask for:
    # 15 to 21 bytes of JSON each, so an answer stays under ~5 MB (100 × 200 words: 4,000,000, 60 MB)
    attention: int = 250_000


@dataclass
class Job:
    """What one request asks for: sentences (QE: with their ``extras``) and the optional outputs."""

    sentences: list[list[str]]
    extras: list[dict] | None = None
    attention: bool = False
    probabilities: bool = False
    text: str | None = None  # the request's "text", which ``tokens`` (easyfirst.data.text.Token) index
    tokens: list[list] | None = None

    @property
    def words(self) -> int:
        return sum(len(s) for s in self.sentences)


def check_content_type(header: str | None) -> None:
    """A body is read as JSON when its Content-Type says JSON (``application/json``, ``…+json``) or
    when it has none; any other type is refused (415), so that a form or a text/plain post, which a
    browser sends cross-site without asking, is not taken for a request."""
    kind = (header or "").split(";")[0].strip().lower()
    if kind and kind != "application/json" and not kind.endswith("+json"):
        raise RequestError(415, f"the body must be JSON (Content-Type: application/json), not {kind}")


def nesting_depth(body: bytes) -> int:
    """How deeply the JSON text ``body`` nests arrays and objects (brackets inside strings do not
    count), found without parsing, in a few passes of NumPy over the bytes. Up to the first error, this
    reads strings as a JSON parser does: a quote after an even run of backslashes ends one."""
    import numpy as np

    b = np.frombuffer(body, dtype=np.uint8)
    if not b.size:
        return 0
    at = np.arange(b.size)
    backslash = b == ord("\\")
    last_other = np.maximum.accumulate(np.where(backslash, -1, at))  # the last non-backslash up to i
    run = np.zeros(b.size, dtype=np.int64)  # the backslashes right before i
    run[1:] = at[:-1] - last_other[:-1]
    quotes = (b == ord('"')) & (run % 2 == 0)
    inside = np.cumsum(quotes) % 2 == 1  # in a string (its opening quote included)
    opens = (b == ord("[")) | (b == ord("{"))
    closes = (b == ord("]")) | (b == ord("}"))
    step = np.where(inside, 0, opens.astype(np.int64) - closes)
    return int(np.cumsum(step).max())


def parse_job(
    body: bytes, limits: Limits, pairs: bool, attention_size: Callable[[list[int]], int] = lambda lengths: 0
) -> Job:
    """The job of a request body. ``pairs``: the model tags sentence pairs (QE: src, mt, alignments)
    rather than text or tokenized sentences; ``attention_size``: the number of αⁿ values the model
    gives sentences of these lengths (Σ steps × words), checked against ``limits.attention``."""
    if len(body) > limits.body_bytes:
        raise RequestError(413, f"the body has {len(body):,} bytes, over the limit of {limits.body_bytes:,}")
    # nesting needs an opening bracket per level: a body with few of them (every usual request) is
    # not scanned
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and (depth := nesting_depth(body)) > MAX_DEPTH:
        raise RequestError(
            400, f"the body nests arrays and objects {depth:,} deep, over the limit of {MAX_DEPTH}"
        )
    request = decode(body)
    if not isinstance(request, dict):
        raise RequestError(422, f"the body must be a JSON object, not {_kind(request)}")
    own, other = (PAIR_KEYS, TEXT_KEYS) if pairs else (TEXT_KEYS, PAIR_KEYS)
    known = set(TEXT_KEYS + PAIR_KEYS + FLAGS)
    unknown = sorted(set(request) - known)
    if unknown:
        raise RequestError(422, f"unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
    for flag in FLAGS:
        if not isinstance(request.get(flag, False), bool):
            raise RequestError(422, f"{flag!r} must be true or false, not {_kind(request[flag])}")
    if any(key in request for key in other) and not any(key in request for key in own):
        model = "a QE model (sentence pairs)" if pairs else "a model of plain text"
        raise RequestError(
            422, f"this is {model}: give {' and '.join(own) if pairs else 'text or sentences'}"
        )
    try:
        sentences, extras, tokens = _pairs(request) + (None,) if pairs else _sentences(request)
    except InputError as error:
        raise RequestError(422, str(error)) from None
    if len(sentences) > limits.sentences:
        raise RequestError(
            413, f"{len(sentences)} sentences, over the limit of {limits.sentences} per request"
        )
    for k, sentence in enumerate(sentences):
        if len(sentence) > limits.words:
            raise RequestError(
                413, f"sentence {k} has {len(sentence)} words, over the limit of {limits.words} per sentence"
            )
    if request.get("attention") and (size := attention_size([len(s) for s in sentences])) > limits.attention:
        raise RequestError(
            413,
            f"the attention asked for has {size:,} values (steps × words), over the limit of "
            f"{limits.attention:,}: send fewer or shorter sentences per request",
        )
    flags = request.get("attention", False), request.get("probabilities", False)
    return Job(sentences, extras, *flags, text=request.get("text") if tokens else None, tokens=tokens)


def decode(body: bytes) -> Any:
    """The JSON value of ``body``: read by orjson where it is installed and reads it, else by Python's
    json, whose errors the answer quotes. Where orjson reads a body, json reads the same value but for
    integers beyond 64 bits, which orjson makes floats: numbers are only ever "a number" here. orjson
    refuses what json would read differently (a lone surrogate, NaN, a number beyond a double, UTF-16,
    nesting past 1,024) and json then reads it."""
    if _orjson is not None:
        try:
            return _orjson.loads(body)
        except _orjson.JSONDecodeError:
            pass
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RequestError(400, f"the body is not JSON: {error}") from None
    except ValueError as error:  # a number of more than 4,300 digits (sys.get_int_max_str_digits)
        raise RequestError(400, f"the body is not JSON we read: {str(error).split(':')[0]}") from None


def _sentences(request: dict) -> tuple[list[list[str]], None, list[list] | None]:
    """The sentences of ``text`` or ``sentences``, and for text their tokens with offsets."""
    from easyfirst.tagging.pipeline import text_tokens

    if ("text" in request) == ("sentences" in request):
        raise InputError("give either 'text' (a string) or 'sentences' (lists of tokens)")
    if "text" in request:
        text = request["text"]
        if not isinstance(text, str):
            raise InputError(f"'text' must be a string, not {_kind(text)}")
        _check_unicode(text, "'text'")
        tokens = text_tokens(text, request.get("pretokenized", False), what="'text'")
        return [[token.form for token in sentence] for sentence in tokens], None, tokens
    if request.get("pretokenized"):
        raise InputError("'pretokenized' goes with 'text'")
    given = request["sentences"]
    if not isinstance(given, list) or not given:
        raise InputError(f"'sentences' must be a non-empty list of lists of tokens, not {_kind(given)}")
    for k, sentence in enumerate(given):
        if not isinstance(sentence, list):
            raise InputError(f"sentences[{k}] must be a list of tokens, not {_kind(sentence)}")
        if not sentence:
            raise InputError(f"sentences[{k}] is empty")
        for i, token in enumerate(sentence):
            if not isinstance(token, str):
                raise InputError(f"sentences[{k}][{i}] must be a string, not {_kind(token)}")
            if not token or any(c.isspace() for c in token):
                raise InputError(f"sentences[{k}][{i}] = {token!r} is not a token (empty or with whitespace)")
            _check_unicode(token, f"sentences[{k}][{i}]")
    return given, None, None


def _pairs(request: dict) -> tuple[list[list[str]], list[dict]]:
    """QE: ``src``, ``mt`` and ``alignments`` as one line each (tokens separated by spaces, Pharaoh
    ``i-j`` pairs), or as lists of such lines."""
    from easyfirst.tagging.pipeline import qe_sentence

    missing = [key for key in PAIR_KEYS if key not in request]
    if missing:
        raise InputError(f"a QE request needs src, mt and alignments; missing {', '.join(missing)}")
    if request.get("pretokenized"):
        raise InputError("'pretokenized' goes with 'text'")
    values = {key: request[key] for key in PAIR_KEYS}
    if all(isinstance(v, str) for v in values.values()):
        values = {key: [v] for key, v in values.items()}
    for key, value in values.items():
        if not isinstance(value, list) or not all(isinstance(line, str) for line in value):
            raise InputError(f"{key!r} must be a string or a list of strings, not {_kind(value)}")
        for k, line in enumerate(value):
            _check_unicode(line, f"{key}[{k}]")
    counts = {len(v) for v in values.values()}
    if len(counts) != 1 or 0 in counts:
        raise InputError("src, mt and alignments must hold the same (non-zero) number of lines")
    sentences, extras = [], []
    for k, (src, mt, alignments) in enumerate(zip(*values.values(), strict=True)):
        words, extra = qe_sentence(src, mt, alignments, what=f"line {k}")
        if not words:
            raise InputError(f"mt line {k} is empty")
        sentences.append(words)
        extras.append(extra)
    return sentences, extras


def _check_unicode(text: str, what: str) -> None:
    """JSON's ``\\ud800`` escapes give a lone surrogate, which no UTF-8 answer can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InputError(f"{what} holds {text[error.start]!r}, a lone surrogate, not a character") from None


def _kind(value: Any) -> str:
    """A JSON value's kind, for messages."""
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}
    names |= {dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)
