"""Which sentences go into which batch, and (for reading ahead) the batches' ids padded, without torch.

:func:`bucket_indices` sorts sentences by length into batches; every front end's tagging and evaluation
forms its batches with it (easyfirst.data.batching, easyfirst.api). :func:`pack` pads a batch's word and
affix ids into flat 64-bit arrays, laid out as easyfirst.data.batching.collate lays out its tensors, so
that ``easyfirst tag``'s reading process (easyfirst.tagging.readahead), which runs before torch is imported,
can hand the tagger whole batches: :func:`easyfirst.data.batching.unpack` makes tensors of them without
a copy.

This module must not import torch at its top: the reading process imports it before torch is.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

# Padded tokens (sentences × longest length) per batch when tagging or evaluating: with N = L a batch
# costs ~B·L_max², and on one CPU thread EWT test tagged fastest with about this cap (benchmarks/speed/speed.py).
INFERENCE_MAX_TOKENS = 1024


def bucket_indices(
    lengths: Sequence[int],
    batch_size: int,
    generator=None,
    max_tokens: int | None = None,
) -> list[list[int]]:
    """Group sentence indices into batches of similar length.

    Sentences are sorted by length (ties broken at random when a ``generator``, a torch.Generator, is
    given, so that training sees different groupings each epoch) and cut into batches of
    ``batch_size``; with a generator the batch order is shuffled too. Without one, the grouping is
    deterministic and in increasing length, which is what evaluation and tagging want.

    ``max_tokens`` also closes a batch before its padded size (sentences × longest length) would
    exceed it (a longer sentence still gets a batch of its own). For inference: with N = L sketch
    steps a batch costs ~B·L_max², so 256 sentences padded to the longest of a mixed group waste
    much of the work; capping padded tokens keeps long sentences in small batches.
    """
    if generator is not None:
        import torch

        noise = torch.rand(len(lengths), generator=generator).tolist()
        order = sorted(range(len(lengths)), key=lambda i: (lengths[i], noise[i]))
    else:
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    if max_tokens is None:
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    else:
        batches = []
        for i in order:  # increasing length: the sentence joining a batch is its longest
            if (
                batches
                and len(batches[-1]) < batch_size
                and (len(batches[-1]) + 1) * lengths[i] <= max_tokens
            ):
                batches[-1].append(i)
            else:
                batches.append([i])
    if generator is not None:
        import torch

        permutation = torch.randperm(len(batches), generator=generator).tolist()
        batches = [batches[i] for i in permutation]
    return batches


@dataclass
class Packed:
    """One batch's ids, padded with 0 to its longest sentence: ``words`` ``size × length``,
    ``prefixes`` and ``suffixes`` ``size × length × affixes``, row-major; ``lengths``: each sentence's."""

    lengths: list[int]
    affixes: int
    words: array
    prefixes: array
    suffixes: array
    # name → (width, ids ``size × length × width``) of each feature beside the words (easyfirst.data.features)
    features: dict[str, tuple[int, array]] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.lengths)

    @property
    def length(self) -> int:
        return max(self.lengths)


def pack_batches(
    sentences: Sequence[Sequence[str]], vocabs, batch_size: int, max_tokens: int | None = INFERENCE_MAX_TOKENS
) -> list[Packed]:
    """The batches that ``Tagger.tag(sentences, batch_size=, max_tokens=)`` forms of the sentences that
    have words, their ids in ``vocabs`` (easyfirst.data.vocab.Vocabularies) padded."""
    ids = [vocabs.index(words) for words in sentences if words]
    batches = bucket_indices([len(words) for words, _, _ in ids], batch_size, max_tokens=max_tokens)
    return [pack([ids[i] for i in indices], vocabs.max_affix) for indices in batches]


def pack(
    ids: Sequence[tuple[Sequence[int], Sequence[int], Sequence[int]]],
    affixes: int,
    features: Sequence[Mapping[str, Sequence[tuple[int, ...]]]] = (),
) -> Packed:
    """The batch of sentences whose ids (``Vocabularies.index``: word ids, then ``affixes`` prefix and
    suffix ids per word) are ``ids``, in that order; ``features``: each sentence's feature ids, a tuple
    per word (easyfirst.data.features.feature_rows), padded to the batch's longest tuple."""
    lengths = [len(words) for words, _, _ in ids]
    width, k = max(lengths), affixes
    words, prefixes, suffixes = (array("q", bytes(8 * len(ids) * width * n)) for n in (1, k, k))
    for row, (word_ids, prefix_ids, suffix_ids) in enumerate(ids):
        start, n = row * width, len(word_ids)
        words[start : start + n] = array("q", word_ids)
        prefixes[start * k : (start + n) * k] = array("q", prefix_ids)
        suffixes[start * k : (start + n) * k] = array("q", suffix_ids)
    packed = Packed(lengths, k, words, prefixes, suffixes)
    for name in features[0] if features else ():
        across = row_width(r for sentence in features for r in sentence[name])
        flat = array("q", bytes(8 * len(ids) * width * across))
        for row, sentence in enumerate(features):
            padded = padded_rows(sentence[name], across)
            flat[row * width * across : row * width * across + len(padded)] = array("q", padded)
        packed.features[name] = (across, flat)
    return packed


def row_width(rows: Iterable[tuple[int, ...]]) -> int:
    """The most ids of a word's row of feature ids (at least 1): the width they are padded to."""
    return max(map(len, rows), default=1) or 1


def padded_rows(rows: Iterable[tuple[int, ...]], width: int) -> list[int]:
    """The rows' ids, each row padded with 0 to ``width``, in one flat list."""
    return [i for row in rows for i in row + (0,) * (width - len(row))]
