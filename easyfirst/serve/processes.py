"""`easyfirst serve --workers K`: K server processes on one listening socket, forked after the model is
loaded, so that they share its weights rather than copy them.

The parent process binds the address, loads the model (easyfirst.serve.create_app) and forks K
children; each listens on a socket of its own on that address (SO_REUSEPORT) and runs uvicorn on it
with its own tagging thread (easyfirst.serve.batching), and the kernel spreads new connections over
them. The weights are pages that no child writes, so they stay shared after the fork (copy-on-write):
an extra worker costs its own interpreter state and the buffers of its forward passes, not another copy
of the model (docs/studies/serve-load.md, measured). The parent only waits: SIGTERM or Ctrl-C (SIGINT) is passed on
to every worker as SIGTERM, each drains its connections (easyfirst.serve.connections), and the parent
exits when all have; a worker that dies stops the others. The signals are blocked from before the fork until each process has its handlers. Each
worker asks the kernel for SIGTERM when the parent dies (easyfirst.atomic.die_with_parent, as every
process the project starts), so that none is left behind even if the parent is killed.

With one worker nothing is forked: uvicorn runs in this process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys

from easyfirst.atomic import INTERRUPTS, die_with_parent

SIGNALS = {signal.SIGTERM, signal.SIGINT}


def listen(host: str, port: int, workers: int = 1) -> socket.socket:
    """The socket bound to ``host:port`` (an error here if it cannot be): listening, for one worker;
    for several, bound with SO_REUSEPORT but not listening, so that it holds the address while each
    worker listens on a socket of its own beside it (:func:`_own_socket`)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    return _socket(family, kind, proto, address, shared=workers > 1)


def _socket(family, kind, proto, address, shared: bool) -> socket.socket:
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if shared:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
        if not shared:
            sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def _own_socket(held: socket.socket) -> socket.socket:
    """A worker's listening socket on the address that ``held`` holds. With SO_REUSEPORT the kernel
    spreads new connections evenly over the workers' sockets; one socket accepted by all would give
    each connection to whichever worker woke first, and 32 keep-alive clients that connect at once
    went all to one worker in one of three tries (docs/studies/serve-load.md)."""
    own = _socket(held.family, held.type, held.proto, held.getsockname(), shared=True)
    own.listen(2048)
    held.close()
    return own


def run(app, sock: socket.socket, *, workers: int, threads: int, access_log: bool, graceful: float) -> int:
    """Serve ``app`` on ``sock`` in ``workers`` processes of ``threads`` torch threads each, until
    SIGTERM or SIGINT, then drain for at most ``graceful`` seconds (easyfirst.serve.connections); the
    exit status (0: every worker stopped when asked)."""
    import uvicorn

    from easyfirst.serve.connections import ClosingApp, protocol

    config = uvicorn.Config(  # loop "auto": uvloop where installed (the extra `serve`), else asyncio's
        ClosingApp(app),
        log_level="info",
        access_log=access_log,
        http=protocol(),
        timeout_graceful_shutdown=graceful,
    )
    # blocked before anything else, until each process has its own handlers: a signal meanwhile waits
    # for them (a no-op handler installed before the block swallowed one, and the server came up)
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        # one received during the start that was lost on its way: raised inside torch's import, whose C
        # code imports NumPy and clears the error it gets (the server came up 6 s after a SIGTERM)
        INTERRUPTS.check()
    except KeyboardInterrupt:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
        raise
    if workers == 1:
        _serve(config, sock)
        return 0
    children = {_fork(config, sock, threads): k for k in range(workers)}
    return _wait(children)


def _serve(config, sock: socket.socket) -> None:
    """uvicorn on ``sock`` until SIGTERM or SIGINT. Its handler of the two is in place before the
    signals are unblocked and before it runs, so that a signal before uvicorn installs it (the same)
    is not lost: the server then stops as soon as it has started. It is also the handler uvicorn puts
    back when it has stopped, and raises the signal again to: one more call that changes nothing (the
    exit status stays 0: a signal is how a server is told to stop)."""
    import uvicorn

    server = uvicorn.Server(config)
    config.app.server = server  # ClosingApp: `Connection: close` once the server stops
    for number in SIGNALS:
        signal.signal(number, server.handle_exit)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
    server.run(sockets=[sock])


def _fork(config, sock: socket.socket, threads: int) -> int:
    """A worker: uvicorn on ``sock`` with ``threads`` torch threads; its process id."""
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        for number in SIGNALS:  # a signal before uvicorn's handler is in place ends the worker at once
            signal.signal(number, _leave)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
        die_with_parent(signal.SIGTERM)  # SIGTERM: the worker drains what it holds, then ends
        import torch

        torch.set_num_threads(threads)
        _serve(config, _own_socket(sock))
        code = 0
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _leave(number, frame) -> None:
    """A worker's exit on a signal that comes before uvicorn's handler is in place."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _wait(children: dict[int, int]) -> int:
    """Wait for every worker; on SIGTERM or SIGINT (or a worker's death), SIGTERM the rest."""
    stopping = False

    def stop(number=None, frame=None) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    for number in SIGNALS:
        signal.signal(number, stop)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
    status = 0
    while children:
        pid, code = os.waitpid(-1, 0)
        if pid not in children:
            continue
        worker = children.pop(pid)
        code = os.waitstatus_to_exitcode(code)
        if code != 0 or not stopping:
            if not stopping:
                print(f"worker {worker} (process {pid}) exited (code {code}): stopping", file=sys.stderr)
            status = 1
            stop()
    return status
