"""An ASGI app spoken to in the test's process (no server, no socket): one request (:func:`call`), or
several sent together while the app runs with its lifespan (:func:`serving`), as uvicorn runs it."""

from __future__ import annotations

import asyncio


async def call(app, method: str, path: str, body: bytes = b"", headers=()) -> tuple[int, dict, bytes]:
    """(status, headers, body) of one request to the ASGI ``app``."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers], "server": ("test", 80),
        "client": ("127.0.0.1", 1),
    }  # fmt: skip
    sent = {"body": False}
    answer: dict = {"body": b""}

    async def receive():
        if not sent["body"]:
            sent["body"] = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)

    async def send(message):
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = {k.decode(): v.decode() for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            answer["body"] += message.get("body", b"")

    await app(scope, receive, send)
    return answer["status"], answer["headers"], answer["body"]


def serving(app, requests):
    """The answers to ``requests`` ((method, path, body, headers)), sent together while the app runs."""

    async def main():
        # the ASGI lifespan protocol, as uvicorn speaks it: startup, the requests, shutdown
        inbox: asyncio.Queue = asyncio.Queue()
        outbox: asyncio.Queue = asyncio.Queue()
        running = asyncio.create_task(
            app({"type": "lifespan", "asgi": {"version": "3.0"}}, inbox.get, outbox.put)
        )
        await inbox.put({"type": "lifespan.startup"})
        assert (await outbox.get())["type"] == "lifespan.startup.complete"
        try:
            return await asyncio.gather(*(call(app, *request) for request in requests))
        finally:
            await inbox.put({"type": "lifespan.shutdown"})
            assert (await outbox.get())["type"] == "lifespan.shutdown.complete"
            await running

    return asyncio.run(main())
