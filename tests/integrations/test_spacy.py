"""The spaCy component (easyfirst.integrations.spacy): found through the entry point, tags as
Tagger.tag does on the same tokens, batches nlp.pipe, keeps the attention and the raindrop on the Doc."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy
import pytest

from conftest import NER_SAMPLE, QE_GAPS, SAMPLE, extra, run_cli, train_on_sample

spacy = extra("spacy", "spacy")  # in the dev extra: CI has it

from spacy.tokens import Doc  # noqa: E402

from easyfirst import Tagger  # noqa: E402
from easyfirst.data.conll import read_conll  # noqa: E402
from easyfirst.data.conllu import read_conllu  # noqa: E402
from easyfirst.data.schemes import spans  # noqa: E402


@pytest.fixture(scope="module")
def tagger() -> Tagger:
    return Tagger.load()


@pytest.fixture(scope="module")
def sentences() -> list[list[str]]:
    return [s.words for s in read_conllu(SAMPLE)]


def trained(run: Path, task: str, sample: Path, epochs: int) -> Path:
    """A ``task`` model trained for ``epochs`` on ``sample`` (train = dev = test): seconds."""
    args = ["--train", sample, "--dev", sample, "--test", sample, "--epochs", epochs, "--seed", 1]
    result = run_cli("train", "--task", task, *args, "--threads", 1, "--output", run)
    assert result.returncode == 0, result.stderr.decode()
    return run


def blank_docs(nlp, sentences):
    return [Doc(nlp.vocab, words=words) for words in sentences]


def test_the_entry_point_finds_the_component_and_it_tags_as_the_tagger_does(tagger, sentences):
    nlp = spacy.blank("en")
    nlp.add_pipe("easyfirst")  # no import of easyfirst.integrations: spaCy's entry point
    tagged = tagger.tag(sentences, attention=True)
    tags, attention = [t.tags for t in tagged], [t.attention for t in tagged]
    docs = list(nlp.pipe(blank_docs(nlp, sentences), batch_size=7))
    assert [[t.pos_ for t in doc] for doc in docs] == tags
    assert all(t.tag_ == "" for doc in docs for t in doc)  # a UPOS model leaves the XPOS alone
    for doc, expected in zip(docs, attention, strict=True):
        (found,) = doc._.easyfirst_attention  # no sentence boundaries: the Doc is one sentence
        # other batches than the tagger's own (7 Docs here): the same up to float32 rounding
        assert found.shape == tuple(expected.shape)
        assert numpy.allclose(found, expected.numpy(), atol=1e-5)


def test_the_component_forks_no_process_inside_its_users_pipeline(sentences, monkeypatch):
    """Issue #45: a call of 2,000 words or more forked a pool of one process per core by default, inside
    the user's nlp.pipe; the component now tags in the pipeline's own process."""
    import multiprocessing

    import easyfirst.api
    from easyfirst.parallel import cores

    monkeypatch.setattr(easyfirst.api, "TaggingPool", lambda *a, **k: pytest.fail("forked a tagging pool"))
    nlp = spacy.blank("en")
    nlp.add_pipe("easyfirst", config={"batch_size": 8})
    many = sentences * (cores.MIN_WORDS // sum(map(len, sentences)) + 1)
    before = set(multiprocessing.active_children())
    docs = list(nlp.pipe(blank_docs(nlp, many), batch_size=len(many)))  # one Tagger.tag call
    assert sum(len(doc) for doc in docs) >= cores.MIN_WORDS
    assert set(multiprocessing.active_children()) == before


def test_nlp_pipe_calls_the_tagger_once_per_batch_of_docs(sentences, monkeypatch):
    nlp = spacy.blank("en")
    component = nlp.add_pipe("easyfirst")
    calls = []
    tag = component.tagger.tag
    monkeypatch.setattr(
        component.tagger, "tag", lambda words, **kw: calls.append(len(words)) or tag(words, **kw)
    )
    docs = list(nlp.pipe(blank_docs(nlp, sentences[:10]), batch_size=4))
    assert calls == [4, 4, 2] and len(docs) == 10
    nlp(Doc(nlp.vocab, words=sentences[0]))
    assert calls[-1] == 1


def test_sentences_are_tagged_one_by_one_and_whitespace_is_no_word(tagger):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("easyfirst", config={"batch_size": 2})
    doc = nlp("She reads a book.\n\nIt is late .")
    sentences = [[t.text for t in sent if not t.is_space] for sent in doc.sents]
    assert len(sentences) == 2 and any(t.is_space for t in doc)
    assert [t.pos_ for t in doc if not t.is_space] == [tag for t in tagger.tag(sentences) for tag in t.tags]
    assert all(t.pos_ == "" for t in doc if t.is_space)
    assert [a.shape for a in doc._.easyfirst_attention] == [(5, 5), (4, 4)]
    for empty in ("", "  \n"):  # no words: nothing tagged, nothing to draw
        assert nlp(empty)._.easyfirst_attention == []
        with pytest.raises(ValueError, match="no words to draw"):
            nlp(empty)._.raindrop  # noqa: B018


def test_the_raindrop_is_the_taggers_and_the_attention_survives_serialisation(tagger):
    nlp = spacy.blank("en")
    nlp.add_pipe("easyfirst")
    words = ["She", "reads", "a", "book", "."]
    doc = nlp(Doc(nlp.vocab, words=words))
    assert doc._.raindrop.views() == tagger.raindrop(words).views()
    for copy in (Doc(nlp.vocab).from_bytes(doc.to_bytes()), pickle.loads(pickle.dumps(doc))):
        assert (copy._.easyfirst_attention[0] == doc._.easyfirst_attention[0]).all()
        assert copy._.raindrop.views() == doc._.raindrop.views()
    assert spacy.blank("en")("untagged")._.raindrop is None


@pytest.mark.slow
def test_an_xpos_model_sets_the_fine_grained_tag(tmp_path, sentences):
    run = tmp_path / "xpos"
    assert train_on_sample(run, "--tag-column", "xpos", "--threads", 1, epochs=1).returncode == 0
    nlp = spacy.blank("en")
    nlp.add_pipe("easyfirst", config={"model": str(run)})
    docs = list(nlp.pipe(blank_docs(nlp, sentences)))
    assert [[t.tag_ for t in doc] for doc in docs] == [t.tags for t in Tagger.load(run).tag(sentences)]
    assert all(t.pos_ == "" for doc in docs for t in doc)


@pytest.mark.slow
def test_an_ner_model_sets_the_entities_of_its_bio_tags(tmp_path):
    run = trained(tmp_path / "ner", "ner", NER_SAMPLE, epochs=3)
    sentences = [s.words for s in read_conll(NER_SAMPLE)]
    tags = [t.tags for t in Tagger.load(run).tag(sentences)]
    nlp = spacy.blank("en")
    nlp.add_pipe("easyfirst", config={"model": str(run)})
    docs = list(nlp.pipe(blank_docs(nlp, sentences)))
    found = [[(e.label_, e.start, e.end - 1) for e in doc.ents] for doc in docs]
    assert found == [spans(predicted) for predicted in tags]
    assert sum(map(len, found)) > 0  # the sample's entities are learnt in 3 epochs
    assert docs[0]._.easyfirst["tags"] == [tags[0]]


@pytest.mark.slow
def test_a_qe_model_is_refused_in_one_line_when_the_pipe_is_added(tmp_path):
    run = trained(tmp_path / "qe", "qe", QE_GAPS, epochs=1)
    nlp = spacy.blank("en")
    with pytest.raises(ValueError) as refused:
        nlp.add_pipe("easyfirst", config={"model": str(run)})
    message = str(refused.value)
    assert "\n" not in message and "qe model" in message and "pos or ner model" in message
    assert nlp.pipe_names == []
