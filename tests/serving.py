"""`easyfirst serve` in a subprocess on a free loopback port, spoken to over HTTP (tests/serve/test_serve*.py)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from conftest import dies_with_the_test, end_session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``easyfirst serve ARGS`` on a free port, stopped with SIGTERM (:meth:`stop`). As a context
    manager (or with :meth:`close` in a ``finally``), whatever is left of it is killed at the end."""

    def __init__(self, *args: str, env: dict[str, str] | None = None):
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "easyfirst", "serve", "--port", str(self.port), *args],
            env=None if env is None else {**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=dies_with_the_test(
                lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)
            ),  # as a terminal's
            start_new_session=True,  # close() kills the workers too
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.get("/health")[0] == 200:
                    return
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                output = self.process.stdout.read().decode()  # to its end: every writer is dead
                self.close()
                raise AssertionError(f"the server did not start: {output}")
            time.sleep(0.2)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exception) -> None:
        self.close()

    def close(self) -> None:
        """Kill the server and its workers, if any is left (:func:`conftest.end_session`)."""
        end_session(self.process)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def get(self, path: str) -> tuple[int, bytes]:
        with urllib.request.urlopen(self.url(path), timeout=30) as response:
            return response.status, response.read()

    def post(self, body: bytes | dict, path: str = "/tag") -> tuple[int, dict]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        request = urllib.request.Request(self.url(path), data, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def raw(self, body: bytes, headers: dict[str, str], path: str = "/tag") -> tuple[int, bytes, dict]:
        """POST ``body`` with exactly ``headers`` (and Content-Length): status, body, response headers."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.putrequest("POST", path, skip_accept_encoding=True)
            for name, value in {**headers, "Content-Length": str(len(body))}.items():
                connection.putheader(name, value)
            connection.endheaders(body)
            response = connection.getresponse()
            return response.status, response.read(), dict(response.getheaders())
        finally:
            connection.close()

    def children(self) -> list[int]:
        """The process ids of the server's child processes (its workers)."""
        pid = self.process.pid
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            return [int(child) for child in listing.read().split()]

    def stop(self, sent: int = signal.SIGTERM) -> tuple[int, str]:
        """Send ``sent``; the exit status and the output, once the server has exited."""
        self.process.send_signal(sent)
        try:
            output = self.process.communicate(timeout=60)[0].decode()
        except subprocess.TimeoutExpired:
            self.close()
            raise
        return self.process.returncode, output


def keep_alive_load(port: int, clients: int, stop, after: float = 1.0) -> dict[str, int]:
    """``clients`` threads, each on one keep-alive connection, sending ``POST /tag`` one request after
    the other; ``stop()`` is called ``after`` seconds into the load. A client ends at its first answer
    with ``Connection: close`` or its first failure, and never connects again. The outcomes of the
    requests sent, counted: ``answered`` (200), ``unanswered`` (the connection closed before an answer
    began) and ``reset`` (ECONNRESET or EPIPE), and ``closed`` (answers that said ``Connection: close``).
    """
    counts = {"answered": 0, "unanswered": 0, "reset": 0, "closed": 0, "other": 0}
    lock = threading.Lock()
    body = json.dumps({"sentences": [["She", "reads", "a", "book", "."]]}).encode()
    headers = {"Content-Type": "application/json"}
    connections = []
    for _ in range(clients):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.connect()
        connection.auto_open = 0  # a closed connection is not opened again behind the client's back
        connections.append(connection)

    def client(connection: http.client.HTTPConnection) -> None:
        outcome = "answered"
        try:
            while outcome == "answered":
                try:
                    connection.request("POST", "/tag", body, headers)
                    response = connection.getresponse()
                    response.read()
                    if response.status != 200:
                        outcome = "other"
                    elif response.getheader("connection", "").lower() == "close":
                        outcome = "closed"
                except http.client.RemoteDisconnected:
                    outcome = "unanswered"
                except (ConnectionResetError, BrokenPipeError):
                    outcome = "reset"
                with lock:
                    counts["answered" if outcome == "closed" else outcome] += 1
                    counts["closed"] += outcome == "closed"
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(connection,)) for connection in connections]
    for thread in threads:
        thread.start()
    time.sleep(after)
    stop()
    for thread in threads:
        thread.join(timeout=120)
    return counts
