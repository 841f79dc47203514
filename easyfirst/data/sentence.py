"""The sentence every reader produces and every task, the training loop and the API consume."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Sentence:
    """The words of one sentence with their gold tags; ``line`` is where it starts in its file.

    ``extra`` holds what a task's reader provides beside the words (see easyfirst.data.features), e.g.
    the source words and alignment of an MT sentence, or the tagging scheme of a column file.
    """

    words: list[str]
    tags: list[str]
    line: int
    extra: dict = field(default_factory=dict)
