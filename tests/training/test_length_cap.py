"""The training-length cap per task (issue #29): POS keeps the paper's 50 words (§5.1, N = L costs
O(L²)); NER and QE (N = 5, O(5L)) train on every sentence; more than 1% dropped is a warning."""

from __future__ import annotations

import pytest

from easyfirst.config import Config
from easyfirst.data.sentence import Sentence
from easyfirst.training.reporting import length_cap


def sentences(lengths: list[int]) -> list[Sentence]:
    return [Sentence(["w"] * n, ["X"] * n, line=i + 1) for i, n in enumerate(lengths)]


def test_the_default_cap_of_each_task():
    assert Config.for_task("pos").data.max_train_length == 50
    assert Config.for_task("ner").data.max_train_length == 0
    assert Config.for_task("qe").data.max_train_length == 50


def test_the_cap_keeps_sentences_up_to_the_limit_and_never_empty_ones():
    kept, said, warning = length_cap(sentences([3, 50, 51, 0, 80]), 50)
    assert [len(s.words) for s in kept] == [3, 50]
    assert said == "2 sentences" and "dropped 2 of 5" in warning  # the empty one is not "longer"
    kept, said, warning = length_cap(sentences([3] * 200 + [51]), 50)
    assert said == "200 sentences, 1 longer than 50 words dropped" and warning is None
    kept, said, warning = length_cap(sentences([3, 50, 51, 0, 80]), 0)
    assert [len(s.words) for s in kept] == [3, 50, 51, 80] and warning is None
    assert said == "4 sentences, no length cap"


@pytest.mark.parametrize(("long", "warned"), [(1, False), (2, True)])
def test_more_than_one_percent_dropped_is_a_warning_naming_the_key(long, warned):
    """1 of 100 dropped is 1% (no warning); 2 of 100 is 2%."""
    kept, _, warning = length_cap(sentences([10] * (100 - long) + [60] * long), 50)
    assert len(kept) == 100 - long
    assert (warning is not None) == warned
    if warned:
        assert "2 of 100 training sentences (2.0%" in warning and "max_train_length" in warning
