"""`easyfirst serve` in a subprocess on a free loopback port, spoken to over HTTP (tests/test_serve*.py)."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``easyfirst serve ARGS`` on a free port, stopped with SIGTERM."""

    def __init__(self, *args: str):
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "easyfirst", "serve", "--port", str(self.port), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.get("/health")[0] == 200:
                    return
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise AssertionError(f"the server did not start: {self.process.stdout.read().decode()}")
            time.sleep(0.2)

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
        self.process.send_signal(sent)
        output = self.process.communicate(timeout=60)[0].decode()
        return self.process.returncode, output
