"""Entity spans of a tagged sentence, and where its tokens stand in the text they were read from.

One definition for every front end: :attr:`easyfirst.tagging.tagged.Tagged.entities` (the Python API),
the JSON of ``easyfirst tag --output-format jsonl`` and of the server, and the spaCy component's
``doc.ents`` all come from :func:`entities`, which reads tags by easyfirst.data.schemes.spans: the
conventions of the CoNLL evaluation script (conlleval, and seqeval's default mode), under which an
``I-`` that does not continue an entity of its type (after ``O``, at the start, after another type)
starts a new one, and in BIOES an ``E-`` or ``I-`` after ``O`` or after a finished entity starts one
too, an ``E-`` or ``S-`` ending it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from easyfirst.data.schemes import is_entity_tag, spans


@dataclass(frozen=True)
class Entity:
    """One entity: its ``label`` (``PER``), its ``first`` and ``last`` tokens (indices from 0, both
    included), its ``start`` and ``end`` characters in the text the sentence was read from (``text[start:
    end]``, as a Python slice; None for a sentence given as tokens) and its ``text``: those characters,
    or for a sentence given as tokens, its tokens joined by spaces."""

    label: str
    first: int
    last: int
    start: int | None
    end: int | None
    text: str

    def as_json(self) -> dict:
        """``{"label", "first", "last", "start", "end", "text"}``, without ``start`` and ``end`` where
        the offsets are not known."""
        found: dict = {"label": self.label, "first": self.first, "last": self.last}
        if self.start is not None:
            found |= {"start": self.start, "end": self.end}
        return found | {"text": self.text}


def tags_entities(tagset: Sequence[str]) -> bool:
    """Whether a model's tags are entity tags: each ``O`` or ``B/I/E/S-TYPE``, some not ``O`` (a NER
    model, in BIO, IOB1 or BIOES; not POS tags nor QE's OK/BAD)."""
    return all(map(is_entity_tag, tagset)) and any(tag != "O" for tag in tagset)


def entities(
    tokens: Sequence[str],
    tags: Sequence[str],
    offsets: Sequence[tuple[int, int]] | None = None,
    text: str | None = None,
    scheme: str = "bio",
) -> list[Entity]:
    """The entities of one sentence: its ``tokens``, their ``tags`` in ``scheme`` and, for a sentence
    read from ``text``, each token's ``(start, end)`` in it."""
    found = []
    for label, first, last in spans(tags, scheme):
        if offsets is not None and text is not None:
            start, end = offsets[first][0], offsets[last][1]
            found.append(Entity(label, first, last, start, end, text[start:end]))
        else:
            found.append(Entity(label, first, last, None, None, " ".join(tokens[first : last + 1])))
    return found


def locate(tagged: Sequence, sentences: Sequence[Sequence], text: str) -> None:
    """Give each record of ``tagged`` (easyfirst.tagging.tagged.Tagged) the offsets of its tokens in
    ``text``: ``sentences`` holds the tokens it was read as, one list of easyfirst.data.text.Token per
    record, in order."""
    for record, tokens in zip(tagged, sentences, strict=True):
        record.offsets = [(token.start, token.end) for token in tokens]
        record.text = text
