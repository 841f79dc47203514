"""``Tagger.tag``'s one contract: one Tagged per sentence for text, one sentence's tokens and tokenized
sentences, what was asked for and nothing else, without a warning; the keywords of earlier releases'
results are refused. Tags are checked against tags known by hand."""

from __future__ import annotations

import json
import warnings

import pytest
import torch

from conftest import SAMPLE
from easyfirst import Tagger
from easyfirst.data.conllu import iter_conllu, read_conllu
from easyfirst.data.text import split
from easyfirst.tagging.tagged import Tagged, heads_by_name

TEXT = "She reads a book. Mr. Smith didn't pay $3.50 in the U.S. today."
# unambiguous sentences whose UPOS tags were checked by hand against the UD guidelines (tests/tagging/test_api.py),
# and what the bundled model tags them
BOOK = ["She", "reads", "a", "book", "."]
MAT = ["The", "cat", "sat", "on", "the", "mat", "."]
BOOK_TAGS = ["PRON", "VERB", "DET", "NOUN", "PUNCT"]
MAT_TAGS = ["DET", "NOUN", "VERB", "ADP", "DET", "NOUN", "PUNCT"]
LATE = "She reads. It's late."
LATE_PAIRS = [
    [("She", "PRON"), ("reads", "VERB"), (".", "PUNCT")],
    [("It", "PRON"), ("'s", "AUX"), ("late", "ADJ"), (".", "PUNCT")],
]


@pytest.fixture(scope="module")
def tagger():
    return Tagger.load()


@pytest.fixture(scope="module")
def sentences():
    return [s.words for s in read_conllu(SAMPLE)] + [[]]


def test_records_are_one_tagged_per_sentence_for_every_kind_of_input(tagger):
    for given, tokens in (
        ([BOOK, MAT], [BOOK, MAT]),  # tokenized sentences
        (BOOK, [BOOK]),  # one sentence's tokens
        (LATE, [["She", "reads", "."], ["It", "'s", "late", "."]]),  # text, split and tokenized
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the plain call warns of nothing
            tagged = tagger.tag(given)
        assert type(tagged) is list and all(type(t) is Tagged for t in tagged)
        assert [t.tokens for t in tagged] == tokens
    assert [t.tags for t in tagger.tag([BOOK, MAT])] == [BOOK_TAGS, MAT_TAGS]
    assert [list(t) for t in tagger.tag(LATE)] == LATE_PAIRS
    assert tagger.tag(BOOK)[0].tags == BOOK_TAGS


def test_text_and_sentences_give_one_tagged_per_sentence(tagger, sentences):
    from_text = tagger.tag(TEXT)
    words = [s.words for s in split(TEXT)]
    assert all(type(t) is Tagged for t in from_text) and [t.tokens for t in from_text] == words
    from_words = tagger.tag(words)
    assert all(type(t) is Tagged for t in from_words) and from_text == from_words
    tagged = tagger.tag(sentences)
    assert [t.tokens for t in tagged] == sentences and [len(t.tags) for t in tagged] == list(
        map(len, sentences)
    )
    assert tagger.tag([]) == [] and tagger.tag("") == []


def test_what_was_not_asked_for_is_none(tagger, sentences):
    for t in tagger.tag(sentences[:3]) + tagger.tag(TEXT):
        assert (t.attention, t.probabilities, t.heads) == (None, None, None)
    size = len(tagger.tags)
    for asked in ({"attention": True}, {"probabilities": True}, {"heads": True}):
        for t in tagger.tag(sentences, **asked):
            n = len(t.tokens)
            assert (t.attention is None) != ("attention" in asked)
            assert (t.probabilities is None) != ("probabilities" in asked)
            assert (t.heads is None) != ("heads" in asked)
            if t.attention is not None:
                assert tuple(t.attention.shape) == ((n, n) if n else (0, 0))  # N = L
            if t.probabilities is not None:
                assert tuple(t.probabilities.shape) == (n, size)
            if t.heads is not None:
                assert t.heads == {}  # a POS model has no QE heads
    with pytest.raises(ValueError, match="heads"):
        tagger.tag(TEXT, heads=True)


def test_a_tagged_sentence_reads_as_its_token_tag_pairs(tagger):
    (tagged,) = tagger.tag([["She", "reads", "."]], probabilities=True)
    assert list(tagged) == [("She", "PRON"), ("reads", "VERB"), (".", "PUNCT")]
    assert len(tagged) == 3 and tagged[1] == ("reads", "VERB") and tagged[-1] == (".", "PUNCT")
    assert tagged[:2] == [("She", "PRON"), ("reads", "VERB")]
    found = json.loads(json.dumps(tagged.as_json()))
    assert found["tokens"] == tagged.tokens and found["tags"] == tagged.tags
    assert len(found["probabilities"]) == 3 and "attention" not in found
    assert tagged == Tagged(list(tagged.tokens), list(tagged.tags), None, tagged.probabilities.clone())
    assert tagged != Tagged(tagged.tokens, tagged.tags)  # the probabilities differ
    with pytest.raises(TypeError):
        hash(tagged)


def test_heads_by_name_regroups_each_sentences_heads():
    tagged = [Tagged(["a"], ["OK"], heads={"gaps": ["OK", "BAD"]}), Tagged([], [], heads={"gaps": ["OK"]})]
    assert heads_by_name(tagged) == {"gaps": [["OK", "BAD"], ["OK"]]}
    assert heads_by_name([Tagged(["a"], ["OK"])]) == {} and heads_by_name([]) == {}


@pytest.mark.parametrize(
    "keyword", ["records", "return_attention", "return_probabilities", "return_heads", "batches"]
)
def test_the_keywords_of_earlier_results_are_refused(tagger, keyword):
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{keyword}'"):
        tagger.tag([BOOK], **{keyword: True})


def test_the_raindrop_and_the_writers_use_no_deprecated_form(tagger, tmp_path):
    """The package's own callers warn of nothing."""
    import io

    from easyfirst.cli.evaluate import score
    from easyfirst.data.conllu import tag_conllu
    from easyfirst.tagging.pipeline import predictor, write_distributions
    from easyfirst.tasks import get_task

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tagger.raindrop("She reads a book.")
        out = io.BytesIO()
        tag_conllu(SAMPLE, out, predictor(tagger, 256))
        write_distributions(io.BytesIO(), tagger, iter([["She", "reads"]]), 256)
        score(tagger, get_task("pos"), read_conllu(SAMPLE)[:3], 256)
    expected = [t.tags for t in tagger.tag([s.words for s in read_conllu(SAMPLE)])]
    assert [s.tags for s in iter_conllu(io.BytesIO(out.getvalue()))] == expected


def test_probabilities_are_the_evaluate_commands(tagger, sentences):
    """``easyfirst evaluate`` reads each sentence's distribution from its Tagged."""
    from easyfirst.cli.evaluate import score
    from easyfirst.tasks import get_task

    gold = read_conllu(SAMPLE)
    report = score(tagger, get_task("pos"), gold, 256)
    tagged = tagger.tag([s.words for s in gold])
    right = sum(
        a == b for s, t in zip(gold, tagged, strict=True) for a, b in zip(s.tags, t.tags, strict=True)
    )
    assert report["accuracy"] == pytest.approx(right / sum(len(s.words) for s in gold))
    assert torch.isfinite(torch.tensor(report["ece"]))


def test_no_tag_call_of_the_package_benchmarks_and_docs_passes_an_earlier_keyword():
    """Every ``X.tag(...)`` call in easyfirst/, benchmarks/ and the python blocks of README.md and docs/ takes the one
    return type: none passes ``records=`` or an earlier result's keyword."""
    import ast
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sources = {
        p: p.read_text(encoding="utf-8")
        for d in ("easyfirst", "benchmarks")
        for p in (root / d).rglob("*.py")
    }
    for page in [root / "README.md", *(root / "docs").rglob("*.md")]:
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
        sources |= {page.with_name(f"{page.name}#{k}"): block for k, block in enumerate(blocks)}
    earlier = {"records", "return_attention", "return_probabilities", "return_heads", "batches"}
    missing, calls = [], 0
    for path, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "tag"
            ):
                continue
            receiver = ast.unparse(node.func.value)
            if receiver == "self" or receiver.endswith("batcher"):
                continue  # the server's own tag methods (TagRoute.tag, Batcher.tag(job)), not Tagger.tag
            calls += 1
            if earlier & {k.arg for k in node.keywords}:
                missing.append(f"{path.relative_to(root)}:{node.lineno}")
    assert missing == [] and calls >= 20
