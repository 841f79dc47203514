"""Entity tagging schemes: IOB1, BIO (IOB2) and BIOES, detection and conversion through BIO.

- **BIO** (IOB2): every entity starts with ``B-TYPE``, continues with ``I-TYPE``.
- **IOB1** (the original CoNLL-2003 release): entities are ``I-TYPE``; ``B-TYPE`` is used only for an
  entity that directly follows another of the same type.
- **BIOES** (IOBES): ``S-TYPE`` for one-word entities, ``B-`` … ``I-`` … ``E-TYPE`` for longer ones.

Files are read into BIO and written back in their own scheme; models are scored in BIO. A model learns
BIO tags, or BIOES ones (``[data] scheme = "bioes"``): its tag set then has ``E-`` and ``S-`` tags, and
:func:`to_bio` converts what it predicts back to BIO wherever tags are read out of it.
A ``I-TYPE`` that does not continue an entity of its type is read, as the CoNLL evaluation script
reads it, as the start of a new entity.
"""

from __future__ import annotations

from collections.abc import Sequence

SCHEMES = ("bio", "iob1", "bioes")
OUTSIDE = "O"
PREFIXES = {"bio": "BI", "iob1": "BI", "bioes": "BIES"}

Span = tuple[str, int, int]  # (type, first, last), inclusive


class SchemeError(ValueError):
    """A tag that does not belong to the scheme; ``index`` is its word's position (from 0)."""

    def __init__(self, message: str, index: int):
        super().__init__(message)
        self.index = index


def split_tag(tag: str) -> tuple[str, str] | None:
    """``B-PER`` → ``("B", "PER")``; ``O`` → ``("O", "")``; None for anything else."""
    if tag == OUTSIDE:
        return OUTSIDE, ""
    if len(tag) > 2 and tag[1] == "-" and tag[0] in "BIES":
        return tag[0], tag[2:]
    return None


def is_entity_tag(tag: str) -> bool:
    return split_tag(tag) is not None


def spans(tags: Sequence[str], scheme: str = "bio") -> list[Span]:
    """The entities of one sentence's tags in ``scheme``, as ``(type, first, last)`` word indices.

    Raises :class:`SchemeError` for a tag that is not ``O`` or ``X-TYPE`` with a prefix of the scheme.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}")
    found: list[Span] = []
    current: list | None = None  # [type, first, last] of the open entity
    for i, tag in enumerate(tags):
        parts = split_tag(tag)
        if parts is None or (parts[0] != OUTSIDE and parts[0] not in PREFIXES[scheme]):
            allowed = "/".join(f"{p}-" for p in PREFIXES[scheme])
            raise SchemeError(f"tag {tag!r} is not O or {allowed}TYPE (scheme {scheme.upper()})", i)
        prefix, kind = parts
        continues = current is not None and current[0] == kind and current[2] == i - 1
        if prefix == OUTSIDE:
            current = None
            continue
        starts = not continues if prefix in ("I", "E") else True  # B- and S- always start an entity
        if starts:
            current = [kind, i, i]
            found.append(current)  # type: ignore[arg-type]
        else:
            current[2] = i  # type: ignore[index]
        if prefix in ("E", "S"):
            current = None
    return [(kind, first, last) for kind, first, last in found]


def from_spans(entities: Sequence[Span], length: int, scheme: str = "bio") -> list[str]:
    """Tags of a sentence of ``length`` words holding ``entities`` (non-overlapping), in ``scheme``."""
    tags = [OUTSIDE] * length
    previous_end, previous_type = -2, None
    for kind, first, last in sorted(entities, key=lambda span: span[1]):
        if scheme == "bioes" and first == last:
            tags[first] = f"S-{kind}"
        else:
            if scheme == "iob1":
                adjacent = previous_end == first - 1 and previous_type == kind
                tags[first] = f"{'B' if adjacent else 'I'}-{kind}"
            else:
                tags[first] = f"B-{kind}"
            for i in range(first + 1, last + 1):
                tags[i] = f"I-{kind}"
            if scheme == "bioes":
                tags[last] = f"E-{kind}"
        previous_end, previous_type = last, kind
    return tags


def convert(tags: Sequence[str], source: str, target: str) -> list[str]:
    """Re-tag one sentence from scheme ``source`` to scheme ``target``."""
    return from_spans(spans(tags, source), len(tags), target)


def detect(sentences: Sequence[Sequence[str]]) -> str:
    """The scheme of a file's tags: ``bioes`` if any ``E-``/``S-`` occurs; otherwise ``iob1`` when
    entities more often start with ``I-`` (after ``O``, the sentence start or another type) than with
    a ``B-`` that does not follow its own type, else ``bio`` (also for files without entities)."""
    iob1 = bio = 0
    for tags in sentences:
        previous = ""
        for tag in tags:
            parts = split_tag(tag)
            if parts is None:
                previous = ""
                continue
            prefix, kind = parts
            if prefix in ("E", "S"):
                return "bioes"
            if prefix == "I" and previous != kind:
                iob1 += 1
            elif prefix == "B" and previous != kind:
                bio += 1
            previous = kind
    return "iob1" if iob1 > bio else "bio"


def learned_scheme(tags: Sequence[str]) -> str:
    """The scheme a model's tag set ``tags`` is in: ``bioes`` when every tag is ``O`` or ``B/I/E/S-TYPE``
    and some are ``E-`` or ``S-``, else ``bio`` (also for tags that are no entity tags: POS)."""
    parts = [split_tag(tag) for tag in tags]
    if all(parts) and any(p[0] in ("E", "S") for p in parts if p):
        return "bioes"
    return "bio"


def to_bio(tags: list[str], scheme: str) -> list[str]:
    """One sentence's predicted tags in the model's ``scheme`` → BIO (unchanged for ``bio``). A sequence
    that breaks BIOES (a model without CRF constraints) is read leniently, as :func:`spans` does."""
    return tags if scheme == "bio" else convert(tags, scheme, "bio")
