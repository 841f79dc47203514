"""Dropout in two kinds, the tagger's ``[model] dropout_kind``.

- ``naive``: ``nn.Dropout``, a new Bernoulli mask for every word of every sentence (the paper's).
- ``locked``: variational dropout (Gal & Ghahramani 2016; "locked" in Merity et al. 2018): one mask per
  sentence, drawn once and applied at every word, so the same units are off across the whole sequence.
  Reimers & Gurevych (2017, arXiv:1707.06799) found it the better choice for BiLSTM-CRF NER taggers.

Both scale kept units by 1 / (1 − p) in training and are the identity in evaluation. Masks are
``(B, 1, D)`` for inputs ``(B, L, D)``; padding positions are multiplied like any other (their values
are masked downstream).
"""

from __future__ import annotations

import torch
from torch import nn


class LockedDropout(nn.Module):
    """Dropout with one mask per sentence, shared by its words: ``(B, L, D)`` → ``(B, L, D)``."""

    def __init__(self, p: float):
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"dropout must be in [0, 1), not {p}")
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        keep = 1.0 - self.p
        mask = torch.empty(x.shape[0], 1, x.shape[2], dtype=x.dtype, device=x.device).bernoulli_(keep)
        return x * (mask / keep)

    def extra_repr(self) -> str:
        return f"p={self.p}"


def make_dropout(kind: str, p: float) -> nn.Module:
    """The dropout of ``kind`` (naive, locked) at rate ``p``."""
    if kind == "naive":
        return nn.Dropout(p)
    if kind == "locked":
        return LockedDropout(p)
    raise ValueError(f"dropout kind must be naive or locked, not {kind!r}")
