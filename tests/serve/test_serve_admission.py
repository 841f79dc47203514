"""Admission control of `easyfirst serve`: a bound on the words waiting (503 with Retry-After beyond it),
an optional deadline (504), /health answered during a burst, and a clean stop after it. The gate's
arithmetic is checked alone, then a real server on the loopback is given a short burst."""

from __future__ import annotations

import http.client
import json
import threading
import time

import pytest

from conftest import run_cli
from serving import Server

pytest.importorskip("starlette")

from easyfirst.serve.admission import Admission, Gate, Overloaded  # noqa: E402

SENTENCE = ["She", "reads", "a", "long", "book", "about", "birds", "."]  # 8 words


def test_the_gate_admits_up_to_its_bound_and_always_one_request():
    gate = Gate(Admission(max_words=20))
    gate.admit(50, time.monotonic())  # nothing waits: even a request over the bound
    with pytest.raises(Overloaded) as refused:
        gate.admit(1, time.monotonic())
    assert refused.value.status == 503 and refused.value.retry_after == 1  # no rate known yet
    assert "50 words are waiting to be tagged (a bound of 20)" in refused.value.message
    gate.release(50)
    gate.admit(12, time.monotonic())
    gate.admit(8, time.monotonic())  # 20: at the bound, not over
    with pytest.raises(Overloaded):
        gate.admit(1, time.monotonic())
    with pytest.raises(Overloaded):
        gate.check_room()
    assert gate.as_json() == {"waiting_words": 20, "refused": 3, "expired": 0}


class Clock:
    """time.monotonic for the gate, moved by hand."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    from easyfirst.serve import admission

    clock = Clock()
    monkeypatch.setattr(admission.time, "monotonic", clock)
    return clock


def test_the_rate_is_words_answered_per_busy_second_recent_ones_weighing_most(clock):
    gate = Gate(Admission(max_words=100_000))
    assert gate.rate is None and gate.retry_after() == 1
    gate.admit(2_000, clock.now)
    clock.now += 1.0
    gate.release(2_000)  # 2,000 words in 1 s
    assert gate.rate == pytest.approx(2_000)
    clock.now += 50.0  # idle: not counted
    gate.admit(1_000, clock.now)
    clock.now += 1.0
    gate.release(1_000)  # then 1,000 in 1 s: weights e^(-1/3) on the older second
    fade = 0.7165313105737893  # exp(-1/3)
    assert gate.rate == pytest.approx((2_000 * fade + 1_000) / (1.0 * fade + 1.0))
    gate.admit(9_000, clock.now)
    assert gate.retry_after() == 7  # 9,000 / 1,417 = 6.4 s, rounded up
    gate.waiting = 10**9
    assert gate.retry_after() == 60  # at most a minute


def test_with_a_deadline_a_request_that_would_finish_late_is_refused(clock):
    """Refused when the words waiting and its own would fill more than 80% of the time left."""
    gate = Gate(Admission(max_words=10_000, deadline=2.5))
    gate.admit(1_000, clock.now)
    clock.now += 1.0
    gate.release(1_000)  # 1,000 words/s
    gate.admit(1_000, clock.now)  # nothing waits: admitted
    gate.admit(900, clock.now)  # 1,900 words at 1,000/s: 1.9 s, within 80% of 2.5 s
    with pytest.raises(Overloaded) as refused:
        gate.admit(200, clock.now)  # 2.1 s
    assert "past the deadline of 2.5 s" in refused.value.message


def test_the_deadline_counts_from_the_requests_arrival(clock):
    gate = Gate(Admission(max_words=10_000, deadline=2.5))
    gate.admit(1_000, clock.now)
    clock.now += 1.0
    gate.release(1_000)  # 1,000 words/s
    gate.admit(1_000, clock.now)
    gate.admit(400, clock.now - 0.5)  # arrived 0.5 s ago: 1.4 s of words within 80% of its 2 s left
    with pytest.raises(Overloaded):
        gate.admit(100, clock.now - 1.0)  # 1.5 s of words, over 80% of 1.5 s left
    clock.now += 1.0
    gate.release(400, tagged=False)  # given up at its deadline: the rate does not count its words
    assert gate.rate == pytest.approx(1_000 * 0.7165313105737893 / (1.0 * 0.7165313105737893 + 1.0))


def post(port: int, body: bytes) -> tuple[int, dict, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", "/tag", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read()), dict(response.getheaders())
    finally:
        connection.close()


def test_a_burst_over_the_bound_gets_503_with_retry_after_and_health_is_answered():
    """One worker lets 20 words wait and gathers for 300 ms: of 12 requests of 8 words sent together,
    the first waits in the gather window, two join it (24 words would be over), the rest are refused."""
    body = json.dumps({"sentences": [SENTENCE]}).encode()
    args = ("--workers", "1", "--max-queue", "20", "--batch-window", "300", "--no-access-log")
    with Server(*args) as server:
        start, answers, health = threading.Barrier(13), [], []

        def client() -> None:
            start.wait()
            answers.append(post(server.port, body))

        def watcher() -> None:
            start.wait()
            time.sleep(0.1)  # within the gather window: the requests wait
            health.append(server.get("/health"))

        threads = [threading.Thread(target=client) for _ in range(12)] + [threading.Thread(target=watcher)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        code, output = server.stop()
    statuses = sorted(status for status, _, _ in answers)
    assert len(statuses) == 12 and set(statuses) <= {200, 503}, statuses
    assert statuses.count(200) >= 1 and statuses.count(503) >= 1, statuses  # 2 and 10 on a quiet machine
    for status, answer, headers in answers:
        if status == 200:
            assert answer["sentences"][0]["tokens"] == SENTENCE
        else:
            assert int(headers["retry-after"]) >= 1 and answer["retry_after"] == int(headers["retry-after"])
            assert answer["error"].startswith("the server is busy: ")
    assert health and health[0][0] == 200
    found = json.loads(health[0][1])
    assert found["waiting_words"] <= 20  # the bound held (8 or 16 on a quiet machine: not tagged yet)
    assert found["refused"] <= statuses.count(503)  # the refusals so far
    assert code == 0 and "stopped" in output, output


def test_a_request_untagged_at_its_deadline_gets_504():
    """The gather window (300 ms) outlasts the deadline (50 ms): the request is answered 504, untagged."""
    body = json.dumps({"sentences": [SENTENCE]}).encode()
    with Server("--workers", "1", "--batch-window", "300", "--deadline", "0.05") as server:
        status, answer, _ = post(server.port, body)
        found = json.loads(server.get("/health")[1])
        server.stop()
    assert status == 504
    assert answer == {"error": "not tagged within the deadline of 0.05 s: the server is busy"}
    assert found["expired"] == 1 and found["waiting_words"] == 0 and found["requests"] == 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-queue", "0"], "--max-queue must be an integer >= 1, not 0"),
        (["--deadline", "0"], "--deadline must be a finite number > 0, not 0.0"),
        (["--deadline", "nan"], "--deadline must be a finite number > 0, not nan"),
    ],
)
def test_a_bad_bound_or_deadline_exits_2_naming_the_flag(flags, message):
    result = run_cli("serve", *flags)
    assert result.returncode == 2 and result.stderr.decode().strip() == message
