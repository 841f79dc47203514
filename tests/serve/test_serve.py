"""`easyfirst serve` as a client uses it: a real uvicorn on 127.0.0.1 in a subprocess, spoken to over HTTP.

The expected tags come from other paths: `easyfirst tag --text` (a subprocess) and the Python API."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from conftest import QE_GAPS, run_cli, started
from serving import Server, free_port

TEXT = "The dog barks at the mailman. She reads a long book about birds, doesn't she?"
LIMITS = ["--max-words", "40", "--max-sentences", "5", "--max-body", "4000"]


@pytest.fixture(scope="module")
def server():
    with Server(*LIMITS) as served:
        yield served
        served.stop()


def test_health_and_the_self_contained_page(server):
    status, body = server.get("/health")
    health = json.loads(body)
    assert status == 200 and health["status"] == "ok"
    assert (health["model"], health["task"]) == ("en_ewt_upos", "pos")
    status, page = server.get("/")
    page = page.decode()
    assert status == 200 and "<textarea" in page and "en_ewt_upos" in page
    assert "http://" not in page and "https://" not in page  # nothing fetched from another host
    assert "default-src 'none'" in page and "connect-src 'self'" in page  # its policy: only its own POST /tag


def test_text_gets_the_tags_of_tag_text(server):
    status, answer = server.post({"text": TEXT})
    assert status == 200, answer
    assert (answer["model"], answer["task"]) == ("en_ewt_upos", "pos")
    cli = run_cli("tag", "--text", TEXT)
    assert cli.returncode == 0, cli.stderr.decode()
    expected = [
        [line.split("\t") for line in block.splitlines()]
        for block in cli.stdout.decode().strip().split("\n\n")
    ]
    assert len(expected) == 2
    got = [[[w, t] for w, t in zip(s["tokens"], s["tags"], strict=True)] for s in answer["sentences"]]
    assert got == expected
    assert "attention" not in answer["sentences"][0] and "probabilities" not in answer["sentences"][0]


def test_tokens_with_attention_and_probabilities(server):
    from easyfirst import Tagger

    sentences = [["She", "reads", "a", "book", "."], ["Birds", "fly", "south", "in", "winter", "."]]
    status, answer = server.post({"sentences": sentences, "attention": True, "probabilities": True})
    assert status == 200, answer
    tagged = Tagger.load().tag(sentences, attention=True)
    assert [s["tags"] for s in answer["sentences"]] == [t.tags for t in tagged]
    for sentence, expected in zip(answer["sentences"], (t.attention for t in tagged), strict=True):
        matrix = sentence["attention"]
        length = len(sentence["tokens"])
        assert len(matrix) == length and all(len(row) == length for row in matrix)  # csoftmax, N = L
        for i in range(length):  # each word's attention budget is spent exactly over the L steps
            assert sum(row[i] for row in matrix) == pytest.approx(1, abs=1e-4)
        torch.testing.assert_close(torch.tensor(matrix), expected, atol=1e-5, rtol=0)
        assert len(sentence["probabilities"]) == length
        for row, tag in zip(sentence["probabilities"], sentence["tags"], strict=True):
            assert sum(row) == pytest.approx(1, abs=1e-4)
            assert answer["tagset"][row.index(max(row))] == tag


@pytest.mark.parametrize(
    "body, status, message",
    [
        (b'{"text": "no closing brace"', 400, "not JSON"),
        ({"text": 5}, 422, "'text' must be a string, not a number"),
        ({"sentences": "The dog"}, 422, "'sentences' must be a non-empty list"),
        ({}, 422, "give either 'text'"),
        ({"text": "  \n "}, 422, "'text' has no words"),
        ({"sentences": [["a"], []]}, 422, "sentences[1] is empty"),
        ({"sentences": [["a", 3]]}, 422, "sentences[0][1] must be a string"),
        ({"text": "a", "attention": "yes"}, 422, "'attention' must be true or false"),
        ({"src": "a", "mt": "b", "alignments": "0-0"}, 422, "give text or sentences"),
        ({"sentences": [["w"] * 41]}, 413, "41 words, over the limit of 40"),
        ({"sentences": [["w"]] * 6}, 413, "6 sentences, over the limit of 5"),
        ({"text": "word " * 1000}, 413, "over the limit of 4,000"),
        (b"[1, 2]", 422, "must be a JSON object"),
        (
            {"txt": "a"},
            422,
            "unknown key 'txt' (known: alignments, attention, mt, pretokenized, probabilities,",
        ),
    ],
)
def test_a_bad_request_is_a_4xx_saying_what_is_wrong_and_the_server_stays_up(server, body, status, message):
    got, answer = server.post(body)
    assert got == status, answer
    assert message in answer["error"]
    assert server.post({"text": "Still here."})[0] == 200


@pytest.mark.browser
def test_the_page_tags_the_text_typed_and_draws_the_raindrop_of_the_sentence_picked(server):
    from browser import chromium
    from easyfirst import Tagger

    expected = Tagger.load().tag(TEXT)  # one Tagged per sentence: its (token, tag) pairs
    with chromium() as context:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(server.url("/"))
        page.fill("#text", TEXT)
        page.click("button[type=submit]")
        page.locator("#sentences button.sentence").nth(1).wait_for()  # (the page's policy forbids eval)
        shown = page.eval_on_selector_all(
            "#sentences button.sentence",
            """buttons => buttons.map(b => Array.from(b.querySelectorAll('.token')).map(
                t => [t.firstChild.textContent, t.querySelector('.tag').textContent]))""",
        )
        assert shown == [[list(pair) for pair in sentence] for sentence in expected]
        page.click("#sentences button.sentence >> nth=1")
        page.wait_for_selector("#raindrop .efr-cell")
        cells = page.locator("#raindrop").evaluate(
            """root => Array.from(root.querySelectorAll('.efr-cell')).map(
                c => [Number(c.dataset.step), Number(c.dataset.word), Number(c.dataset.alpha)])"""
        )
        assert page.get_attribute("#sentences button.sentence >> nth=1", "aria-pressed") == "true"
        refused = list(context.refused)
    words = [token for token, _ in expected[1]]
    attention = Tagger.load().tag([words], attention=True)[0].attention
    steps, length = attention.shape
    assert sorted((n, i) for n, i, _ in cells) == [(n, i) for n in range(steps) for i in range(length)]
    for n, i, alpha in cells:
        assert abs(alpha - float(attention[n, i])) <= 1e-3, (n, i, alpha)
    assert not errors and not refused, (errors, refused)


def test_pretokenized_text_is_one_sentence_split_on_whitespace_only(server):
    status, answer = server.post({"text": "Mr. Smith's dog  barks. Twice", "pretokenized": True})
    assert status == 200, answer
    assert [s["tokens"] for s in answer["sentences"]] == [["Mr.", "Smith's", "dog", "barks.", "Twice"]]


def test_a_chunked_body_is_read_no_further_than_the_limit(server):
    """Without a Content-Length the server counts the bytes as they come and stops at the limit."""
    chunks = [b'{"text": "', b"word " * 1000, b'"}']
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        connection.request(
            "POST", "/tag", iter(chunks), {"Content-Type": "application/json"}, encode_chunked=True
        )
        response = connection.getresponse()
        status, answer = response.status, json.loads(response.read())
    finally:
        connection.close()
    assert (status, answer) == (413, {"error": "the body is over the limit of 4,000 bytes"})


def listening_addresses(port: int) -> set[str]:
    """The IPv4 addresses on which some process listens on ``port`` (/proc/net/tcp, state 0A)."""
    found = set()
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, listening = local.split(":"), state == "0A"
        if listening and int(address[1], 16) == port:
            found.add(socket.inet_ntoa(bytes.fromhex(address[0])[::-1]))
    return found


def test_it_listens_on_the_loopback_only_by_default(server):
    assert listening_addresses(server.port) == {"127.0.0.1"}


def test_an_address_not_of_this_machine_exits_2_naming_the_flag():
    # TEST-NET-1: nobody's address
    result = run_cli("serve", "--host", "192.0.2.1", "--port", 8000, process=True)
    assert result.returncode == 2
    assert (
        result.stderr.decode() == "--host: cannot listen on 192.0.2.1:8000: Cannot assign requested address\n"
    )


def test_the_app_compiles_the_loops_before_its_first_request(monkeypatch):
    """The server's groups go through backend numba's compiled loops, which create_app runs once first
    (after an install Numba compiles them then, not while a request waits)."""
    from easyfirst.backends import compiled
    from easyfirst.serve import create_app

    warmed = []
    original = compiled.warm_up
    monkeypatch.setattr(compiled, "warm_up", lambda: warmed.append(1) or original())
    create_app()
    assert warmed == [1]


def test_create_app_runs_under_uvicorn_factory_mode():
    port = free_port()
    with started(
        [sys.executable, "-m", "uvicorn", "--factory", "easyfirst.serve:create_app", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    ) as process:
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                    assert json.loads(response.read())["model"] == "en_ewt_upos"
                    break
            except OSError:
                time.sleep(0.2)
        else:
            raise AssertionError(process.stdout.read().decode())


@pytest.mark.parametrize(
    "request_bytes, reason",
    [
        (b"POST /tag HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", "bad Content-Length"),
        (b"GARBAGE\r\n\r\n", "illegal request line"),
        # a body behind the bad head: the server reads and drops it, so that no reset destroys the answer
        (
            b"POST /tag HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n" + b"x" * 200_000,
            "bad Content-Length",
        ),
        (b"GET / HTTP/1.1\r\n\r\n", "Missing mandatory Host: header"),
    ],
)
def test_malformed_http_is_answered_in_json_like_every_4xx(server, request_bytes, reason):
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as connection:
        connection.sendall(request_bytes)
        answer = b""
        while chunk := connection.recv(65536):  # the server closes the connection after its answer
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.splitlines()[0] == b"HTTP/1.1 400 Bad Request"
    assert b"content-type: application/json" in head.lower().splitlines()
    assert json.loads(body) == {"error": f"malformed HTTP request: {reason}"}


def test_unknown_routes_and_methods_answer_json(server):
    assert server.post({"text": "a"}, "/nothing") == (404, {"error": "Not Found"})
    status, answer = server.post({"text": "a"}, "/health")
    assert status == 405 and "error" in answer


def test_concurrent_clients_are_tagged_together(server):
    from easyfirst import Tagger

    sentences = [
        ["She", "reads", "."],
        ["The", "dog", "barks", "at", "the", "mailman", "."],
        ["Birds", "fly"],
    ]
    expected = [t.tags for t in Tagger.load().tag(sentences)]
    before = json.loads(server.get("/health")[1])

    def client(k: int) -> list[bool]:
        results = []
        for i in range(25):
            which = (k + i) % len(sentences)
            status, answer = server.post({"sentences": [sentences[which]]})
            results.append(status == 200 and answer["sentences"][0]["tags"] == expected[which])
        return results

    with ThreadPoolExecutor(8) as pool:
        results = [ok for oks in pool.map(client, range(8)) for ok in oks]
    assert len(results) == 200 and all(results)
    after = json.loads(server.get("/health")[1])
    requests, batches = after["requests"] - before["requests"], after["batches"] - before["batches"]
    assert requests == 200
    assert batches < requests  # some requests shared a forward pass


def test_serve_without_the_extra_exits_2_naming_it():
    code = "import sys; sys.modules['starlette'] = None; from easyfirst.cli import main; main()"
    result = subprocess.run(
        [sys.executable, "-c", code, "serve"], capture_output=True, timeout=120, env={**os.environ}
    )
    assert result.returncode == 2
    assert result.stderr.decode().strip() == (
        'serving needs starlette, not installed here: pip install "easyfirst[serve]"'
    )


def test_a_busy_port_exits_2_naming_the_flag():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("serve", "--port", port, process=True)
    assert result.returncode == 2
    assert result.stderr.decode() == f"--port: cannot listen on 127.0.0.1:{port}: Address already in use\n"


@pytest.mark.slow
def test_a_qe_model_tags_sentence_pairs_as_tag_does(tmp_path):
    run = tmp_path / "qe"
    trained = run_cli(
        "train", "--task", "qe", "--train", QE_GAPS, "--dev", QE_GAPS, "--test", QE_GAPS,
        "--epochs", 1, "--seed", 1, "--threads", 1, "--output", run,
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr.decode()
    lines = {k: open(f"{QE_GAPS}.{s}").read().splitlines()[:3] for k, s in
             (("src", "src"), ("mt", "mt"), ("alignments", "src-mt.alignments"))}  # fmt: skip
    out = tmp_path / "out.tags"
    cli = run_cli("tag", "-m", run, "--src", f"{QE_GAPS}.src", "--mt", f"{QE_GAPS}.mt",
                  "--alignments", f"{QE_GAPS}.src-mt.alignments", "-o", out)  # fmt: skip
    assert cli.returncode == 0, cli.stderr.decode()
    with Server("-m", str(run)) as served:
        status, answer = served.post(lines)
        refused = served.post({"text": "a b"})
    assert status == 200, answer
    assert answer["task"] == "qe"
    expected = [line.split() for line in out.read_text().splitlines()[:3]]
    for sentence, tags in zip(answer["sentences"], expected, strict=True):
        merged = [sentence["gaps"][0]]
        for word, gap in zip(sentence["tags"], sentence["gaps"][1:], strict=True):
            merged += [word, gap]
        assert merged == tags
    sources = out.with_name("out.source_tags").read_text().splitlines()[:3]
    assert [s["source_tags"] for s in answer["sentences"]] == [line.split() for line in sources]
    assert refused[0] == 422 and "give src and mt and alignments" in refused[1]["error"]
