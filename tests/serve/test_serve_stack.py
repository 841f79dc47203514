"""`easyfirst serve` on the fast stack of the extra `serve` (httptools, uvloop, orjson) and without it:
the same bytes for every request, malformed HTTP included; orjson read and written only where it gives
what Python's json gives; where a request's time goes (EASYFIRST_SERVE_TIMINGS)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from easyfirst.serve.app import encode
from easyfirst.serve.requests import RequestError, decode
from serving import Server

FAST = ("httptools", "uvloop", "orjson")


def post(body: bytes, head: bytes = b"Content-Type: application/json\r\n", target: bytes = b"/tag") -> bytes:
    length = b"Content-Length: %d\r\n" % len(body)
    return b"POST " + target + b" HTTP/1.1\r\nHost: x\r\n" + head + length + b"\r\n" + body


def as_json(value) -> bytes:
    return json.dumps(value).encode()


REQUESTS = [
    post(as_json({"sentences": [["She", "reads", "."]]})),
    post(as_json({"text": "She reads. Birds fly south.", "attention": True})),
    post(as_json({"sentences": [["She", "reads", "."]], "probabilities": True})),
    post(as_json({"sentences": [["é", "😀", 'a"b', "x\\y", "\x7f", "</p>"]]})),
    post(as_json({"sentences": [["a\u2028b"]]})),
    post(b'{"sentences": [["a"]'),
    post(as_json({"text": "a"}), b"Content-Type: text/plain\r\n"),
    post(as_json({"text": "a"}), b"Content-Type: application/json\r\nContent-Type: text/plain\r\n"),
    post(as_json({"text": "a"}), b""),
    post(as_json({"txt": "a"})),
    post(b'{"text": ' + b"9" * 5000 + b"}"),
    post(b"[" * 100),
    post(b'{"text": "a\\ud800 b", "x": NaN}'),
    post(b'{"text": "a\\ud800 b"}'),
    post(b'{"sentences": [["a"]], "attention": 18446744073709551616}'),
    post(as_json({"sentences": [["a"]] * 101})),
    post(b"\xff\xfe" + '{"text": "a"}'.encode("utf-16-le")),
    b'POST /tag HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"tex\r\n9\r\nt": "Hi"}\r\n0\r\n\r\n',
    b"POST /tag HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n",
    b"GET /tag HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n",
    # malformed: answered with h11's verdict by both protocols, then the connection closes
    b"POST /tag HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    b"GARBAGE\r\n\r\n",
    b"GET / HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 20_000,  # a head past 16 KB, unfinished: 431
]


def exchange(port: int, request: bytes) -> bytes:
    """What the server answers ``request`` on a new connection, without its Date header."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
            head, _, body = answer.partition(b"\r\n\r\n")
            length = re.search(rb"content-length: (\d+)", head)
            if length and len(body) >= int(length[1]):
                break
    return re.sub(rb"date: [^\r]*\r\n", b"", answer)


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """The server as installed (the fast stack, from the extra `serve`) and one where httptools, uvloop
    and orjson cannot be imported, which counts where a request's time goes."""
    hidden = tmp_path_factory.mktemp("hidden")
    for name in FAST:
        (hidden / f"{name}.py").write_text('raise ImportError("hidden by the test")\n')
    path = os.pathsep.join(filter(None, [str(hidden), os.environ.get("PYTHONPATH")]))
    with Server("--no-access-log", "--workers", "1") as fast:
        with Server(
            "--no-access-log", "--workers", "2", env={"PYTHONPATH": path, "EASYFIRST_SERVE_TIMINGS": "1"}
        ) as plain:
            yield fast, plain


def test_without_the_fast_stack_every_answer_is_the_same_bytes(servers):
    fast, plain = servers
    for request in REQUESTS:
        assert exchange(fast.port, request) == exchange(plain.port, request), request[:80]
    assert exchange(fast.port, REQUESTS[-1]).startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    assert exchange(fast.port, REQUESTS[-4]) == (
        b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 55\r\n"
        b"connection: close\r\n\r\n"
        b'{"error": "malformed HTTP request: bad Content-Length"}'
    )


def test_the_time_of_each_stage_is_counted_when_asked(servers):
    fast, plain = servers
    assert "timings" not in json.loads(fast.get("/health")[1])
    before = json.loads(plain.get("/health")[1])["timings"]
    for _ in range(6):
        assert plain.post({"sentences": [["She", "reads", "."]]})[0] == 200
    after = json.loads(plain.get("/health")[1])["timings"]
    assert after["requests"] - before["requests"] == 6
    assert set(after["ns"]) == {"http", "decode", "queue", "tag", "encode", "write"}
    assert all(after["ns"][stage] > before["ns"][stage] for stage in after["ns"])


def test_the_start_line_says_which_stack_serves(servers):
    fast, plain = servers
    said = {name: server.stop()[1] for name, server in (("fast", fast), ("plain", plain))}
    assert '(h11, asyncio, json; faster: pip install "easyfirst[serve]"; Ctrl-C' in said["plain"]
    if all(importlib.util.find_spec(name) for name in FAST):  # the extra `serve` as it is now
        assert "(httptools, uvloop, orjson; Ctrl-C" in said["fast"]
    # said before the wait of loading (and of a first start's compilation, which says so itself)
    assert (
        0
        <= said["fast"].find("loading the bundled model")
        < said["fast"].find("serving the bundled model on")
    )


def no_surrogate(text: str) -> bool:
    return not re.search("[\ud800-\udfff]", text)


def values(numbers, text):
    return st.recursive(
        st.none() | st.booleans() | numbers | text,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
        max_leaves=12,
    )


INT64 = st.integers(-(2**63), 2**63 - 1)  # orjson reads larger integers as floats (docstring of decode)


@settings(max_examples=300, deadline=None)
@given(value=values(INT64 | st.floats(allow_nan=False), st.text(max_size=8)), noise=st.binary(max_size=3))
def test_a_body_is_read_as_python_json_reads_it(value, noise):
    for body in (json.dumps(value).encode(), json.dumps(value).encode()[:-1] + noise):
        try:
            expected = json.loads(body)
        except ValueError:
            with pytest.raises(RequestError):
                decode(body)
            continue
        assert decode(body) == expected


@settings(max_examples=300, deadline=None)
@given(content=values(INT64, st.text(max_size=8).filter(no_surrogate)))
def test_an_answer_without_floats_is_written_as_json_dumps_writes_it(content):
    assert encode(content) == json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode()
    assert encode({"x": 1e-05}, floats=True) == b'{"x":1e-05}'  # orjson would write 0.00001
