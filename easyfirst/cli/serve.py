"""``easyfirst serve``: the tagger over HTTP (easyfirst.serve), run by uvicorn."""

from __future__ import annotations

import errno
from typing import Annotated

import typer

from easyfirst.cli import app
from easyfirst.cli.common import DeviceOption, ModelOption, check_device, err
from easyfirst.errors import InputError


@app.command()
def serve(
    model: ModelOption = None,
    host: Annotated[str, typer.Option(help="Address to listen on (0.0.0.0: every interface).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    device: DeviceOption = "cpu",
    max_body: Annotated[int, typer.Option(help="Largest request body, in bytes.")] = 1_000_000,
    max_sentences: Annotated[int, typer.Option(help="Most sentences in one request.")] = 100,
    max_words: Annotated[
        int, typer.Option(help="Most words in one sentence (attention with N = L steps is O(L²)).")
    ] = 200,
    max_attention: Annotated[
        int, typer.Option(help="Most attention values (steps × words) in one answer with attention.")
    ] = 250_000,
    batch_window: Annotated[
        float, typer.Option(help="Milliseconds the tagger waits for more requests to tag together.")
    ] = 2.0,
    access_log: Annotated[bool, typer.Option(help="Log each request (uvicorn's access log).")] = True,
) -> None:
    """Serve the model over HTTP: a page and a JSON API.

    GET / (a page: tag a text, explore its raindrops), GET /health and
    POST /tag (JSON: text, tokenized sentences or QE pairs in; tags, attention, probabilities out).
    Requests that arrive together are tagged together; SIGTERM finishes the requests in flight, then
    exits. See docs/serve.md."""
    from easyfirst.serve import Limits, create_app, require

    require()
    for flag, value in (
        ("--max-body", max_body),
        ("--max-sentences", max_sentences),
        ("--max-words", max_words),
        ("--max-attention", max_attention),
    ):
        if value < 1:
            raise InputError(f"{flag} must be >= 1")
    if not 0 <= port <= 65535:
        raise InputError(f"--port must be 0 to 65535, not {port}")
    if batch_window < 0:
        raise InputError("--batch-window must be >= 0")
    check_device(device)
    check_address(host, port)  # before the model is loaded, so that a busy port fails at once
    limits = Limits(body_bytes=max_body, sentences=max_sentences, words=max_words, attention=max_attention)
    served = create_app(model, device=device, limits=limits, batch_window_ms=batch_window)
    import signal

    import uvicorn

    err.print(f"serving {model or 'the bundled model'} on http://{host}:{port}/ (Ctrl-C or SIGTERM to stop)")
    # uvicorn answers SIGTERM by finishing the requests in flight, then raises the signal again once it
    # has restored this handler: a SIGTERM is how a server is told to stop, so the exit status is 0
    signal.signal(signal.SIGTERM, lambda number, frame: None)
    uvicorn.run(served, host=host, port=port, log_level="info", access_log=access_log)
    err.print("stopped")


def check_address(host: str, port: int) -> None:
    """Fail, naming the flag, unless ``host:port`` can be listened on (a busy port, an address that is
    not this machine's); uvicorn would say so only after the model is loaded, in a log line."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise InputError(f"--host {host}: {error.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            flag = "--port" if error.errno == errno.EADDRINUSE else "--host"
            raise InputError(f"{flag}: cannot listen on {host}:{port}: {error.strerror}") from None
