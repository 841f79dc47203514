"""Length-bucketed batches of padded id tensors with masks.

A :class:`Batch` holds, for ``B`` sentences padded to the longest length ``L`` of the batch:

- ``words``: ``(B, L)`` word ids (0 = padding);
- ``prefixes``, ``suffixes``: ``(B, L, max_affix)`` affix n-gram ids (0 = padding or n-gram absent);
- ``mask``: ``(B, L)`` bool, true on real words;
- ``tags``: ``(B, L)`` gold tag ids, ``IGNORE`` on padding and on tags the vocabulary lacks (or None);
- ``order``: the positions of these sentences in the input list, to restore the input order;
- ``features``: name → ``(B, L, k)`` ids of each extra per-word input (easyfirst.data.features; 0 = padding);
- ``heads``: the inputs and gold tags of the model's extra outputs (easyfirst.data.heads), e.g. for
  quality estimation ``source`` ``(B, S)`` source word ids (0 = padding), ``source:alignment``
  ``(B, S, L)`` 1 where source word i is aligned to word j, and when known ``gaps`` ``(B, L + 1)`` and
  ``source_tags`` ``(B, S)`` gold ids (``IGNORE`` on padding);
- ``tokens``: the sentences' words as written (a list of B lists of strings), for a transformer
  (easyfirst.model.transformer), or None; ``sources``: for quality estimation, each sentence's source
  words and its alignment (``(i, j)`` pairs: source word i, MT word j), or None.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import torch

from easyfirst.data.buckets import Packed, bucket_indices
from easyfirst.data.features import encode_features
from easyfirst.data.heads import collate_heads, encode_heads
from easyfirst.data.outputs import OutputHead
from easyfirst.data.vocab import IGNORE, Vocabularies


@dataclass
class Batch:
    words: torch.Tensor
    prefixes: torch.Tensor
    suffixes: torch.Tensor
    mask: torch.Tensor
    tags: torch.Tensor | None
    order: list[int]
    features: dict[str, torch.Tensor] = field(default_factory=dict)
    heads: dict[str, torch.Tensor] = field(default_factory=dict)
    tokens: list | None = None
    sources: list | None = None

    @property
    def lengths(self) -> torch.Tensor:
        return self.mask.sum(1)

    def to(self, device: torch.device | str) -> Batch:
        def move(t):
            return None if t is None else t.to(device, non_blocking=True)

        return Batch(
            move(self.words),
            move(self.prefixes),
            move(self.suffixes),
            move(self.mask),
            move(self.tags),
            self.order,
            {name: move(ids) for name, ids in self.features.items()},
            {name: move(t) for name, t in self.heads.items()},
            self.tokens,
            self.sources,
        )


@dataclass
class Encoded:
    """One sentence as ids: ``words`` ``(n,)``, ``prefixes``/``suffixes`` ``(n, max_affix)``, ``tags`` ``(n,)``,
    ``features`` name → ``(n, k)``, ``heads`` the extra outputs' inputs and gold tags (see :func:`encode`)."""

    words: torch.Tensor
    prefixes: torch.Tensor
    suffixes: torch.Tensor
    tags: torch.Tensor | None
    features: dict[str, torch.Tensor] = field(default_factory=dict)
    heads: dict[str, torch.Tensor] = field(default_factory=dict)
    tokens: tuple[str, ...] | None = None
    source: tuple | None = None  # (source words, alignment pairs), for quality estimation

    def __len__(self) -> int:
        return len(self.words)


def encode(
    vocabs: Vocabularies,
    words: Sequence[str],
    tags: Sequence[str] | None = None,
    extra: Mapping | None = None,
    targets: Mapping[str, Sequence[str]] | None = None,
    *,
    heads: Sequence[OutputHead] = (),
) -> Encoded:
    """Index one sentence (``extra``: its task's inputs beside the words); unknown tags become ``IGNORE``.

    For a model with extra outputs (``heads``: ``EasyFirstTagger.outputs``; easyfirst.data.outputs) their
    inputs are indexed too, and ``targets`` (head name → gold tags, for training) become their gold ids.
    """
    word_ids, prefix_ids, suffix_ids = vocabs.index(words)
    k = vocabs.max_affix
    return Encoded(
        torch.tensor(word_ids, dtype=torch.long),
        torch.tensor(prefix_ids, dtype=torch.long).view(-1, k),
        torch.tensor(suffix_ids, dtype=torch.long).view(-1, k),
        None
        if tags is None
        else torch.tensor([vocabs.tags.stoi.get(t, IGNORE) for t in tags], dtype=torch.long),
        encode_features(vocabs.features, words, extra),
        encode_heads(vocabs, heads, len(words), extra, targets),
        tuple(words),
        (tuple(extra["source"]), tuple(map(tuple, extra["alignment"])))
        if extra and "source" in extra
        else None,
    )


def unpack(packed: Packed, order: list[int], tokens: list | None = None) -> Batch:
    """The :class:`Batch` of ids padded by easyfirst.data.buckets.pack (read ahead, without torch): what
    :func:`collate` makes of the same sentences (``tokens``: their words), its tensors made without a copy."""
    size, length, k = packed.size, packed.length, packed.affixes

    def tensor(ids, *shape: int) -> torch.Tensor:
        flat = torch.frombuffer(ids, dtype=torch.long) if len(ids) else torch.zeros(0, dtype=torch.long)
        return flat.view(*shape)

    mask = torch.arange(length) < torch.tensor(packed.lengths)[:, None]
    return Batch(
        tensor(packed.words, size, length),
        tensor(packed.prefixes, size, length, k),
        tensor(packed.suffixes, size, length, k),
        mask,
        None,
        order,
        {name: tensor(ids, size, length, width) for name, (width, ids) in packed.features.items()},
        tokens=tokens,
    )


def collate(items: Sequence[Encoded], order: list[int]) -> Batch:
    """Pad encoded sentences into one :class:`Batch`."""
    size, length = len(items), max((len(e) for e in items), default=0)
    k = items[0].prefixes.shape[1] if items else 1
    words = torch.zeros(size, length, dtype=torch.long)
    pre = torch.zeros(size, length, k, dtype=torch.long)
    suf = torch.zeros(size, length, k, dtype=torch.long)
    mask = torch.zeros(size, length, dtype=torch.bool)
    with_tags = bool(items) and items[0].tags is not None
    gold = torch.full((size, length), IGNORE, dtype=torch.long) if with_tags else None
    for b, item in enumerate(items):
        n = len(item)
        words[b, :n], pre[b, :n], suf[b, :n], mask[b, :n] = item.words, item.prefixes, item.suffixes, True
        if gold is not None:
            gold[b, :n] = item.tags
    features = {}
    for name in items[0].features if items else ():
        width = max(item.features[name].shape[1] for item in items)
        ids = features[name] = torch.zeros(size, length, width, dtype=torch.long)
        for b, item in enumerate(items):
            ids[b, : len(item), : item.features[name].shape[1]] = item.features[name]
    tokens = [list(item.tokens) for item in items] if items and items[0].tokens is not None else None
    sources = [item.source for item in items] if items and items[0].source is not None else None
    return Batch(words, pre, suf, mask, gold, order, features, collate_heads(items, length), tokens, sources)


def iterate_batches(
    items: Sequence[Encoded],
    batch_size: int,
    generator: torch.Generator | None = None,
    max_tokens: int | None = None,
) -> Iterator[Batch]:
    """Batches over encoded sentences (see :func:`bucket_indices`), each with its ``order``."""
    for indices in bucket_indices([len(e) for e in items], batch_size, generator, max_tokens):
        yield collate([items[i] for i in indices], indices)


def batches_in_order(items: Sequence[Encoded], batch_size: int) -> Iterator[Batch]:
    """Batches of consecutive sentences in the order given (training without shuffling, as the paper's
    own code reads its training file), neither sorted by length nor shuffled."""
    for indices in indices_in_order(len(items), batch_size):
        yield collate([items[i] for i in indices], indices)


def indices_in_order(count: int, batch_size: int) -> list[list[int]]:
    """The sentence indices of :func:`batches_in_order`'s batches over ``count`` sentences."""
    return [list(range(start, min(start + batch_size, count))) for start in range(0, count, batch_size)]
