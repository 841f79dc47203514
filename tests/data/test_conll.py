"""CoNLL column files and tagging schemes: conversions (by hand and as properties over random entity
sets), scheme detection, the reader's tolerance and its errors, writing back in the input's scheme and
encoding, and the real CoNLL-2003 files."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import IOB1_LATIN1, NER_SAMPLE
from easyfirst.data import schemes
from easyfirst.data.conll import read_conll, tag_conll
from easyfirst.errors import InputError


def test_iob1_to_bio_and_back_by_hand():
    iob1 = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG", "I-ORG"]
    bio = ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG", "I-ORG"]
    assert schemes.convert(iob1, "iob1", "bio") == bio
    assert schemes.convert(bio, "bio", "iob1") == iob1


def test_bio_to_bioes_and_back_by_hand():
    bio = ["B-PER", "I-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC"]
    bioes = ["B-PER", "I-PER", "E-PER", "O", "S-LOC", "B-LOC", "E-LOC"]
    assert schemes.convert(bio, "bio", "bioes") == bioes
    assert schemes.convert(bioes, "bioes", "bio") == bio


def test_an_i_tag_that_continues_nothing_starts_an_entity_as_conlleval_reads_it():
    assert schemes.spans(["O", "I-PER", "I-LOC", "I-LOC"], "bio") == [("PER", 1, 1), ("LOC", 2, 3)]
    assert schemes.convert(["O", "I-PER", "I-LOC"], "bio", "bio") == ["O", "B-PER", "B-LOC"]


def test_a_tag_outside_the_scheme_is_an_error_with_its_position():
    with pytest.raises(schemes.SchemeError) as error:
        schemes.spans(["O", "B-PER", "S-PER"], "bio")
    assert error.value.index == 2 and "S-PER" in str(error.value)
    with pytest.raises(schemes.SchemeError):
        schemes.spans(["NNP"], "bio")


@st.composite
def sentences_with_entities(draw):
    """A length and non-overlapping entities ``(type, first, last)``, adjacent ones included."""
    length = draw(st.integers(0, 12))
    entities, i = [], 0
    while i < length:
        if draw(st.booleans()):
            last = draw(st.integers(i, min(length - 1, i + 3)))
            entities.append((draw(st.sampled_from(["PER", "LOC", "ORG"])), i, last))
            i = last + 1
        else:
            i += 1
    return length, entities


@given(sentences_with_entities(), st.sampled_from(schemes.SCHEMES), st.sampled_from(schemes.SCHEMES))
def test_every_scheme_encodes_the_same_entities(case, source, target):
    length, entities = case
    tags = schemes.from_spans(entities, length, source)
    assert schemes.spans(tags, source) == entities
    converted = schemes.convert(tags, source, target)
    assert schemes.spans(converted, target) == entities
    assert schemes.convert(converted, target, source) == tags


@given(sentences_with_entities())
def test_detection_finds_the_scheme_that_wrote_the_tags(case):
    length, entities = case
    for scheme in schemes.SCHEMES:
        tags = schemes.from_spans(entities, length, scheme)
        found = schemes.detect([tags])
        if scheme == "bioes" and entities:
            assert found == "bioes"
        elif scheme == "iob1" and entities:
            assert found == "iob1"  # every IOB1 file with an entity has one starting with I-
        elif scheme == "bio" and entities:
            assert found == "bio"


def test_detection_defaults_to_bio_without_entities():
    assert schemes.detect([["O", "O"], []]) == "bio"


def test_reads_the_ner_sample():
    sentences = read_conll(NER_SAMPLE)
    assert len(sentences) == 80  # 4 documents of 20 sentences; -DOCSTART- lines are not sentences
    first = sentences[0]
    assert first.words[:3] == ["Rio", "de", "Janeiro"] and first.tags[:3] == ["B-LOC", "I-LOC", "I-LOC"]
    assert first.line == 3 and first.extra["scheme"] == "bio"


def test_latin1_read_as_utf8_is_an_error_that_suggests_the_encoding(tmp_path):
    path = tmp_path / "iob1.txt"
    path.write_bytes(IOB1_LATIN1)
    with pytest.raises(InputError, match=r"iob1.txt:3: not valid utf-8 .*--encoding latin-1"):
        read_conll(path)


def test_reads_iob1_latin1_into_bio_with_the_encoding(tmp_path):
    path = tmp_path / "iob1.txt"
    path.write_bytes(IOB1_LATIN1)
    sentences = read_conll(path, encoding="latin-1")
    assert [s.words for s in sentences] == [
        ["José", "Müller", "met", "Zoë", "Ström", "in", "Zürich", "Köln", "."],
        ["Größe", "zählt"],
    ]
    assert sentences[0].tags == ["B-PER", "I-PER", "O", "B-PER", "B-PER", "O", "B-LOC", "B-ORG", "O"]
    assert sentences[0].extra["scheme"] == "iob1" and sentences[1].line == 15


def test_tagging_with_gold_tags_writes_iob1_latin1_back_byte_for_byte(tmp_path):
    """The acceptance round trip at the library level: read (IOB1 → BIO), predict the gold BIO tags,
    write back in place of the tag column (BIO → IOB1) in Latin-1: the very same bytes."""
    path = tmp_path / "iob1.txt"
    path.write_bytes(IOB1_LATIN1)
    gold = iter([s.tags for s in read_conll(path, encoding="latin-1")])
    out = io.BytesIO()
    count = tag_conll(
        path, out, lambda batch: [next(gold) for _ in batch], encoding="latin-1", replace=True, window=1
    )
    assert count == 2
    assert out.getvalue() == IOB1_LATIN1


def test_tagging_appends_a_column_and_keeps_everything_else():
    out = io.BytesIO()
    tag_conll(NER_SAMPLE, out, lambda batch: [["O"] * len(words) for words in batch])
    before = NER_SAMPLE.read_text().split("\n")
    after = out.getvalue().decode().split("\n")
    assert len(before) == len(after)
    for old, new in zip(before, after, strict=True):
        if old.strip() and not old.startswith("-DOCSTART-"):
            assert new == old + " O"
        else:
            assert new == old


def test_tagging_writes_the_scheme_asked_for():
    out = io.BytesIO()
    stream = io.BytesIO(b"Ann\nLee\nran\n")
    tag_conll(stream, out, lambda batch: [["B-PER", "I-PER", "O"]], scheme="bioes", name="x")
    assert out.getvalue() == b"Ann B-PER\nLee E-PER\nran O\n"


def test_a_byte_order_mark_stays_first_when_the_first_column_is_replaced():
    # gold tags in the first column, IOB1 (an I- tag starts an entity), a BOM before the first one: the
    # scheme is detected past the BOM, and the BOM stays in front of the replaced column
    text = "\ufeffI-PER Ann x\nO ran x\n\nI-LOC Rome x\n"

    def tagged(**options) -> str:
        out = io.BytesIO()
        predict = lambda batch: [["B-PER", "O"], ["B-LOC"]]  # noqa: E731
        tag_conll(io.BytesIO(text.encode()), out, predict, token_column=1, tag_column=0, name="x", **options)
        return out.getvalue().decode()

    assert tagged(replace=True) == text
    assert tagged() == "\ufeffI-PER Ann x I-PER\nO ran x O\n\nI-LOC Rome x I-LOC\n"


def test_tokens_only_files_are_tagged_in_bio_and_cannot_be_trained_on(tmp_path):
    out = io.BytesIO()
    tag_conll(io.BytesIO(b"Ann\tx\nran\tx\n"), out, lambda batch: [["B-PER", "O"]], name="x")
    assert out.getvalue() == b"Ann\tx\tB-PER\nran\tx\tO\n"  # tab-separated stays tab-separated
    path = tmp_path / "tokens.txt"
    path.write_text("Ann\nran\n")
    with pytest.raises(InputError, match=r"tokens.txt:1: .*only one column"):
        read_conll(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a B-PER\nb c O\n", r"bad.txt:2: expected 2 columns \(as on line 1\), found 3"),
        ("a X O\n\nb O\n", r"bad.txt:3: expected 3 columns"),
        ("a NN\nb NN\n", r"bad.txt:1: tag 'NN' is not O or B-/I-TYPE"),
        ("a O\nb Q-PER\n", r"bad.txt:2: tag 'Q-PER'"),
        ("a \x00 O\n", r"bad.txt:1: binary data"),
    ],
)
def test_malformed_files_name_the_line(tmp_path, text, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_conll(path)


def test_columns_are_configurable(tmp_path):
    path = tmp_path / "cols.txt"
    path.write_text("B-PER Ann x\nO ran y\n")
    sentences = read_conll(path, token_column=1, tag_column=0)
    assert sentences[0].words == ["Ann", "ran"] and sentences[0].tags == ["B-PER", "O"]
    with pytest.raises(InputError, match=r"cols.txt:1: the token column 5 does not exist"):
        read_conll(path, token_column=5)


@pytest.mark.realdata
def test_reads_the_real_conll2003_files(data_root):
    folder = data_root / "ner" / "conll2003"
    expected = {"eng.train": (14073, 203832), "eng.testa": (3250, 51362), "eng.testb": (3453, 46435)}
    for name, (count, tokens) in expected.items():
        sentences = read_conll(folder / name)
        assert (len(sentences), sum(len(s.words) for s in sentences)) == (count, tokens), name
        assert sentences[0].extra["scheme"] == "bio"
        types = {t[2:] for s in sentences for t in s.tags if t != "O"}
        assert types == {"PER", "LOC", "ORG", "MISC"}
