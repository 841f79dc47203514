"""The inputs and gold tags of the QE heads (easyfirst.model.qe_heads), as tensors.

Per sentence (:func:`encode_heads`): the source words' ids in the aligned-source vocabulary (the
``source`` feature's, whose embedding table the source head shares), the alignment pairs, and for
training the gold gap and source tags as ids (``OK`` 0, ``BAD`` 1). Per batch (:func:`collate_heads`):
the same padded, the alignment as a 0/1 matrix source × MT.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from easyfirst.data.qe import QE_TAGS
from easyfirst.data.vocab import IGNORE

TAG_IDS = {tag: index for index, tag in enumerate(QE_TAGS)}  # OK 0, BAD 1: the heads' fixed tag set
TARGETS = ("gaps", "source_tags")


def encode_heads(
    vocabs, n_words: int, extra: Mapping | None, targets: Mapping[str, Sequence[str]] | None = None
) -> dict[str, torch.Tensor]:
    """``source`` ``(S,)`` ids, ``alignment`` ``(P, 2)`` pairs (source, MT) and the ``targets`` given
    (``gaps`` ``(n + 1,)``, ``source_tags`` ``(S,)``); empty for sentences without a source or models
    without a source vocabulary (no QE heads can use them)."""
    if not extra or "source" not in extra or "source" not in vocabs.features:
        return {}
    vocab = vocabs.features["source"]
    heads = {
        "source": torch.tensor([vocab.index(w) for w in extra["source"]], dtype=torch.long),
        "alignment": torch.tensor(list(extra["alignment"]), dtype=torch.long).view(-1, 2),
    }
    for name in TARGETS:
        if targets and name in targets:
            heads[name] = torch.tensor([TAG_IDS[t] for t in targets[name]], dtype=torch.long)
    expected = {"gaps": n_words + 1, "source_tags": len(extra["source"])}
    for name, size in expected.items():
        if name in heads and len(heads[name]) != size:
            raise ValueError(f"{len(heads[name])} {name} for {size} positions")
    return heads


def collate_heads(items: Sequence, length: int) -> dict[str, torch.Tensor]:
    """Pad the items' ``heads`` (see :func:`encode_heads`) into a batch whose MT sentences are padded to
    ``length``: ``source`` ``(B, S)``, ``alignment`` ``(B, S, length)`` float 0/1, and ``gaps``
    ``(B, length + 1)`` / ``source_tags`` ``(B, S)`` where every item has them."""
    if not items or any("source" not in item.heads for item in items):
        return {}
    size = len(items)
    width = max(1, max(len(item.heads["source"]) for item in items))
    source = torch.zeros(size, width, dtype=torch.long)
    alignment = torch.zeros(size, width, length)
    for b, item in enumerate(items):
        ids, pairs = item.heads["source"], item.heads["alignment"]
        source[b, : len(ids)] = ids
        if len(pairs):
            alignment[b, pairs[:, 0], pairs[:, 1]] = 1.0
    heads = {"source": source, "alignment": alignment}
    for name, columns in (("gaps", length + 1), ("source_tags", width)):
        if all(name in item.heads for item in items):
            gold = heads[name] = torch.full((size, columns), IGNORE, dtype=torch.long)
            for b, item in enumerate(items):
                gold[b, : len(item.heads[name])] = item.heads[name]
    return heads
