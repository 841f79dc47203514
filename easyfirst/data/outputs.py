"""Extra outputs: what a task predicts beside the word tags, declared once (:class:`OutputHead`) and read
by every layer that handles them: the task's reader gives their gold tags (``gold``), the batches hold
their inputs and gold ids (easyfirst.data.heads), the model scores them and adds their losses
(easyfirst.model.heads), the training loop and ``easyfirst evaluate`` have them scored (the task's
``Scoring.score_outputs``), and the API returns them (``Tagger.tag(..., heads=True)``), with
``empty`` filled in for a sentence without words.

A head tags one of three kinds of positions (``over``):

- ``words``: one tag per word, from the word's output-layer input;
- ``gaps``: one tag for each of the n + 1 gaps around and between the n words, from the two words beside it;
- ``aligned``: one tag per word of a second sequence aligned to the words (``extra[aligned]`` and
  ``extra["alignment"]``, (i, j) pairs of that sequence's word i and word j), from the embedding of the
  feature ``aligned`` (easyfirst.data.features) and the words aligned to it.

A head is on in a model when its ``[model]`` key ``switch`` is true (always, without a switch; a task's
``prepare`` settles a switch left unset from the training data); its class weights, if any, are the
``[loss]`` key ``weights``. This module imports no torch: the tasks declare their heads here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

KINDS = ("words", "gaps", "aligned")


@dataclass(frozen=True)
class OutputHead:
    """One extra output of a task (see the module docstring)."""

    name: str  # the key of its gold tags, scores, predictions and parameters
    labels: tuple[str, ...]  # its tags, in the order of their ids (a fixed set, not learned from data)
    over: str  # what it tags: "words", "gaps" or "aligned"
    what: str  # what it predicts, for the log ("gap tags")
    gold: Callable[[Any], list[str] | None]  # its gold tags in a sentence of the task's reader (None: none)
    gold_from: str = "its gold tags"  # where the training data has them, for errors
    empty: str | None = None  # the tag of each position of a sentence without words (the model sees none)
    switch: str | None = None  # the [model] key that turns it on, an output setting (None: always on)
    weights: str | None = None  # the [loss] key of its class weights (tag → weight), None: none
    aligned: str | None = None  # over "aligned": the feature whose words it tags
    # the names its parameters had in a model.pt saved before (old key → key in its module), which
    # easyfirst.model.heads renames on loading
    saved_before: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.over not in KINDS:
            raise ValueError(
                f"OutputHead {self.name}: over must be one of {', '.join(KINDS)}, not {self.over!r}"
            )
        if (self.over == "aligned") != (self.aligned is not None):
            raise ValueError(f"OutputHead {self.name}: aligned names the feature of a head over 'aligned'")

    def positions(self, words: int, extra: Mapping | None) -> int:
        """How many tags this head gives a sentence of ``words`` words with ``extra``."""
        if self.over == "gaps":
            return words + 1
        if self.over == "aligned":
            return len((extra or {}).get(self.aligned, ()))
        return words

    def filled(self, extra: Mapping | None) -> list[str]:
        """Its tags for a sentence without words: ``empty`` at every position."""
        return [self.empty or self.labels[0]] * self.positions(0, extra)


def switched_on(heads: Sequence[OutputHead], output_settings) -> tuple[OutputHead, ...]:
    """The heads whose ``[model]`` switch is on in ``output_settings`` (the model's output layer's, where
    the switches are) and those without a switch."""
    return tuple(head for head in heads if head.switch is None or getattr(output_settings, head.switch))


def gold_outputs(heads: Sequence[OutputHead], sentence) -> dict[str, list[str]]:
    """The gold tags of ``heads`` that ``sentence`` has: name → tags."""
    found = {head.name: head.gold(sentence) for head in heads}
    return {name: tags for name, tags in found.items() if tags is not None}
