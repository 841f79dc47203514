"""The HTTP connections of `easyfirst serve`: uvicorn's own (its protocols, its graceful shutdown), with
what it does not do for a server that drains (docs/serve.md, "Stopping"):

- a request that is not HTTP (``Content-Length: abc``, a garbage request line) is answered in JSON,
  ``{"error": "malformed HTTP request: …"}``, like every other 4xx, not in uvicorn's plain text;
- once the server stops (SIGTERM, Ctrl-C), every answer says ``Connection: close``, so that a client on
  a keep-alive connection sends nothing more there; uvicorn closed such a connection after the answer
  without saying so, and the client's next request, already on its way, was met by a TCP reset;
- a connection idle when the server stops is not closed at once: for :data:`IDLE_GRACE` seconds a
  request that arrives on it (one sent before the client could know) is still answered, with
  ``Connection: close``; then it is closed gently (:data:`LINGER`).

Two protocols, as uvicorn has: :class:`HttpTools` (httptools' C parser, from the extra ``serve``) where
httptools is installed, else :class:`H11` (h11, pure Python, which uvicorn always has); :func:`protocol`
picks. Both answer malformed HTTP with h11's verdict: httptools' own messages differ and it lets a
request without ``Host`` through, so :class:`HttpTools` asks h11 about the request head it could not
read (or that lacks ``Host``, or grows past h11's limit) and answers what h11 answers.

uvicorn's timeout_graceful_shutdown bounds the whole drain (``--graceful-timeout``).
"""

from __future__ import annotations

import http
import json

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from easyfirst.serve.timings import HTTP, TIMINGS, cpu_ns

EXTRA = '"easyfirst[serve]"'

IDLE_GRACE = 1.0  # seconds an idle keep-alive connection may still bring a request once the server stops
LINGER = 1.0  # seconds a closed connection still reads (and drops) what the client sent, until it closes
CLOSE = (b"connection", b"close")
MAX_HEAD = 16 * 1024  # h11's limit on a request head (its 431), unless uvicorn is given another


class ClosingApp:
    """The ASGI ``app``, with ``Connection: close`` on the answer to every request begun once ``server``
    (a uvicorn.Server, set before it runs) is stopping: the client learns not to send on that
    connection."""

    def __init__(self, app):
        self.app = app
        self.server = None

    async def __call__(self, scope, receive, send):
        # a request begun before the stop needs no wrapping: uvicorn's stop closes its connection after
        # the answer (_Draining.shutdown), and says so; a wrapped send costs every request ~µs
        if scope["type"] != "http" or self.server is None or not self.server.should_exit:
            return await self.app(scope, receive, send)

        async def sending(message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                message = {**message, "headers": [*headers, CLOSE] if CLOSE not in headers else headers}
            await send(message)

        return await self.app(scope, receive, sending)


class _Connection(h11.Connection):
    """h11's connection, keeping the last error in what the client sent (uvicorn keeps only its own
    message for it)."""

    error: h11.RemoteProtocolError | None = None

    def next_event(self):
        try:
            return super().next_event()
        except h11.RemoteProtocolError as error:
            self.error = error
            raise


def malformed(error: h11.RemoteProtocolError | None) -> bytes:
    """The answer to what h11 could not read, in JSON: the status h11 suggests (400; 431 for headers too
    large) and its reason, without the bytes it quotes; then the connection closes."""
    status = 400 if error is None else error.error_status_hint
    reason = "invalid HTTP request" if error is None else str(error).partition(": bytearray(")[0]
    body = json.dumps({"error": f"malformed HTTP request: {reason}"}).encode()
    head = (
        f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


def h11_verdict(data: bytes, max_size: int | None) -> h11.RemoteProtocolError | None:
    """What h11 finds wrong in ``data``, the start of a request (None: nothing, so far)."""
    connection = h11.Connection(
        h11.SERVER, **({} if max_size is None else {"max_incomplete_event_size": max_size})
    )
    connection.receive_data(data)
    try:
        while connection.next_event() not in (h11.NEED_DATA, h11.PAUSED):
            pass
    except h11.RemoteProtocolError as error:
        return error
    return None


class _Draining:
    """What both protocols add to uvicorn's: the stop's gentle close, and the time spent reading HTTP
    (easyfirst.serve.timings)."""

    closing = False

    def shutdown(self) -> None:
        """Called by uvicorn when the server stops: a request in flight is answered (with ``Connection:
        close``, by :class:`ClosingApp`), then the connection closed; an idle one waits
        :data:`IDLE_GRACE` seconds for a request before it is closed."""
        if self.cycle is None or self.cycle.response_complete:
            if self.timeout_keep_alive_task is not None:  # uvicorn's keep-alive timer: a request cancels it
                self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = self.loop.call_later(IDLE_GRACE, self.timeout_keep_alive_handler)
        else:
            self.cycle.keep_alive = False

    def _linger(self) -> None:
        """Close the connection gently: our half first (FIN, after what was written), then, while
        :data:`LINGER` seconds pass or until the client closes its half, what it sends is read and
        dropped. Closing both halves at once, as uvicorn does, makes the kernel answer bytes that were
        unread or still on their way with a TCP reset, which can also destroy an answer not yet read."""
        self.closing = True
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()
        self.loop.call_later(LINGER, self.transport.close)

    def _answer_malformed(self, error: h11.RemoteProtocolError | None) -> None:
        self.transport.write(malformed(error))
        self._linger()  # the rest of what the client sent must not reset the answer before it is read

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        if not TIMINGS.on:
            return super().data_received(data)
        start = cpu_ns()
        super().data_received(data)
        TIMINGS.add(HTTP, cpu_ns() - start)


class H11(_Draining, H11Protocol):
    """uvicorn's h11 protocol (uvicorn.Config(http=H11)), answering malformed HTTP in JSON and
    closing idle connections gently when the server stops."""

    def __init__(self, config, server_state, app_state, _loop=None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        size = config.h11_max_incomplete_event_size
        self.conn = _Connection(h11.SERVER, **({} if size is None else {"max_incomplete_event_size": size}))

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to what h11 could not read, in JSON (:func:`malformed`)."""
        self._answer_malformed(self.conn.error)

    def timeout_keep_alive_handler(self) -> None:
        """An idle connection closed (uvicorn's keep-alive timeout, or the server stopping): gently."""
        if self.transport.is_closing() or self.closing:
            return
        self.conn.send(h11.ConnectionClosed())
        self._linger()


class _MissingHost(Exception):
    """An HTTP/1.1 request without ``Host``, which h11 refuses and httptools reads."""


def protocol():
    """The protocol class uvicorn is given: :class:`HttpTools` where httptools is installed, else
    :class:`H11`."""
    try:
        return _httptools_protocol()
    except ImportError:
        return H11


def stack() -> str:
    """What reads HTTP, runs the event loop and reads and writes JSON, in words for the start line."""
    import importlib

    def have(name: str) -> bool:
        try:
            importlib.import_module(name)
        except ImportError:
            return False
        return True

    fast = {name: have(name) for name in ("httptools", "uvloop", "orjson")}
    said = ", ".join(
        fast_name if found else slow
        for (fast_name, found), slow in zip(fast.items(), ("h11", "asyncio", "json"), strict=True)
    )
    return said if all(fast.values()) else f"{said}; faster: pip install {EXTRA}"


def _httptools_protocol():
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class HttpTools(_Draining, HttpToolsProtocol):
        """uvicorn's httptools protocol, answering malformed HTTP as :class:`H11` does (h11's verdict
        on the request's head, in JSON) and closing idle connections gently when the server stops."""

        def __init__(self, config, server_state, app_state, _loop=None) -> None:
            super().__init__(config, server_state, app_state, _loop)
            self.max_head = config.h11_max_incomplete_event_size or MAX_HEAD
            self.in_message = False
            self.head: bytes | None = None  # what arrived of a request head not yet read whole

        def data_received(self, data: bytes) -> None:
            if self.closing:
                return
            self.head = data if not self.in_message else None if self.head is None else self.head + data
            super().data_received(data)
            if self.head is not None and self.in_message and len(self.head) > self.max_head:
                self._answer_malformed(h11_verdict(self.head, self.max_head))  # 431, as h11

        def on_message_begin(self) -> None:
            self.in_message = True
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            if self.parser.get_http_version() == "1.1" and not any(n == b"host" for n, _ in self.headers):
                raise _MissingHost  # httptools stops reading: send_400_response
            self.head = None
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self.in_message = False
            super().on_message_complete()

        def send_400_response(self, msg: str) -> None:
            """uvicorn's answer to what httptools could not read: h11's verdict, in JSON."""
            self._answer_malformed(None if self.head is None else h11_verdict(self.head, self.max_head))

        def timeout_keep_alive_handler(self) -> None:
            """An idle connection closed (uvicorn's keep-alive timeout, or the server stopping): gently."""
            if not self.transport.is_closing() and not self.closing:
                self._linger()

    return HttpTools
