"""``Tagger.tag``'s one contract (issue #45): with ``records=True``, one Tagged per sentence for text, one
sentence's tokens and tokenized sentences, what was asked for and nothing else; without it (this
release's default), exactly what each call form returned before, with one DeprecationWarning that says
what to write instead. The old results are checked against tags known by hand, not against the records."""

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
            warnings.simplefilter("error")  # records=True: nothing deprecated
            tagged = tagger.tag(given, records=True)
        assert type(tagged) is list and all(type(t) is Tagged for t in tagged)
        assert [t.tokens for t in tagged] == tokens
    assert [t.tags for t in tagger.tag([BOOK, MAT], records=True)] == [BOOK_TAGS, MAT_TAGS]
    assert [list(t) for t in tagger.tag(LATE, records=True)] == LATE_PAIRS
    assert tagger.tag(BOOK, records=True)[0].tags == BOOK_TAGS


def test_text_and_sentences_give_one_tagged_per_sentence(tagger, sentences):
    from_text = tagger.tag(TEXT, records=True)
    words = [s.words for s in split(TEXT)]
    assert all(type(t) is Tagged for t in from_text) and [t.tokens for t in from_text] == words
    from_words = tagger.tag(words, records=True)
    assert all(type(t) is Tagged for t in from_words) and from_text == from_words
    tagged = tagger.tag(sentences, records=True)
    assert [t.tokens for t in tagged] == sentences and [len(t.tags) for t in tagged] == list(
        map(len, sentences)
    )
    assert tagger.tag([], records=True) == [] and tagger.tag("", records=True) == []


def test_what_was_not_asked_for_is_none(tagger, sentences):
    for t in tagger.tag(sentences[:3], records=True) + tagger.tag(TEXT, records=True):
        assert (t.attention, t.probabilities, t.heads) == (None, None, None)
    size = len(tagger.tags)
    for asked in ({"attention": True}, {"probabilities": True}, {"heads": True}):
        for t in tagger.tag(sentences, records=True, **asked):
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
        tagger.tag(TEXT, records=True, heads=True)


def test_a_tagged_sentence_reads_as_its_token_tag_pairs(tagger):
    (tagged,) = tagger.tag([["She", "reads", "."]], records=True, probabilities=True)
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


# ---------------------------------------------------------------------------- the deprecated forms


def old_call(tagger, *args, said="without records=", **kwargs):
    """``tagger.tag(*args, **kwargs)`` in an old form: its result, after checking it warned once, from
    this file (the caller's line), saying what to write instead and that the default changes."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = tagger.tag(*args, **kwargs)
    assert [(w.category, w.filename) for w in caught] == [(DeprecationWarning, __file__)]
    message = str(caught[0].message)
    assert message.startswith(f"Tagger.tag {said} returns what it returned before issue #45")
    assert "records=True" in message and "the next makes records=True the default" in message
    return result, message


@pytest.mark.parametrize("records", [None, False], ids=["records left out", "records=False"])
def test_each_old_form_gives_its_old_result_with_a_warning(tagger, records):
    """The result of before issue #45, type and value, for each kind of input: tag lists, one sentence's
    tags, (token, tag) pairs per sentence of text."""
    said = "without records=" if records is None else "(records=False)"
    given = {} if records is None else {"records": False}
    found, message = old_call(tagger, [BOOK, MAT], said=said, **given)
    assert found == [BOOK_TAGS, MAT_TAGS] and all(type(tags) is list for tags in found)
    assert "a list of tag lists" in message and "read [t.tags for t in tagged]" in message
    found, message = old_call(tagger, BOOK, said=said, **given)
    assert found == BOOK_TAGS and "one sentence's tags" in message and "tagged[0].tags" in message
    found, message = old_call(tagger, LATE, said=said, **given)
    assert found == LATE_PAIRS and type(found[0][0]) is tuple and "[list(t) for t in tagged]" in message
    assert (
        old_call(tagger, [], said=said, **given)[0] == []
        and old_call(tagger, "", said=said, **given)[0] == []
    )


def test_the_old_flags_give_the_old_tuple(tagger):
    """return_attention=, return_probabilities=, return_heads=: a tuple (tags, attention, probabilities,
    heads) of those asked; for one sentence's tokens, that sentence's items."""
    (tags, attention, probabilities), message = old_call(
        tagger, [BOOK, MAT, []], return_probabilities=True, return_attention=True
    )
    assert tags == [BOOK_TAGS, MAT_TAGS, []]
    assert [tuple(a.shape) for a in attention] == [(5, 5), (7, 7), (0, 0)]  # N = L steps
    torch.testing.assert_close(attention[0].sum(1), torch.ones(5))  # each step's α a distribution
    assert [tuple(p.shape) for p in probabilities] == [(5, 17), (7, 17), (0, 17)]
    assert [tagger.tags[k] for k in probabilities[1].argmax(1).tolist()] == MAT_TAGS
    assert "for return_attention=, attention=True, each Tagged's .attention" in message
    assert "for return_probabilities=, probabilities=True" in message
    (tags, heads), _ = old_call(tagger, [BOOK], return_heads=True)
    assert tags == [BOOK_TAGS] and heads == {}  # a POS model has no QE heads
    (tags, attention), _ = old_call(tagger, BOOK, return_attention=True)
    assert tags == BOOK_TAGS and type(attention) is torch.Tensor and tuple(attention.shape) == (5, 5)
    (pairs, probabilities), _ = old_call(tagger, LATE, return_probabilities=True)
    assert pairs == LATE_PAIRS and [tuple(p.shape) for p in probabilities] == [(3, 17), (4, 17)]
    assert old_call(tagger, [BOOK], return_attention=False)[0] == [BOOK_TAGS]  # given at all: the old return
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="heads"):
        tagger.tag(TEXT, return_heads=True)


def test_the_old_and_new_results_hold_the_same_values(tagger, sentences):
    new = tagger.tag(sentences, records=True, attention=True, probabilities=True)
    with pytest.warns(DeprecationWarning):
        tags, attention, probabilities = tagger.tag(
            sentences, return_attention=True, return_probabilities=True
        )
    assert tags == [t.tags for t in new]
    assert all(a.equal(t.attention) for a, t in zip(attention, new, strict=True))
    assert all(p.equal(t.probabilities) for p, t in zip(probabilities, new, strict=True))


def test_old_and_new_forms_cannot_be_mixed_and_unknown_keywords_are_refused(tagger):
    with pytest.raises(TypeError, match=r"takes no return_probabilities=.*use probabilities=True"):
        tagger.tag([["a"]], records=True, return_probabilities=True)
    with pytest.raises(TypeError, match=r"takes no batches="):
        tagger.tag([["a"]], records=True, batches=[])
    for records in (None, False):  # the new keywords fill records: they are asked for with records=True
        with pytest.raises(TypeError, match=r"attention=True fills the Tagged records.*records=True"):
            tagger.tag([["a"]], records=records, attention=True)
    with pytest.raises(TypeError, match="probabilities=True, heads=True fills"):
        tagger.tag(["She", "reads"], probabilities=True, heads=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'return_attentions'"):
        tagger.tag([["a"]], return_attentions=True)
    with pytest.raises(TypeError, match="records: True"):
        tagger.tag([["a"]], records="yes")


def test_the_raindrop_and_the_writers_use_no_deprecated_form(tagger, tmp_path):
    """Every internal caller takes the new form (pyproject.toml also makes a deprecated call from inside
    easyfirst an error for the whole suite)."""
    import io

    from easyfirst.cli.evaluate import score
    from easyfirst.data.conllu import tag_conllu
    from easyfirst.tagging.pipeline import predictor, write_distributions
    from easyfirst.tasks import get_task

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        tagger.raindrop("She reads a book.")
        out = io.BytesIO()
        tag_conllu(SAMPLE, out, predictor(tagger, 256))
        write_distributions(io.BytesIO(), tagger, iter([["She", "reads"]]), 256)
        score(tagger, get_task("pos"), read_conllu(SAMPLE)[:3], 256)
    expected = [t.tags for t in tagger.tag([s.words for s in read_conllu(SAMPLE)], records=True)]
    assert [s.tags for s in iter_conllu(io.BytesIO(out.getvalue()))] == expected


def test_probabilities_are_the_evaluate_commands(tagger, sentences):
    """``easyfirst evaluate`` reads each sentence's distribution from its Tagged."""
    from easyfirst.cli.evaluate import score
    from easyfirst.tasks import get_task

    gold = read_conllu(SAMPLE)
    report = score(tagger, get_task("pos"), gold, 256)
    tagged = tagger.tag([s.words for s in gold], records=True)
    right = sum(
        a == b for s, t in zip(gold, tagged, strict=True) for a, b in zip(s.tags, t.tags, strict=True)
    )
    assert report["accuracy"] == pytest.approx(right / sum(len(s.words) for s in gold))
    assert torch.isfinite(torch.tensor(report["ece"]))


def test_every_tag_call_of_the_package_benchmarks_and_docs_asks_for_records():
    """No example or caller of ours relies on this release's default (the old results): every
    ``X.tag(...)`` call in easyfirst/, benchmarks/ and the python blocks of README.md and docs/ passes
    records=True, or passes its keywords on (``**options``, the Dask workers', which set it)."""
    import ast
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sources = {
        p: p.read_text(encoding="utf-8")
        for d in ("easyfirst", "benchmarks")
        for p in (root / d).rglob("*.py")
    }
    # README.md is left out: its example is written in the next release's form (one Tagged per sentence
    # without records=), which the change that makes that the default turns this test round for
    for page in (root / "docs").rglob("*.md"):
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
        sources |= {page.with_name(f"{page.name}#{k}"): block for k, block in enumerate(blocks)}
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
            keywords = {k.arg: k.value for k in node.keywords}
            given = keywords.get("records")
            if not (None in keywords or isinstance(given, ast.Constant) and given.value is True):
                missing.append(f"{path.relative_to(root)}:{node.lineno}")
    assert missing == [] and calls >= 20
