"""The inputs and gold tags of a model's extra outputs (easyfirst.data.outputs, easyfirst.model.heads), as
tensors.

Per sentence (:func:`encode_heads`): for each head over an aligned sequence, that sequence's words as ids
in its feature's vocabulary (key: the feature's name, e.g. ``source``, whose embedding table the head
shares) and the alignment pairs (key ``NAME:alignment``); for training, each head's gold tags as ids in
its ``labels`` (key: the head's name). Per batch (:func:`collate_heads`): the same padded, an alignment as
a 0/1 matrix (aligned word × word).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from easyfirst.data.outputs import OutputHead
from easyfirst.data.vocab import IGNORE

ALIGNMENT = ":alignment"  # the key of an aligned sequence's alignment: its feature's name + this


def encode_heads(
    vocabs,
    heads: Sequence[OutputHead],
    n_words: int,
    extra: Mapping | None,
    targets: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, torch.Tensor]:
    """The inputs of ``heads`` for one sentence of ``n_words`` words with ``extra``: per aligned feature
    its ids ``(S,)`` and alignment pairs ``(P, 2)`` (aligned index, word index), where ``extra`` has them
    and the model has the feature's vocabulary; and the ids of the ``targets`` given (name → tags)."""
    encoded: dict[str, torch.Tensor] = {}
    for head in heads:
        feature = head.aligned
        if feature is None or feature in encoded or not extra or feature not in extra:
            continue
        if feature not in vocabs.features:
            continue
        vocab = vocabs.features[feature]
        encoded[feature] = torch.tensor([vocab.index(w) for w in extra[feature]], dtype=torch.long)
        encoded[feature + ALIGNMENT] = torch.tensor(list(extra["alignment"]), dtype=torch.long).view(-1, 2)
    for head in heads:
        if not targets or head.name not in targets:
            continue
        if head.over == "aligned" and head.aligned not in encoded:
            continue  # no inputs to tag: its gold tags cannot be trained on
        tags = targets[head.name]
        size = head.positions(n_words, extra)
        if len(tags) != size:
            raise ValueError(f"{len(tags)} {head.name} for {size} positions")
        ids = {tag: index for index, tag in enumerate(head.labels)}
        encoded[head.name] = torch.tensor([ids[t] for t in tags], dtype=torch.long)
    return encoded


def collate_heads(items: Sequence, length: int) -> dict[str, torch.Tensor]:
    """Pad the items' ``heads`` (see :func:`encode_heads`) into a batch whose sentences are padded to
    ``length``, for the keys every item has: an aligned feature's ids ``(B, S)`` (0: padding, S at least
    1) and its alignment ``(B, S, length)`` float 0/1; gold ids ``(B, T)`` padded with ``IGNORE`` to the
    longest item's."""
    if not items:
        return {}
    keys = [key for key in items[0].heads if all(key in item.heads for item in items)]
    size, batch = len(items), {}
    for key in keys:
        if key.endswith(ALIGNMENT):
            continue
        if key + ALIGNMENT in keys:  # an aligned sequence
            width = max(1, max(len(item.heads[key]) for item in items))
            ids = batch[key] = torch.zeros(size, width, dtype=torch.long)
            alignment = batch[key + ALIGNMENT] = torch.zeros(size, width, length)
            for b, item in enumerate(items):
                pairs = item.heads[key + ALIGNMENT]
                ids[b, : len(item.heads[key])] = item.heads[key]
                if len(pairs):
                    alignment[b, pairs[:, 0], pairs[:, 1]] = 1.0
        else:  # gold tags
            width = max(len(item.heads[key]) for item in items)
            gold = batch[key] = torch.full((size, width), IGNORE, dtype=torch.long)
            for b, item in enumerate(items):
                gold[b, : len(item.heads[key])] = item.heads[key]
    return batch
