"""The spaCy component's own functions (easyfirst/integrations/spacy.py), made through its factory
function without spaCy's entry point: which tokens are words, the tags written where the task says, the
entities of BIO tags, the Doc's record and raindrop, a QE model refused."""

from __future__ import annotations

import pytest

from conftest import extra
from easyfirst.api import Tagged, Tagger

spacy = extra("spacy", "spacy")
from easyfirst.integrations.spacy import EasyFirst, is_word, make_easyfirst  # noqa: E402


@pytest.fixture(scope="module")
def nlp():
    return spacy.blank("en")


@pytest.fixture(scope="module")
def upos(nlp):
    return make_easyfirst(nlp, "easyfirst", None, 2)


def test_a_token_with_whitespace_is_no_word(nlp):
    doc = nlp("a  b\n\nc")
    assert [t.text for t in doc if is_word(t)] == ["a", "b", "c"]
    assert EasyFirst.words(doc[:]) == [t.i for t in doc if t.text in ("a", "b", "c")]


def test_the_upos_component_tags_as_the_tagger_does_and_keeps_a_record(nlp, upos):
    doc = upos(nlp("The dog barks  at cats ."))
    words = [t.text for t in doc if is_word(t)]
    expected = Tagger.load().tag([words])[0].tags
    assert [t.pos_ for t in doc if is_word(t)] == expected
    assert all(t.pos_ == "" for t in doc if not is_word(t))
    record = doc._.easyfirst
    assert record["tags"] == [expected] and record["task"] == "pos"
    assert record["attention"][0].shape[1] == len(words)
    assert doc._.easyfirst_attention is record["attention"]
    assert [d.words for d in doc._.raindrop.drops] == [words]


def test_a_doc_without_words_has_no_raindrop(nlp, upos):
    doc = upos(nlp("   "))
    with pytest.raises(ValueError, match="the Doc has no words to draw"):
        _ = doc._.raindrop
    assert nlp("x")._.raindrop is None  # before the component ran


def test_an_entity_model_writes_the_spans_of_its_bio_tags(nlp):
    ner = make_easyfirst(nlp, "ner", "en-ner", 8)
    assert ner.sets == "ents"
    doc = nlp("Ann Lee met Bo in Oslo")
    tags = ["B-PER", "I-PER", "O", "B-PER", "O", "B-LOC"]
    ner.write(doc, [[0, 1, 2, 3, 4, 5]], [Tagged([t.text for t in doc], tags, scheme="bio")])
    assert [(e.start, e.end, e.label_) for e in doc.ents] == [(0, 2, "PER"), (3, 4, "PER"), (5, 6, "LOC")]
    # a malformed sequence as the API reads it: I- after O starts an entity, I-LOC after B-PER another
    doc = nlp("Ann Lee met Bo in Oslo")
    tags = ["O", "I-PER", "O", "B-PER", "I-LOC", "O"]
    ner.write(doc, [[0, 1, 2, 3, 4, 5]], [Tagged([t.text for t in doc], tags, scheme="bio")])
    assert [(e.start, e.end, e.label_) for e in doc.ents] == [(1, 2, "PER"), (3, 4, "PER"), (4, 5, "LOC")]


def test_a_qe_model_is_refused(nlp, tmp_path):
    from easyfirst.runs import save_model

    tagger = Tagger.load()
    config = tagger.config.replaced("data", task="qe")  # a loaded model's config is read-only
    save_model(tmp_path / "qe", tagger.model, config, tagger.vocabs)
    with pytest.raises(
        ValueError, match="is a qe model, which tags QE file prefixes.*needs a pos or ner model"
    ):
        make_easyfirst(nlp, "qe", str(tmp_path / "qe"), 8)
