"""The ASGI app: ``GET /health``, ``GET /`` (the page) and ``POST /tag``, on Starlette.

A thin layer: the body is checked by easyfirst.serve.requests, tagged by the batcher
(easyfirst.serve.batching, through easyfirst.tagging.pipeline) and answered as JSON. Every error is JSON
``{"error": "what is wrong"}`` with its status: 4xx for a bad request, 500 only for a fault of ours.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from easyfirst.serve.batching import Batcher
from easyfirst.serve.requests import Limits, RequestError, check_content_type, parse_job


def build_app(tagger, name: str, limits: Limits, window: float) -> Starlette:
    """The app serving ``tagger`` (its model called ``name`` in answers)."""
    from easyfirst.serve.page import page
    from easyfirst.tasks import get_task
    from easyfirst.viz.web import tag_colors

    task = get_task(tagger.config.data.task)
    pairs = task.format.text_column(tagger.config.data) is None  # a model of sentence pairs (QE)
    batcher = Batcher(tagger, window=window)
    about = {"model": name, "task": task.name}
    html = page({**about, "colors": tag_colors(sorted(tagger.tags))}, pairs)
    attention_size = attention_counter(tagger.model)

    async def health(request: Request) -> JSONResponse:
        return JSONResponse(
            {"status": "ok", **about, "requests": batcher.requests, "batches": batcher.batches}
        )

    async def index(request: Request) -> HTMLResponse:
        return HTMLResponse(html)

    async def tag(request: Request) -> JSONResponse:
        check_content_type(request.headers.get("content-type"))
        body = await read_body(request, limits.body_bytes)
        job = parse_job(body, limits, pairs, attention_size)
        tagged = await batcher.tag(job)
        answer = {**about, "sentences": [sentence.as_json() for sentence in tagged]}
        if job.probabilities:
            answer["tagset"] = tagger.tags
        return JSONResponse(answer)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        batcher.start()
        try:
            yield
        finally:  # uvicorn has answered the requests in flight (SIGTERM: it stops taking new ones first)
            batcher.stop()

    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/", index, methods=["GET"]),
            Route("/tag", tag, methods=["POST"]),
        ],
        exception_handlers={
            RequestError: lambda request, error: error_response(error.status, error.message),
            HTTPException: lambda request, error: error_response(error.status_code, error.detail),
            Exception: lambda request, error: error_response(500, f"internal error: {type(error).__name__}"),
        },
        lifespan=lifespan,
    )


async def read_body(request: Request, limit: int) -> bytes:
    """The body, read no further than ``limit`` bytes (a client may not send a gigabyte to be refused)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise RequestError(413, f"the body has {int(declared):,} bytes, over the limit of {limit:,}")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise RequestError(413, f"the body is over the limit of {limit:,} bytes")
    except ClientDisconnect:
        raise RequestError(400, "the client went away before the body ended") from None
    return bytes(body)


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
