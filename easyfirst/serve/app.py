"""The ASGI app: ``GET /health``, ``GET /`` (the page) and ``POST /tag``.

A thin layer: the body is checked by easyfirst.serve.requests, tagged by the batcher
(easyfirst.serve.batching, through Tagger.tag) and answered as JSON. Every error is JSON
``{"error": "what is wrong"}`` with its status: 4xx for a bad request, 500 only for a fault of ours.

``POST /tag``, nearly every request a server gets, is answered by :class:`TagRoute` in plain ASGI;
the rest (the page, /health, unknown routes and methods) by Starlette. Starlette's request, response,
router and middleware cost a one-sentence request more CPU than its tagging's share (docs/studies/serve-load.md,
"Where a request's time goes"); the answers are byte for byte the same.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from easyfirst.serve.admission import Admission, Gate, Overloaded
from easyfirst.serve.batching import Batcher
from easyfirst.serve.requests import Limits, RequestError, check_content_type, parse_job
from easyfirst.serve.timings import DECODE, ENCODE, TIMINGS, WRITE, cpu_ns
from easyfirst.tagging.entities import locate
from easyfirst.tagging.jsonl import encode  # the writer of easyfirst tag's JSONL too: the same bytes


def build_app(tagger, name: str, limits: Limits, window: float, admission: Admission = Admission()) -> Served:
    """The app serving ``tagger`` (its model called ``name`` in answers); ``admission``: the words a
    process lets wait and the requests' deadline (easyfirst.serve.admission)."""
    from easyfirst.serve.page import page
    from easyfirst.tasks import get_task
    from easyfirst.viz.web import tag_colors

    task = get_task(tagger.config.data.task)
    pairs = task.format.text_column(tagger.config.data) is None  # a model of sentence pairs (QE)
    gate = Gate(admission)
    batcher = Batcher(tagger, window=window, gate=gate)
    about = {"model": name, "task": task.name}
    html = page({**about, "colors": tag_colors(sorted(tagger.tags))}, pairs)
    attention_size = attention_counter(tagger.model)

    async def index(request: Request) -> HTMLResponse:
        return HTMLResponse(html)

    async def health(request: Request) -> JSONResponse:
        found = {"status": "ok", **about, "requests": batcher.requests, "batches": batcher.batches}
        found |= gate.as_json()  # answered here, on the event loop: never queued behind the tagging
        return JSONResponse(found | ({"timings": TIMINGS.as_json()} if TIMINGS.on else {}))

    @contextlib.asynccontextmanager
    async def lifespan(app):
        batcher.start()
        try:
            yield
        finally:  # uvicorn has answered the requests in flight (SIGTERM: it stops taking new ones first)
            batcher.stop()

    def answer(job, tagged) -> bytes:
        if job.tokens is not None:  # text: each token's characters in it
            locate(tagged, job.tokens, job.text)
        found = {**about, "sentences": [sentence.as_json() for sentence in tagged]}
        if job.probabilities:
            found["tagset"] = tagger.tags
        return encode(found, floats=job.attention or job.probabilities)

    tag = TagRoute(
        batcher, limits.body_bytes, lambda body: parse_job(body, limits, pairs, attention_size), answer, gate
    )
    others = Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/", index, methods=["GET"]),
            Route("/tag", tag, methods=["POST"]),  # reached only where Served does not (a root path)
        ],
        exception_handlers={
            RequestError: lambda request, error: error_response(error.status, error.message),
            HTTPException: lambda request, error: error_response(error.status_code, error.detail),
            Exception: lambda request, error: error_response(500, f"internal error: {type(error).__name__}"),
        },
        lifespan=lifespan,
    )
    return Served(others, tag)


class Served:
    """The app: ``POST /tag`` straight to :class:`TagRoute`, the rest (and the lifespan) to Starlette."""

    def __init__(self, others: Starlette, tag: TagRoute):
        self.others, self.tag = others, tag

    @property
    def tagger(self):
        """The easyfirst.api.Tagger it serves."""
        return self.tag.batcher.tagger

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["path"] == "/tag" and scope["method"] == "POST":
            return await self.tag(scope, receive, send)
        return await self.others(scope, receive, send)


class TagRoute:
    """``POST /tag`` in plain ASGI: the body checked (``parse``: bytes to a Job), admitted by the
    gate (or refused: 503), tagged by the batcher, answered (``answer``: a job and its tagged sentences
    to JSON)."""

    def __init__(self, batcher: Batcher, body_bytes: int, parse: Callable, answer: Callable, gate: Gate):
        self.batcher, self.body_bytes, self.parse, self.answer = batcher, body_bytes, parse, answer
        self.gate = gate

    async def __call__(self, scope, receive, send) -> None:
        timed, arrived, extra = TIMINGS.on, time.monotonic(), []
        try:
            start = cpu_ns() if timed else 0
            headers = scope["headers"]
            check_content_type(header(headers, b"content-type"))
            body = await read_body(header(headers, b"content-length"), receive, self.body_bytes)
            self.gate.check_room()  # a request refused before its body is parsed
            job = self.parse(body)
            if timed:
                TIMINGS.add(DECODE, cpu_ns() - start)
            tagged = await self.admitted(job, arrived)
            start = cpu_ns() if timed else 0
            status, content = 200, self.answer(job, tagged)
            if timed:
                TIMINGS.add(ENCODE, cpu_ns() - start)
        except Overloaded as error:
            status, content = 503, encode({"error": error.message, "retry_after": error.retry_after})
            extra = [(b"retry-after", str(error.retry_after).encode())]
        except RequestError as error:
            status, content = error.status, encode({"error": error.message})
        except Exception as error:  # as Starlette's error middleware: answered, then raised for the log
            await respond(send, 500, encode({"error": f"internal error: {type(error).__name__}"}))
            raise
        start = cpu_ns() if timed else 0
        await respond(send, status, content, extra)
        if timed:
            TIMINGS.add(WRITE, cpu_ns() - start, requests=1)

    async def admitted(self, job, arrived: float) -> list:
        """``job`` tagged, if the gate admits it (else :class:`Overloaded`), its words counted as
        waiting until then; past its deadline untagged, a 504."""
        self.gate.admit(job.words, arrived)
        deadline, tagged = self.gate.admission.deadline, False
        try:
            found = await self.batcher.tag(job, math.inf if deadline is None else arrived + deadline)
            tagged = True
            return found
        finally:
            self.gate.release(job.words, tagged)


def header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    """The first value of header ``name`` (lower case), as Starlette's ``request.headers.get``."""
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


async def respond(send, status: int, content: bytes, extra: list[tuple[bytes, bytes]] = ()) -> None:
    """A JSON answer, with the headers of Starlette's JSONResponse (in its order), then ``extra``."""
    headers = [(b"content-length", str(len(content)).encode()), (b"content-type", b"application/json")]
    headers += extra
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})


async def read_body(declared: str | None, receive, limit: int) -> bytes:
    """The body, read from the ASGI messages no further than ``limit`` bytes (a client may not send a
    gigabyte to be refused); ``declared``: its Content-Length header."""
    declared = declared or ""
    if declared.isdigit() and int(declared) > limit:
        raise RequestError(413, f"the body has {int(declared):,} bytes, over the limit of {limit:,}")
    message = await receive()
    if message["type"] == "http.request" and not message.get("more_body", False):
        body = message.get("body", b"")  # the whole body in one message: no copy
        if len(body) > limit:
            raise RequestError(413, f"the body is over the limit of {limit:,} bytes")
        return body
    body = bytearray()
    while True:
        if message["type"] == "http.disconnect":
            raise RequestError(400, "the client went away before the body ended")
        body += message.get("body", b"")
        if len(body) > limit:
            raise RequestError(413, f"the body is over the limit of {limit:,} bytes")
        if not message.get("more_body", False):
            return bytes(body)
        message = await receive()


def attention_counter(model) -> Callable[[list[int]], int]:
    """The number of αⁿ values ``model`` gives sentences of the lengths given: Σ N_b × L_b (no sketch
    steps: none)."""
    import torch

    from easyfirst.model.sketch import sentence_steps

    if model.decoder is None:
        return lambda lengths: 0

    def size(lengths: list[int]) -> int:
        words = torch.tensor(lengths, dtype=torch.long)
        return int((sentence_steps(words, model.steps, model.steps_beyond_length) * words).sum())

    return size


def error_response(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def model_name(path: str | Path | None) -> str:
    """The name answers give a model: its run folder's name, or the bundled model's."""
    from easyfirst.resources import model_folder

    return model_folder(path).resolve().name
