"""The connections and processes of `easyfirst serve`, without uvicorn running: easyfirst/serve/connections.py
(Connection: close on every answer once the server stops) and easyfirst/serve/processes.py (the listening
socket of one worker, the address held for several, the parent that stops the others when a worker
dies)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import time

import pytest

from conftest import extra
from easyfirst.serve.connections import CLOSE, ClosingApp
from easyfirst.serve.processes import SIGNALS, _wait, listen

extra("uvicorn", "serve")


def answer_headers(stopping: bool | None) -> list:
    """The headers ClosingApp sends for an app that answers with one header; ``stopping``: the server's
    should_exit (None: no server set)."""

    async def inner(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x-a", b"1")]})
        await send({"type": "http.response.body", "body": b"ok"})

    app = ClosingApp(inner)
    if stopping is not None:
        app.server = type("Server", (), {"should_exit": stopping})()
    sent = []

    async def send(message):
        sent.append(message)

    asyncio.run(app({"type": "http"}, None, send))
    assert sent[1] == {"type": "http.response.body", "body": b"ok"}
    return sent[0]["headers"]


def test_connection_close_is_said_only_once_the_server_stops():
    assert answer_headers(None) == [(b"x-a", b"1")]
    assert answer_headers(False) == [(b"x-a", b"1")]
    assert answer_headers(True) == [(b"x-a", b"1"), CLOSE]


def test_one_worker_listens_and_several_hold_the_address_for_their_own_sockets():
    one = listen("127.0.0.1", 0)
    try:
        with socket.create_connection(one.getsockname(), timeout=5):
            pass
    finally:
        one.close()
    held = listen("127.0.0.1", 0, workers=2)  # bound with SO_REUSEPORT, not listening
    try:
        address = held.getsockname()
        with pytest.raises(ConnectionRefusedError), socket.create_connection(address, timeout=5):
            pass
        second = listen(*address, workers=2)  # a worker's socket beside it on the same address
        assert second.getsockname() == address
        second.close()
    finally:
        held.close()


@contextlib.contextmanager
def handlers_kept():
    kept = {number: signal.getsignal(number) for number in SIGNALS}
    try:
        yield
    finally:
        for number, handler in kept.items():
            signal.signal(number, handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)


def child(then) -> int:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            then()
        finally:
            os._exit(0)
    return pid


def test_a_worker_that_dies_stops_the_others_and_fails_the_server(capfd):
    with handlers_kept():
        dying = child(lambda: os._exit(3))
        waiting = child(lambda: time.sleep(60))  # ended by the parent's SIGTERM
        start = time.monotonic()
        try:
            assert _wait({dying: 0, waiting: 1}) == 1
        finally:
            for pid in (dying, waiting):
                with contextlib.suppress(ProcessLookupError, ChildProcessError):
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
    assert time.monotonic() - start < 30
    assert f"worker 0 (process {dying}) exited (code 3): stopping" in capfd.readouterr().err


def drains() -> None:
    """A worker that ends with status 0 on SIGTERM, as uvicorn's does after draining."""
    signal.signal(signal.SIGTERM, lambda number, frame: os._exit(0))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
    time.sleep(60)


def test_workers_stopped_when_asked_end_the_server_with_status_0():
    with handlers_kept():
        # the signals held until _wait has its handler in place (as serve's run holds them), in the
        # workers until theirs is
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
        quiet = [child(drains) for _ in range(2)]
        parent = os.getpid()
        # the mask holds this thread only: under pytest-xdist another thread of this process may take a
        # SIGTERM before _wait's handler is in place, so until then one does nothing, and the signaller
        # repeats its SIGTERM until it is stopped
        signal.signal(signal.SIGTERM, lambda number, frame: None)
        signaller = child(lambda: [(os.kill(parent, signal.SIGTERM), time.sleep(0.05)) for _ in range(1200)])
        try:
            assert _wait({pid: k for k, pid in enumerate(quiet)}) == 0
        finally:
            for pid in (*quiet, signaller):
                with contextlib.suppress(ProcessLookupError, ChildProcessError):
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
