"""The HTTP connections of `easyfirst serve`: uvicorn's own (its h11 protocol, its graceful shutdown), with
what it does not do for a server that drains (docs/serve.md, "Stopping"):

- a request that is not HTTP (``Content-Length: abc``, a garbage request line) is answered in JSON,
  ``{"error": "malformed HTTP request: …"}``, like every other 4xx, not in uvicorn's plain text;
- once the server stops (SIGTERM, Ctrl-C), every answer says ``Connection: close``, so that a client on
  a keep-alive connection sends nothing more there; uvicorn closed such a connection after the answer
  without saying so, and the client's next request, already on its way, was met by a TCP reset;
- a connection idle when the server stops is not closed at once: for :data:`IDLE_GRACE` seconds a
  request that arrives on it (one sent before the client could know) is still answered, with
  ``Connection: close``; then it is closed gently (:data:`LINGER`).

uvicorn's timeout_graceful_shutdown bounds the whole drain (``--graceful-timeout``).
"""

from __future__ import annotations

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

IDLE_GRACE = 1.0  # seconds an idle keep-alive connection may still bring a request once the server stops
LINGER = 1.0  # seconds a closed connection still reads (and drops) what the client sent, until it closes
CLOSE = (b"connection", b"close")


class ClosingApp:
    """The ASGI ``app``, with ``Connection: close`` on every answer begun once ``server`` (a
    uvicorn.Server, set before it runs) is stopping: the client learns not to send on that connection."""

    def __init__(self, app):
        self.app = app
        self.server = None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def sending(message) -> None:
            if (
                message["type"] == "http.response.start"
                and self.server is not None
                and self.server.should_exit
            ):
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


class Protocol(H11Protocol):
    """uvicorn's h11 protocol (uvicorn.Config(http=Protocol)), answering malformed HTTP in JSON and
    closing idle connections gently when the server stops."""

    def __init__(self, config, server_state, app_state, _loop=None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        size = config.h11_max_incomplete_event_size
        self.conn = _Connection(h11.SERVER, **({} if size is None else {"max_incomplete_event_size": size}))
        self.closing = False

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to what h11 could not read, in JSON: the status h11 suggests (400; 431 for
        headers too large) and its reason, without the bytes it quotes."""
        import http
        import json

        error = self.conn.error
        status = 400 if error is None else error.error_status_hint
        reason = "invalid HTTP request" if error is None else str(error).partition(": bytearray(")[0]
        body = json.dumps({"error": f"malformed HTTP request: {reason}"}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            CLOSE,
        ]
        for event in (
            h11.Response(status_code=status, headers=headers, reason=http.HTTPStatus(status).phrase),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event))
        self._linger()  # the rest of what the client sent must not reset the answer before it is read

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

    def timeout_keep_alive_handler(self) -> None:
        """An idle connection closed (uvicorn's keep-alive timeout, or the server stopping): gently."""
        if self.transport.is_closing() or self.closing:
            return
        self.conn.send(h11.ConnectionClosed())
        self._linger()

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

    def data_received(self, data: bytes) -> None:
        if not self.closing:
            super().data_received(data)
