"""Entity spans (easyfirst.tagging.entities on easyfirst.data.schemes.spans): malformed sequences read as
the CoNLL evaluation script reads them, checked against an independent port of seqeval's default
(conlleval-compatible) chunker over every short sequence, and against spans written out by hand."""

from __future__ import annotations

from itertools import product

import pytest

from easyfirst.data.schemes import spans
from easyfirst.data.text import split
from easyfirst.tagging.entities import Entity, entities, locate, tags_entities
from easyfirst.tagging.tagged import Tagged


def seqeval_chunks(tags: list[str]) -> list[tuple[str, int, int]]:
    """seqeval.metrics.sequence_labeling.get_entities (default mode, after conlleval's startOfChunk and
    endOfChunk, with S- added), rewritten from its published rules: (type, first, last)."""

    def end_of_chunk(prev_tag, tag, prev_type, type_):
        return (
            prev_tag in ("E", "S")
            or (prev_tag in ("B", "I") and tag in ("B", "S", "O"))
            or (prev_tag != "O" and prev_type != type_)
        )

    def start_of_chunk(prev_tag, tag, prev_type, type_):
        return (
            tag in ("B", "S")
            or (prev_tag in ("E", "S", "O") and tag in ("E", "I"))
            or (tag != "O" and prev_type != type_)
        )

    chunks, prev_tag, prev_type, begin = [], "O", "", 0
    for i, chunk in enumerate([*tags, "O"]):
        tag, type_ = chunk[0], chunk[2:]
        if end_of_chunk(prev_tag, tag, prev_type, type_):
            chunks.append((prev_type, begin, i - 1))
        if start_of_chunk(prev_tag, tag, prev_type, type_):
            begin = i
        prev_tag, prev_type = tag, type_
    return chunks


@pytest.mark.parametrize(
    ("scheme", "alphabet", "longest"),
    [
        ("bio", ["O", "B-X", "I-X", "B-Y", "I-Y"], 6),
        ("iob1", ["O", "B-X", "I-X", "B-Y", "I-Y"], 6),
        ("bioes", ["O", "B-X", "I-X", "E-X", "S-X", "B-Y", "I-Y", "E-Y", "S-Y"], 4),
    ],
)
def test_every_short_sequence_is_read_as_seqeval_reads_it(scheme, alphabet, longest):
    checked = 0
    for length in range(longest + 1):
        for tags in product(alphabet, repeat=length):
            assert spans(list(tags), scheme) == seqeval_chunks(list(tags)), tags
            checked += 1
    assert checked > 1000


@pytest.mark.parametrize(
    ("tags", "scheme", "expected"),
    [
        (["O", "I-PER"], "bio", [("PER", 1, 1)]),  # I- after O starts an entity
        (["I-PER", "I-PER"], "bio", [("PER", 0, 1)]),  # I- at the start, too
        (["B-PER", "I-LOC"], "bio", [("PER", 0, 0), ("LOC", 1, 1)]),  # I-X after B-Y
        (["B-PER", "I-PER", "O", "I-PER"], "bio", [("PER", 0, 1), ("PER", 3, 3)]),
        (["B-PER", "B-PER"], "bio", [("PER", 0, 0), ("PER", 1, 1)]),
        (["I-ORG", "I-ORG", "B-ORG", "I-ORG"], "iob1", [("ORG", 0, 1), ("ORG", 2, 3)]),
        (["E-LOC"], "bioes", [("LOC", 0, 0)]),  # E- without B-
        (["O", "I-LOC", "E-LOC"], "bioes", [("LOC", 1, 2)]),  # I- without B-, then E-
        (["S-LOC", "E-LOC"], "bioes", [("LOC", 0, 0), ("LOC", 1, 1)]),  # E- after a finished entity
        (["B-LOC", "E-LOC", "I-LOC"], "bioes", [("LOC", 0, 1), ("LOC", 2, 2)]),
        (["B-LOC", "I-LOC"], "bioes", [("LOC", 0, 1)]),  # B- never closed: up to its last I-
        (["B-LOC", "E-PER"], "bioes", [("LOC", 0, 0), ("PER", 1, 1)]),
        (["B-LOC", "S-LOC", "E-LOC"], "bioes", [("LOC", 0, 0), ("LOC", 1, 1), ("LOC", 2, 2)]),
    ],
)
def test_malformed_sequences_by_hand(tags, scheme, expected):
    assert spans(tags, scheme) == expected


def test_entities_carry_offsets_and_the_text_between_them():
    text = "  New York\r\nTimes hired\n\nAnna   Lee.  "
    (first, second) = split(text)
    assert [t.form for t in first.tokens] == ["New", "York", "Times", "hired"]
    tags = ["B-ORG", "I-ORG", "I-ORG", "O"]
    found = entities(first.words, tags, [(t.start, t.end) for t in first.tokens], text)
    assert found == [Entity("ORG", 0, 2, 2, 17, "New York\r\nTimes")]
    found = entities(second.words, ["B-PER", "I-PER", "O"], [(t.start, t.end) for t in second.tokens], text)
    assert found == [Entity("PER", 0, 1, 25, 35, "Anna   Lee")]


def test_without_offsets_the_text_is_the_tokens_joined():
    found = entities(["New", "York", "is"], ["B-LOC", "I-LOC", "O"])
    assert found == [Entity("LOC", 0, 1, None, None, "New York")]
    assert found[0].as_json() == {"label": "LOC", "first": 0, "last": 1, "text": "New York"}


def test_a_tagged_sentence_gives_entities_only_for_entity_tags_and_json_in_order():
    text = "Ask Bo Li."
    (sentence,) = split(text)
    record = Tagged(sentence.words, ["O", "B-PER", "I-PER", "O"], scheme="bio")
    locate([record], [sentence.tokens], text)
    assert record.offsets == [(0, 3), (4, 6), (7, 9), (9, 10)]
    assert record.as_json() == {
        "tokens": ["Ask", "Bo", "Li", "."],
        "offsets": [[0, 3], [4, 6], [7, 9], [9, 10]],
        "tags": ["O", "B-PER", "I-PER", "O"],
        "entities": [{"label": "PER", "first": 1, "last": 2, "start": 4, "end": 9, "text": "Bo Li"}],
    }
    assert list(record.as_json()) == ["tokens", "offsets", "tags", "entities"]
    pos = Tagged(["Ask"], ["VERB"])
    assert pos.entities is None and "entities" not in pos.as_json()


@pytest.mark.parametrize(
    ("tagset", "expected"),
    [
        (["O", "B-PER", "I-PER"], True),
        (["O", "S-LOC", "B-LOC", "E-LOC", "I-LOC"], True),
        (["NOUN", "VERB", "X"], False),
        (["OK", "BAD"], False),
        (["O"], False),
        (["O", "B-PER", "NOUN"], False),
    ],
)
def test_which_tag_sets_are_entities(tagset, expected):
    assert tags_entities(tagset) is expected
