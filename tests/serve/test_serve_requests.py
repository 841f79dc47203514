"""What `easyfirst serve` does with any body a client may send: generated bodies (random bytes, random
JSON, request-shaped JSON with wrong types, deep nesting, huge numbers, bad UTF-8, lone surrogates) get a
status below 500 and a JSON answer; and docs/serve.md's limits, each at and over its bound."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from easyfirst.serve.requests import (
    MAX_DEPTH,
    Limits,
    RequestError,
    check_content_type,
    nesting_depth,
    parse_job,
)
from serving import Server

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=16,
)
LINES = st.text(max_size=40) | st.lists(st.text(max_size=40), max_size=3)
REQUESTS = st.fixed_dictionaries(
    {},
    optional={
        "text": st.text(max_size=200) | JSON_VALUES,
        "sentences": st.lists(st.lists(st.text(max_size=12) | JSON_VALUES, max_size=8), max_size=5)
        | JSON_VALUES,
        "src": LINES | JSON_VALUES,
        "mt": LINES | JSON_VALUES,
        "alignments": LINES | JSON_VALUES,
        "attention": st.booleans() | JSON_VALUES,
        "probabilities": st.booleans() | JSON_VALUES,
        "pretokenized": st.booleans() | JSON_VALUES,
        "txt": JSON_VALUES,
    },
)


def encode(value) -> bytes:
    return json.dumps(value).encode()  # NaN and Infinity as Python writes them


def spliced(parts: tuple[bytes, int, bytes]) -> bytes:
    """Random bytes (bad UTF-8 among them) put into a valid request."""
    body, at, junk = parts
    at %= len(body) + 1
    return body[:at] + junk + body[at:]


BODIES = st.one_of(
    st.binary(max_size=200),
    JSON_VALUES.map(encode),
    REQUESTS.map(encode),
    st.tuples(REQUESTS.map(encode), st.integers(0, 10**6), st.binary(min_size=1, max_size=8)).map(spliced),
    st.tuples(st.integers(1, 300_000), st.sampled_from([b"[", b"{", b'{"a":', b'{"sentences":['])).map(
        lambda n_open: n_open[1] * n_open[0]
    ),
    st.integers(MAX_DEPTH - 2, MAX_DEPTH + 2).map(lambda n: b"[" * n + b"]" * n),
    st.integers(4_000, 200_000).map(lambda n: b'{"text": ' + b"9" * n + b"}"),
    st.integers(0xD800, 0xDFFF).map(lambda c: b'{"text": "a\\u%04x b"}' % c),
    st.integers(0xD800, 0xDFFF).map(lambda c: b'{"sentences": [["a\\u%04x"]]}' % c),
)
CONTENT_TYPES = st.sampled_from(
    [None, "", "application/json", "application/json; charset=utf-8", "application/ld+json", "text/plain"]
)


def depth(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


TRICKY = st.text(alphabet='[]{}"\\ab', max_size=12)  # brackets, quotes and backslashes inside strings


@given(st.recursive(TRICKY | SCALARS, lambda inner: st.lists(inner) | st.dictionaries(TRICKY, inner)))
def test_the_nesting_scan_agrees_with_the_parsed_depth(value):
    for indent in (None, 2):
        assert nesting_depth(json.dumps(value, indent=indent).encode()) == depth(value)


def test_a_body_nested_100000_deep_is_refused_before_parsing():
    with pytest.raises(RequestError) as refused:
        parse_job(b"[" * 100_000 + b"]" * 100_000, Limits(body_bytes=10**6), pairs=False)
    assert refused.value.status == 400
    assert (
        refused.value.message
        == f"the body nests arrays and objects 100,000 deep, over the limit of {MAX_DEPTH}"
    )
    nested = {"sentences": [["a"]]}
    for _ in range(MAX_DEPTH - 3):  # a request at the limit is read
        nested = {"sentences": [["a"]], "txt": nested}
    with pytest.raises(RequestError, match="unknown key 'txt'"):
        parse_job(encode(nested), Limits(body_bytes=10**6), pairs=False)


@pytest.mark.parametrize(
    "header, refused",
    [
        (None, False),
        ("", False),
        ("application/json", False),
        ("Application/JSON; charset=utf-8", False),
        ("application/ld+json", False),
        ("text/plain", True),
        ("application/x-www-form-urlencoded", True),
        ("multipart/form-data; boundary=x", True),
    ],
)
def test_a_body_declared_as_something_other_than_json_is_415(header, refused):
    if not refused:
        check_content_type(header)
        return
    with pytest.raises(RequestError) as error:
        check_content_type(header)
    assert error.value.status == 415
    assert error.value.message.endswith(f"not {header.split(';')[0]}")


@pytest.fixture(scope="module")
def server():
    with Server("--no-access-log") as served:  # the default limits
        yield served
        served.stop()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=BODIES, content_type=CONTENT_TYPES)
def test_no_body_gets_a_5xx_and_every_answer_is_json(server, body, content_type):
    headers = {} if content_type is None else {"Content-Type": content_type}
    status, raw, _ = server.raw(body, headers)
    answer = json.loads(raw)
    assert status < 500, (status, answer)
    if status == 200:
        assert len(answer["sentences"]) >= 1
    else:
        assert isinstance(answer["error"], str) and answer["error"] and "\n" not in answer["error"]


def test_deep_nesting_huge_numbers_and_surrogates_say_what_is_wrong(server):
    cases = [
        (b"[" * 100_000, 400, "nests arrays and objects 100,000 deep, over the limit of 64"),
        (b'{"text": ' + b"9" * 5000 + b"}", 400, "Exceeds the limit (4300 digits)"),
        (b'{"text": "a\\ud800 b"}', 422, "'text' holds '\\ud800', a lone surrogate"),
        (b'{"sentences": [["\\udfff"]]}', 422, "sentences[0][0] holds '\\udfff', a lone surrogate"),
    ]
    for body, status, message in cases:
        got, answer = server.post(body)
        assert (got, message in answer["error"]) == (status, True), answer
    assert server.post({"text": "Still here."})[0] == 200


def test_a_body_without_content_type_is_read_as_json_and_a_form_is_415(server):
    body = encode({"sentences": [["She", "reads", "."]]})
    status, raw, _ = server.raw(body, {})
    assert status == 200 and json.loads(raw)["sentences"][0]["tags"] == ["PRON", "VERB", "PUNCT"]
    status, raw, _ = server.raw(body, {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 415
    assert json.loads(raw)["error"] == (
        "the body must be JSON (Content-Type: application/json), not application/x-www-form-urlencoded"
    )


def test_the_attention_of_one_answer_is_capped_and_the_largest_allowed_answer_is_about_5_mb(server):
    """Default limits: 250,000 αⁿ values; with N = L, 6 sentences of 200 words have 240,000."""
    allowed, over = [["word"] * 200] * 6, [["word"] * 200] * 7
    status, raw, _ = server.raw(encode({"sentences": allowed, "attention": True}), {})
    assert status == 200
    assert sum(len(s["attention"]) * len(s["attention"][0]) for s in json.loads(raw)["sentences"]) == 240_000
    assert len(raw) < 22 * 240_000, len(raw)  # docs/serve.md: at most ~21 bytes of JSON per value
    status, answer = server.post({"sentences": over, "attention": True})
    assert status == 413
    assert answer["error"] == (
        "the attention asked for has 280,000 values (steps × words), over the limit of 250,000: "
        "send fewer or shorter sentences per request"
    )
    assert server.post({"sentences": over})[0] == 200  # without attention, the same sentences are tagged
