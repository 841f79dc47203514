"""What :meth:`easyfirst.api.Tagger.tag` returns: one :class:`Tagged` per sentence, whatever it was given
(tokenized sentences or text), with the attention, probabilities and QE heads' tags when asked.

Here, below ``api``, so that the tagging path (easyfirst.tagging.pipeline: the CLI's writers, the server)
and the API share the one record.
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
    ``len(sentence)``, ``list(sentence)``.
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
