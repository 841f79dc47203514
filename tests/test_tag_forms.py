"""``Tagger.tag``'s one contract (issue #45): one Tagged per sentence for text and for tokenized
sentences, what was asked for and nothing else; and the call forms of before, deprecated, which still
give what they gave, with a warning that names the replacement."""

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


@pytest.fixture(scope="module")
def tagger():
    return Tagger.load()


@pytest.fixture(scope="module")
def sentences():
    return [s.words for s in read_conllu(SAMPLE)] + [[]]


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


# ---------------------------------------------------------------------------- the deprecated forms


def test_the_old_flags_warn_and_give_the_old_tuple_with_the_same_values(tagger, sentences):
    new = tagger.tag(sentences, attention=True, probabilities=True)
    tags = [t.tags for t in new]
    with pytest.warns(
        DeprecationWarning, match=r"return_attention=\.\.\.\) is deprecated: use attention=True"
    ):
        found, attention = tagger.tag(sentences, return_attention=True)
    assert found == tags and all(a.equal(t.attention) for a, t in zip(attention, new, strict=True))
    with pytest.warns(DeprecationWarning) as caught:
        found, attention, probabilities = tagger.tag(
            sentences, return_probabilities=True, return_attention=True
        )
    said = sorted(str(w.message).split(" is deprecated")[0] for w in caught)  # one for each old keyword
    assert said == ["Tagger.tag(return_attention=...)", "Tagger.tag(return_probabilities=...)"]
    assert found == tags
    assert all(a.equal(t.attention) for a, t in zip(attention, new, strict=True))
    assert all(p.equal(t.probabilities) for p, t in zip(probabilities, new, strict=True))
    with pytest.warns(DeprecationWarning, match="heads=True"):
        found, heads = tagger.tag(sentences, return_heads=True)
    assert found == tags and heads == {}
    with pytest.warns(DeprecationWarning):
        assert tagger.tag(sentences, return_attention=False) == tags  # given at all: the old return


def test_old_text_and_token_forms_give_what_they_gave(tagger):
    new = tagger.tag(TEXT, attention=True)
    with pytest.warns(DeprecationWarning):
        pairs, attention = tagger.tag(TEXT, return_attention=True)
    assert pairs == [list(t) for t in new] and isinstance(pairs[0][0], tuple)
    assert all(a.equal(t.attention) for a, t in zip(attention, new, strict=True))
    tokens = new[0].tokens
    (one,) = tagger.tag([tokens], attention=True, probabilities=True)  # alone: its own batch
    with pytest.warns(DeprecationWarning, match=r"tag\(\[tokens\]\)"):
        assert tagger.tag(tokens) == one.tags == new[0].tags
    with pytest.warns(DeprecationWarning) as caught:
        tags, attention, probabilities = tagger.tag(tokens, return_attention=True, return_probabilities=True)
    assert len(caught) == 3 and tags == one.tags
    assert attention.equal(one.attention) and probabilities.equal(one.probabilities)
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="return_heads"):
        tagger.tag(TEXT, return_heads=True)


def test_the_warning_points_at_the_callers_line(tagger):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tagger.tag(["She", "reads", "."])
    assert [w.filename for w in caught] == [__file__]
    assert "issue #45" in str(caught[0].message)


def test_old_and_new_forms_cannot_be_mixed_and_unknown_keywords_are_refused(tagger):
    with pytest.raises(TypeError, match="not with the deprecated forms"):
        tagger.tag([["a"]], attention=True, return_probabilities=True)
    with pytest.raises(TypeError, match="not with the deprecated forms"):
        tagger.tag(["She", "reads"], attention=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'return_attentions'"):
        tagger.tag([["a"]], return_attentions=True)


def test_the_raindrop_and_the_writers_use_no_deprecated_form(tagger, tmp_path):
    """Every internal caller takes the new form (pyproject.toml also makes a deprecated call from inside
    easyfirst an error for the whole suite)."""
    import io

    from easyfirst.data.conllu import tag_conllu
    from easyfirst.tagging.pipeline import predictor, write_distributions

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        tagger.raindrop("She reads a book.")
        out = io.BytesIO()
        tag_conllu(SAMPLE, out, predictor(tagger, 256))
        write_distributions(io.BytesIO(), tagger, iter([["She", "reads"]]), 256)
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
