"""The inputs and gold tags of the extra outputs as tensors (easyfirst/data/heads.py), QE's two heads as the
example (easyfirst.tasks.qe GAPS, SOURCE_TAGS): one sentence's
source ids, alignment pairs and OK/BAD ids, and a batch of them padded, the alignment as a 0/1 matrix;
every expected tensor written out by hand."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest
import torch

from easyfirst.data.heads import ALIGNMENT, collate_heads, encode_heads
from easyfirst.data.vocab import IGNORE, Vocab
from easyfirst.tasks.qe import GAPS, SOURCE_TAGS

HEADS = (GAPS, SOURCE_TAGS)


class Vocabs:
    """Vocabularies with the aligned-source feature's vocabulary, as a QE model's."""

    def __init__(self, source_words):
        self.features = {"source": Vocab.build(Counter(source_words))}


VOCABS = Vocabs(["the", "cat", "the"])
THE, CAT = VOCABS.features["source"].index("the"), VOCABS.features["source"].index("cat")


def test_ok_is_0_and_bad_is_1():
    assert tuple(GAPS.labels) == tuple(SOURCE_TAGS.labels) == ("OK", "BAD")


def test_one_sentence_has_its_source_ids_pairs_and_tags():
    extra = {"source": ["the", "cat", "dog"], "alignment": [(0, 0), (1, 1), (2, 1)]}
    heads = encode_heads(
        VOCABS, HEADS, 2, extra, {"gaps": ["OK", "BAD", "OK"], "source_tags": ["BAD", "OK", "OK"]}
    )
    unknown = VOCABS.features["source"].index("dog")
    assert heads["source"].tolist() == [THE, CAT, unknown] and unknown not in (THE, CAT)
    assert heads["source" + ALIGNMENT].tolist() == [[0, 0], [1, 1], [2, 1]]
    assert heads["gaps"].tolist() == [0, 1, 0] and heads["source_tags"].tolist() == [1, 0, 0]


def test_no_source_or_no_source_vocabulary_means_no_heads():
    assert encode_heads(VOCABS, HEADS, 2, None) == {}
    assert encode_heads(VOCABS, HEADS, 2, {"scheme": "bio"}) == {}
    no_feature = SimpleNamespace(features={})
    assert encode_heads(no_feature, HEADS, 1, {"source": ["the"], "alignment": []}) == {}


@pytest.mark.parametrize(
    "targets, message",
    [
        ({"gaps": ["OK", "OK"]}, "2 gaps for 3 positions"),
        ({"source_tags": ["OK"] * 3}, "3 source_tags for 1"),
    ],
)
def test_tags_of_the_wrong_number_are_refused(targets, message):
    with pytest.raises(ValueError, match=message):
        encode_heads(VOCABS, HEADS, 2, {"source": ["cat"], "alignment": [(0, 1)]}, targets)


def item(heads):
    return SimpleNamespace(heads=heads)


def test_a_batch_is_padded_and_its_alignment_is_a_matrix():
    first = encode_heads(
        VOCABS,
        HEADS,
        2,
        {"source": ["the", "cat"], "alignment": [(0, 1), (1, 0)]},
        {"gaps": ["OK", "BAD", "OK"]},
    )
    second = encode_heads(VOCABS, HEADS, 1, {"source": ["cat"], "alignment": []}, {"gaps": ["BAD", "BAD"]})
    batch = collate_heads([item(first), item(second)], length=3)
    assert batch["source"].tolist() == [[THE, CAT], [CAT, 0]]
    expected = torch.zeros(2, 2, 3)
    expected[0, 0, 1] = expected[0, 1, 0] = 1.0
    assert torch.equal(batch["source" + ALIGNMENT], expected)
    assert batch["gaps"].tolist() == [[0, 1, 0], [1, 1, IGNORE]]  # to the longest item's
    assert "source_tags" not in batch  # no item has them


def test_a_batch_with_an_item_without_source_has_no_heads():
    first = encode_heads(VOCABS, HEADS, 1, {"source": ["the"], "alignment": [(0, 0)]})
    assert collate_heads([item(first), item({})], length=1) == {}
    assert collate_heads([], length=1) == {}
