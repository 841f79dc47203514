"""What :meth:`easyfirst.api.Tagger.tag` returns: one :class:`Tagged` per sentence, whatever it was given
(tokenized sentences or text), with the attention, probabilities and QE heads' tags when asked.

Here, below ``api``, so that the tagging path (easyfirst.tagging.pipeline: the CLI's writers, the server)
and the API share the one record. Issue #45's transition is here too, for ``Tagger.tag`` and the Dask
cluster's ``tag`` alike: :func:`call_form` reads a call's ``records=`` and old keywords, and
:func:`old_result` turns its records back into what ``tag`` returned before (a list of tags, or a tuple
by flag) for a call without ``records=True``, deprecated for one release.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Tagged:
    """One tagged sentence: its tokens (the caller's, or the tokenizer's for text) and their tags, and
    what else was asked for (None otherwise).

    ``attention``: an ``(N, L)`` tensor of αⁿ (rows: sketch steps, columns: words; ``(0, L)`` for a model
    without sketch steps, ``(0, 0)`` for an empty sentence). ``probabilities``: an ``(L, K)`` tensor, each
    word's distribution over the tagger's tags (softmax, sparsemax or α-entmax as trained, or the CRF's
    marginals). ``heads``: the extra outputs' tags (easyfirst.data.outputs), ``{"gaps": N + 1 tags,
    "source_tags": one per source word}`` for the heads the model has (empty for none).

    ``offsets``: for a sentence read from text, each token's ``(start, end)`` characters in that text
    (``text``, the whole input, not only this sentence: ``text[start:end]`` is the token, as a Python
    slice); None for a sentence given as tokens. ``scheme``: the scheme of ``tags`` where they are
    entity tags (``"bio"``: a NER model's predictions are read out as BIO), else None; then
    :attr:`entities` gives the entity spans.

    A sentence reads as its ``(token, tag)`` pairs: ``for token, tag in sentence``, ``sentence[i]``,
    ``len(sentence)``, ``list(sentence)`` (what ``Tagger.tag(text)`` returned per sentence before).
    Two records are equal when their tokens, tags and heads are and their tensors hold the same values
    (or both are None), wherever the tokens came from (text, with offsets, or a list of tokens).
    """

    tokens: list[str]
    tags: list[str]
    attention: Any = None
    probabilities: Any = None
    heads: dict[str, list[str]] | None = None
    offsets: list[tuple[int, int]] | None = None
    text: str | None = field(default=None, repr=False)
    scheme: str | None = None

    @property
    def entities(self) -> list | None:
        """The entities of an entity model's sentence (easyfirst.tagging.entities.Entity: label, first and
        last token, start and end character where :attr:`offsets` are known, and the text), decoded as
        the CoNLL evaluation script reads tags; None for tags that are no entities (POS, QE)."""
        if self.scheme is None:
            return None
        from easyfirst.tagging.entities import entities

        return entities(self.tokens, self.tags, self.offsets, self.text, self.scheme)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return zip(self.tokens, self.tags, strict=True)

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return list(self)[index]
        return self.tokens[index], self.tags[index]

    def __eq__(self, other) -> bool:
        if not isinstance(other, Tagged):
            return NotImplemented
        return (
            (self.tokens, self.tags, self.heads) == (other.tokens, other.tags, other.heads)
            and _same(self.attention, other.attention)
            and _same(self.probabilities, other.probabilities)
        )

    __hash__ = None  # mutable, as a list

    def as_json(self) -> dict:
        """The sentence as JSON, what ``easyfirst tag --output-format jsonl`` writes on each line and the
        server answers in ``sentences``: ``tokens``; ``offsets`` (``[start, end]`` per token) for text;
        ``tags``; ``entities`` (each ``{"label", "first", "last", "start", "end", "text"}``, no
        ``start`` and ``end`` without offsets) for an entity model; and where asked or present,
        ``attention`` (a list of rows), ``probabilities`` (one row per word), ``gaps`` and
        ``source_tags``."""
        found: dict[str, Any] = {"tokens": self.tokens}
        if self.offsets is not None:
            found["offsets"] = [[start, end] for start, end in self.offsets]
        found["tags"] = self.tags
        if (spans := self.entities) is not None:
            found["entities"] = [entity.as_json() for entity in spans]
        if self.attention is not None:
            found["attention"] = self.attention.tolist()
        if self.probabilities is not None:
            found["probabilities"] = self.probabilities.tolist()
        found.update(self.heads or {})
        return found


def _same(a, b) -> bool:
    """Two tensors (or None) hold the same values in the same shape."""
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and a.equal(b)


def heads_by_name(tagged: Sequence[Tagged]) -> dict[str, list[list[str]]]:
    """The QE heads' tags of a call's sentences by head, as easyfirst.tasks.Task.score_outputs and the QE
    writer read them: ``{"gaps": [sentence 0's, …], "source_tags": […]}``; empty without heads."""
    names = (tagged[0].heads or {}) if tagged else {}
    return {name: [t.heads[name] for t in tagged] for name in names}


# ---------------------------------------------------------------------------- issue #45's transition

# Tagger.tag's keywords before issue #45, still taken for one release (without records=True)
DEPRECATED = {
    "return_attention": "attention=True, each Tagged's .attention",
    "return_probabilities": "probabilities=True, each Tagged's .probabilities",
    "return_heads": "heads=True, each Tagged's .heads",
    "batches": "nothing (easyfirst tag's read-ahead, internal now)",
}
# what each kind of input gave before issue #45, and how to read it from records=True's list
OLD_RESULTS = {
    "sentences": ("a list of tag lists", "[t.tags for t in tagged]"),
    "tokens": ("one sentence's tags", "tagged[0].tags"),
    "text": ("each sentence's (token, tag) pairs", "[list(t) for t in tagged]"),
}
ASKED = ("attention", "probabilities", "heads")


@dataclass(frozen=True)
class CallForm:
    """How a ``Tagger.tag`` call is answered, by :func:`call_form`: the records of what ``asked`` names
    (attention, probabilities, QE heads), given back as they are (``old`` None) or as the result of
    before issue #45 (``old``: the input's kind, for :func:`old_result`), with a DeprecationWarning of
    ``warning``; ``batches``: the deprecated ``batches=`` given, or None."""

    asked: tuple[bool, bool, bool]
    old: str | None = None
    warning: str | None = None
    batches: Any = None


def call_form(kind: str, records, asked: tuple[bool, bool, bool], deprecated: dict) -> CallForm:
    """The form of a ``Tagger.tag`` call on input of ``kind`` (``"sentences"``, ``"tokens"`` or
    ``"text"``: easyfirst.api.input_kind) with ``records=`` and the new keywords ``asked``, and the
    keywords of before issue #45 in ``deprecated``. ``records=True``: one Tagged per sentence, no old
    keyword. ``records=None`` (the default for this release) and ``False``: the old result of the old
    keywords, with a warning that says what to write instead; the new keywords need ``records=True``."""
    unknown = sorted(set(deprecated) - set(DEPRECATED))
    if unknown:
        raise TypeError(f"Tagger.tag() got an unexpected keyword argument {unknown[0]!r}")
    if records is not None and not isinstance(records, bool):
        raise TypeError(
            f"records: True (one Tagged per sentence) or None/False (the old result), not {records!r}"
        )
    if records:
        if deprecated:
            raise TypeError(
                f"Tagger.tag(records=True) takes no {', '.join(f'{k}=' for k in deprecated)} (before issue "
                f"#45): use {'; '.join(DEPRECATED[k] for k in deprecated)}"
            )
        return CallForm(asked)
    if any(asked):
        given = ", ".join(f"{name}=True" for name, on in zip(ASKED, asked, strict=True) if on)
        raise TypeError(
            f"Tagger.tag: {given} fills the Tagged records of records=True: give records=True too "
            "(the default from the next release)"
        )
    what, read = OLD_RESULTS[kind]
    flags = [name for name in DEPRECATED if name != "batches" and deprecated.get(name)]
    if flags:
        what += f", in a tuple with {', '.join(name[len('return_') :] for name in flags)}"
    said = "without records=" if records is None else "(records=False)"
    warning = (
        f"Tagger.tag {said} returns what it returned before issue #45 ({what}), for this release only: "
        f"the next makes records=True the default and drops the old results. Write tagged = tag(..., "
        f"records=True), one Tagged per sentence, and read {read}"
        + "".join(f"; for {name}=, {DEPRECATED[name]}" for name in deprecated)
    )
    old = tuple(bool(deprecated.get(f"return_{name}")) for name in ASKED)
    return CallForm(old, kind, warning, deprecated.get("batches"))


def old_result(tagged: list[Tagged], form: CallForm):
    """What ``Tagger.tag`` returned before issue #45 for the call of ``form`` (deprecated): per sentence
    its tags, or for text its ``(token, tag)`` pairs; with any of attention, probabilities and QE heads
    asked, the tuple ``(tags, attention, probabilities, heads)`` of those asked, in that order, ``heads``
    a dict of lists (:func:`heads_by_name`); for one sentence's tokens, that sentence's items rather than
    lists of one."""
    attention, probabilities, heads = form.asked
    parts: list[Any] = [[list(t) for t in tagged] if form.old == "text" else [t.tags for t in tagged]]
    if attention:
        parts.append([t.attention for t in tagged])
    if probabilities:
        parts.append([t.probabilities for t in tagged])
    if heads:
        parts.append(heads_by_name(tagged))
    if form.old == "tokens":
        parts = [part[0] for part in parts]
    return tuple(parts) if len(parts) > 1 else parts[0]
