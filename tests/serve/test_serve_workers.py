"""`easyfirst serve --workers K`: K processes forked after the model loads, on one socket. The server's
acceptance list holds with several workers (health, page, tags, 4xx JSON, SIGTERM and Ctrl-C drain the
requests in flight), and no process is left behind, even when the parent is killed."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import run_cli, started
from serving import Server, free_port, keep_alive_load

SENTENCES = [["She", "reads", "."], ["The", "dog", "barks", "at", "the", "mailman", "."], ["Birds", "fly"]]


def gone(pids: list[int], seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(os.path.exists(f"/proc/{pid}") for pid in pids):
            return True
        time.sleep(0.1)
    return False


def test_two_workers_serve_the_acceptance_list_and_stop_cleanly():
    from easyfirst import Tagger

    with Server("--workers", "2", "--max-words", "40") as served:
        workers = served.children()
        assert len(workers) == 2
        health = json.loads(served.get("/health")[1])
        assert (health["status"], health["model"]) == ("ok", "en_ewt_upos")
        assert "<textarea" in served.get("/")[1].decode()
        assert served.post(b'{"text": ') == (
            400,
            {"error": "the body is not JSON: Expecting value: line 1 column 10 (char 9)"},
        )
        assert served.post({"sentences": [["w"] * 41]})[0] == 413
        assert served.post(b"[" * 5000)[0] == 400
        expected = [t.tags for t in Tagger.load().tag(SENTENCES)]

        def client(k: int) -> list[bool]:
            answers = [served.post({"sentences": [SENTENCES[(k + i) % 3]]}) for i in range(10)]
            return [
                a == 200 and b["sentences"][0]["tags"] == expected[(k + i) % 3]
                for i, (a, b) in enumerate(answers)
            ]

        with ThreadPoolExecutor(8) as pool:
            results = [ok for oks in pool.map(client, range(8)) for ok in oks]
        assert len(results) == 80 and all(results)
        after = json.loads(served.get("/health")[1])
        assert after["requests"] == 80  # the counts of both workers (the refused requests are not tagged)
        code, output = served.stop()
        assert code == 0, output
        assert "Traceback" not in output and output.count("Finished server process") == 2, output
        assert gone(workers)


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_ctrl_c_answers_the_requests_in_flight_then_exits(workers, stop):
    with Server(
        "--workers", workers, "--batch-window", "1500"
    ) as served:  # a worker's first request waits 1.5 s
        children = served.children()
        answers = []

        def client(text):
            answers.append(served.post({"text": text}))

        threads = [threading.Thread(target=client, args=(f"Request number {k} is here.",)) for k in range(6)]
        for thread in threads:
            thread.start()
        time.sleep(0.5)
        returncode, output = served.stop(stop)
        for thread in threads:
            thread.join(timeout=30)
        assert [status for status, _ in answers] == [200] * 6, output
        assert returncode == 0, output
        assert "Traceback" not in output and output.rstrip().endswith("stopped"), output
        assert gone(children)


def test_a_killed_parent_leaves_no_worker_behind():
    with Server("--workers", "2") as served:
        deadline = time.monotonic() + 30  # the first worker may answer before the second is forked
        while len(workers := served.children()) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(workers) == 2
        served.process.kill()  # the parent alone
        served.process.communicate(timeout=30)
        assert gone(workers)  # each asked the kernel for SIGTERM when its parent dies


def test_workers_on_a_gpu_and_zero_workers_are_refused_in_one_line():
    result = run_cli("serve", "--workers", 2, "--device", "cuda", process=True)
    assert result.returncode == 2
    assert result.stderr.decode() == (
        "--workers 2: more than one worker needs --device cpu (CUDA does not survive a fork)\n"
    )
    result = run_cli("serve", "--workers", 0, process=True)
    assert (result.returncode, result.stderr.decode()) == (2, "--workers must be an integer >= 1, not 0\n")


def processes_with(marker: str) -> list[int]:
    """The processes whose command line holds ``marker`` (forked workers keep their parent's)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if marker.encode() in cmdline.read().replace(b"\0", b" "):
                    found.append(int(entry))
        except (OSError, ValueError):
            continue
    return found


@pytest.mark.parametrize(
    "delay, stop",
    [
        (0.3, signal.SIGINT),
        (1.5, signal.SIGTERM),
        (2.3, signal.SIGINT),
        (2.6, signal.SIGTERM),
        (3.0, signal.SIGINT),
        (6.0, signal.SIGTERM),
    ],
)
def test_a_signal_at_any_moment_of_the_start_leaves_no_traceback_and_no_process(delay, stop):
    """Importing, loading the model, forking the workers, starting uvicorn: a signal in any of them ends
        every process, without a traceback (exit 0 once serving; 130 or 143 before, as for any command). The
    start took about 2.5 s on the 2-core machine, so the delays fall in each phase there."""
    port = str(free_port())
    with started(
        [sys.executable, "-m", "easyfirst", "serve", "--workers", "2", "--port", port],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as process:
        time.sleep(delay)
        process.send_signal(stop)
        output = process.communicate(timeout=60)[0].decode()
        assert process.returncode in (0, 128 + stop, -stop), output
        assert "Traceback" not in output, output
        deadline = time.monotonic() + 30
        while processes_with(f"--port {port}") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert processes_with(f"--port {port}") == [], output


@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_under_a_keep_alive_load_answers_every_request_sent(workers):
    """16 clients, each sending its requests one after the other on one keep-alive connection, and
    SIGTERM among them: each request sent is answered (none reset, none closed unanswered), the
    answers after the signal say `Connection: close`, and the server exits within its bound."""
    with Server("--workers", workers, "--no-access-log") as served:
        signalled = []

        def stop() -> None:
            signalled.append(time.monotonic())
            served.process.send_signal(signal.SIGTERM)

        counts = keep_alive_load(served.port, 16, stop)
        code, output = served.stop()
        took = time.monotonic() - signalled[0]
    assert counts["reset"] == counts["unanswered"] == counts["other"] == 0, counts
    assert counts["closed"] == 16 and counts["answered"] > 16, counts  # each client was told, once
    assert code == 0 and "Traceback" not in output, output
    assert took < 20 + 2, took  # --graceful-timeout, then the idle connections' grace and linger


def test_an_idle_keep_alive_connection_is_answered_during_the_grace_then_closed_without_a_reset():
    with Server("--workers", "1", "--no-access-log") as served:
        busy = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
        idle = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
        for connection in (busy, idle):
            connection.request("GET", "/health")
            connection.getresponse().read()
        served.process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        busy.request("GET", "/health")  # a request sent on an idle connection just after the signal
        answer = busy.getresponse()
        assert (answer.status, answer.getheader("connection")) == (200, "close")
        assert json.loads(answer.read())["status"] == "ok"
        code, output = served.stop()  # the other connection sends nothing: closed after its grace
        assert code == 0, output
        idle.sock.settimeout(5)
        assert idle.sock.recv(1) == b""  # an orderly close (FIN), not a reset
