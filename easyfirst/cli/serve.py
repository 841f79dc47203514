"""``easyfirst serve``: the tagger over HTTP (easyfirst.serve), run by uvicorn."""

from __future__ import annotations

import errno
from typing import Annotated

import typer

from easyfirst.cli.app import app
from easyfirst.cli.common import DeviceOption, ModelOption, check_device, check_option, err, say_backend
from easyfirst.errors import InputError
from easyfirst.fields import Rule, at_least, non_negative, positive
from easyfirst.serve.admission import MAX_QUEUE_WORDS
from easyfirst.serve.requests import BATCH_WINDOW_MS

GracefulOption = Annotated[
    float,
    typer.Option(
        metavar="SECONDS",
        help="Seconds a stop (SIGTERM, Ctrl-C) waits for the requests in flight to be answered.",
    ),
]
MaxQueueOption = Annotated[
    int,
    typer.Option(
        metavar="WORDS",
        help="Most words waiting to be tagged in each worker process: a request beyond them is refused "
        "with 503 and Retry-After (one is always taken when none waits).",
    ),
]
DeadlineOption = Annotated[
    float | None,
    typer.Option(
        metavar="SECONDS",
        help="Answer each request within this long: one that the words waiting would keep past it "
        "is refused (503), one still untagged when it passes gets 504. \\[default: none]",
    ),
]
WorkersOption = Annotated[
    int | None,
    typer.Option(
        help="Server processes sharing the model's weights (default: one per core on the CPU, 1 on a GPU)."
    ),
]


@app.command()
def serve(
    model: ModelOption = None,
    host: Annotated[
        str, typer.Option(metavar="ADDRESS", help="Address to listen on (0.0.0.0: every interface).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(metavar="PORT", help="Port to listen on.")] = 8000,
    device: DeviceOption = "cpu",
    max_body: Annotated[
        int, typer.Option(metavar="BYTES", help="Largest request body, in bytes.")
    ] = 1_000_000,
    max_sentences: Annotated[int, typer.Option(help="Most sentences in one request.")] = 100,
    max_words: Annotated[
        int, typer.Option(help="Most words in one sentence (attention with N = L steps is O(L²)).")
    ] = 200,
    max_attention: Annotated[
        int, typer.Option(help="Most attention values (steps × words) in one answer with attention.")
    ] = 250_000,
    batch_window: Annotated[
        float,
        typer.Option(metavar="MS", help="Milliseconds the tagger waits for more requests to tag together."),
    ] = BATCH_WINDOW_MS,
    max_queue: MaxQueueOption = MAX_QUEUE_WORDS,
    deadline: DeadlineOption = None,
    graceful_timeout: GracefulOption = 20.0,
    access_log: Annotated[bool, typer.Option(help="Log each request (uvicorn's access log).")] = True,
    workers: WorkersOption = None,
) -> None:
    """Serve the model over HTTP: a page and a JSON API.

    GET / (a page: tag a text, explore its raindrops), GET /health and
    POST /tag (JSON: text, tokenized sentences or QE pairs in; tags, attention, probabilities out).
    Requests that arrive together are tagged together; --workers processes, forked after the model is
    loaded, share its weights. Under more load than it can tag, each process lets --max-queue words
    wait and refuses the rest (503 with Retry-After), so that latency and memory stay bounded. SIGTERM
    or Ctrl-C stops taking connections, answers every request received (within --graceful-timeout
    seconds) and closes idle connections, then exits.
    See docs/serve.md."""
    from easyfirst.parallel.cores import available_cores
    from easyfirst.serve import Admission, Limits, create_app, require

    require()
    check_numbers(
        {
            "--max-body": max_body,
            "--max-sentences": max_sentences,
            "--max-words": max_words,
            "--max-attention": max_attention,
            "--workers": 1 if workers is None else workers,
            "--max-queue": max_queue,
        },
        port,
        {"--batch-window": batch_window, "--graceful-timeout": graceful_timeout},
    )
    check_option("--deadline", deadline, positive())
    cpu = device == "cpu"
    if workers is None:
        workers = available_cores() if cpu else 1
    if workers > 1 and not cpu:
        raise InputError(
            f"--workers {workers}: more than one worker needs --device cpu (CUDA does not survive a fork)"
        )
    check_device(device)
    sock = bind(host, port, workers)  # before the model is loaded, so that a busy port fails at once
    limits = Limits(body_bytes=max_body, sentences=max_sentences, words=max_words, attention=max_attention)
    import torch

    if workers > 1:  # no thread pool in the process that forks: each worker starts its own
        torch.set_num_threads(1)
    # create_app loads the compiled loops: a first start after an install compiles them and says so
    err.print(f"loading {model or 'the bundled model'}", markup=False)
    admission = Admission(max_words=max_queue, deadline=deadline)
    served = create_app(
        model, device=device, limits=limits, batch_window_ms=batch_window, admission=admission
    )
    say_backend(served.tagger)
    from easyfirst.serve.connections import stack
    from easyfirst.serve.processes import run

    err.print(
        f"serving {model or 'the bundled model'} on http://{host}:{port}/ with {workers} worker process(es) "
        f"({stack()}; Ctrl-C or SIGTERM to stop)",
        markup=False,
    )
    threads = max(1, available_cores() // workers) if workers > 1 else torch.get_num_threads()
    code = run(
        served, sock, workers=workers, threads=threads, access_log=access_log, graceful=graceful_timeout
    )
    err.print("stopped" if code == 0 else "stopped: a worker failed")
    raise typer.Exit(code)


def check_numbers(counts: dict[str, int], port: int, durations: dict[str, float]) -> None:
    """Refuse a count below 1, a port outside 0-65535 or a negative duration, naming the flag."""
    for flag, value in counts.items():
        check_option(flag, value, at_least(1))
    check_option("--port", port, Rule(lambda v: 0 <= v <= 65535, "0 to 65535"))
    for flag, value in durations.items():
        check_option(flag, value, non_negative())


def bind(host: str, port: int, workers: int):
    """The listening socket, or an error naming the flag (a busy port, an address that is not this
    machine's); uvicorn would say so only after the model is loaded, in a log line."""
    import socket

    from easyfirst.serve.processes import listen

    try:
        return listen(host, port, workers)
    except socket.gaierror as error:
        raise InputError(f"--host {host}: {error.strerror}") from None
    except OSError as error:
        flag = "--port" if error.errno == errno.EADDRINUSE else "--host"
        raise InputError(f"{flag}: cannot listen on {host}:{port}: {error.strerror}") from None
