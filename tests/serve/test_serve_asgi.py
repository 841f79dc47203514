"""The served app, called as an ASGI app in this process (no server, no socket): easyfirst/serve/__init__.py
(create_app, require), app.py (the routes, their JSON errors, attention_counter, model_name), page.py
(GET /) and batching.py (requests that arrive together tagged together, each given its own sentences)."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgi import serving

from conftest import extra
from easyfirst.api import Tagger
from easyfirst.errors import InputError
from easyfirst.serve import Limits, create_app, require
from easyfirst.serve.app import attention_counter, model_name
from easyfirst.serve.batching import Batcher
from easyfirst.serve.page import page
from easyfirst.serve.requests import Job

extra("starlette", "serve")
SENTENCES = [["The", "dog", "barks", "."], ["Cats", "sleep"]]


@pytest.fixture(scope="module")
def tagger():
    return Tagger.load()


def app():
    """An app runs once (its batcher's thread is started by its lifespan): one for each test."""
    return create_app(limits=Limits(body_bytes=2_000, sentences=3, words=10, attention=30))


def test_require_passes_here_and_a_missing_model_is_refused(tmp_path):
    require()
    with pytest.raises(InputError, match="model folder not found"):
        create_app(tmp_path / "none")


def test_health_page_and_tags_agree_with_the_tagger(tagger):
    body = json.dumps({"sentences": SENTENCES}).encode()
    health, index, tagged = serving(
        app(),
        [
            ("GET", "/health", b"", ()),
            ("GET", "/", b"", ()),
            ("POST", "/tag", body, [("content-type", "application/json")]),
        ],
    )
    assert health[0] == 200
    assert json.loads(health[2]) | {"requests": 0, "batches": 0} == {
        "status": "ok", "model": "en_ewt_upos", "task": "pos", "requests": 0, "batches": 0,
        "waiting_words": 0, "refused": 0, "expired": 0,
    }  # fmt: skip
    assert index[0] == 200 and index[1]["content-type"].startswith("text/html")
    assert b"<title>easyfirst: en_ewt_upos</title>" in index[2]
    assert tagged[0] == 200
    answer = json.loads(tagged[2])
    assert [s["tokens"] for s in answer["sentences"]] == SENTENCES
    assert [s["tags"] for s in answer["sentences"]] == [t.tags for t in tagger.tag(SENTENCES)]
    assert "attention" not in answer["sentences"][0]


BAD = [
    (b'{"text": "a b"}', [("content-type", "text/plain")], 415, "the body must be JSON"),
    (b"{not json", [], 400, "the body is not JSON"),
    (b'{"sentences": [["a"]], "colour": true}', [], 422, "unknown key 'colour'"),
    (json.dumps({"sentences": [["a"]] * 4}).encode(), [], 413, "4 sentences, over the limit of 3"),
    (
        json.dumps({"sentences": [["w"] * 11]}).encode(),
        [],
        413,
        "sentence 0 has 11 words, over the limit of 10",
    ),
    # N = L steps: 6 words ask for 6 × 6 = 36 attention values, over 30
    (json.dumps({"sentences": [["w"] * 6], "attention": True}).encode(), [], 413, "36 values"),
    (b" " * 2_001, [("content-length", "2001")], 413, "the body has 2,001 bytes, over the limit of 2,000"),
    (b" " * 2_001, [], 413, "the body is over the limit of 2,000 bytes"),  # read no further
]


def test_a_bad_request_is_answered_in_json_with_its_status():
    answers = serving(app(), [("POST", "/tag", body, headers) for body, headers, _, _ in BAD])
    for (got, answer_headers, answer), (_, _, status, error) in zip(answers, BAD, strict=True):
        assert got == status and answer_headers["content-type"] == "application/json"
        assert error in json.loads(answer)["error"]


def test_the_attention_counter_sums_steps_times_words(tagger):
    count = attention_counter(tagger.model)
    assert count([3, 4]) == 3 * 3 + 4 * 4  # the bundled model runs N = L steps
    assert model_name(None) == "en_ewt_upos" and model_name("en-ner") == "en_conll03_ner"


def test_the_page_has_a_text_box_or_the_three_qe_fields():
    about = {"model": "m<1>", "task": "pos", "colors": {}}
    text = page(about, pairs=False)
    assert "<title>easyfirst: m&lt;1&gt;</title>" in text and "<textarea" in text
    assert "A POS model." in text and "connect-src 'self'" in text
    pairs = page({**about, "task": "qe"}, pairs=True)
    assert 'data-key="text"' not in pairs
    assert [
        k for k in ("src", "mt", "alignments") if f'<input type="text" id="{k}" data-key="{k}">' in pairs
    ] == [
        "src",
        "mt",
        "alignments",
    ]
    assert "A QE model." in pairs


def test_requests_that_arrive_together_are_one_batch_and_each_gets_its_own(tagger):
    batcher = Batcher(tagger, window=2.0, max_sentences=3)  # the third sentence fills the group at once
    batcher.start()
    try:

        async def both():
            return await asyncio.gather(
                batcher.tag(Job([SENTENCES[0]], attention=True)), batcher.tag(Job([SENTENCES[1], ["Hi"]]))
            )

        first, second = asyncio.run(both())
    finally:
        batcher.stop()
    assert (batcher.requests, batcher.batches) == (2, 1)
    assert [s.tokens for s in first] == [SENTENCES[0]] and [s.tokens for s in second] == [
        SENTENCES[1],
        ["Hi"],
    ]
    assert [s.tags for s in first + second] == [
        t.tags for t in tagger.tag([SENTENCES[0], SENTENCES[1], ["Hi"]])
    ]
    assert first[0].attention is not None and second[0].attention is None  # only what each asked for
    assert not batcher.thread.is_alive()
