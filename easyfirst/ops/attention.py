"""The attention transformations ρ of Eq. 3, by name.

Each takes the scores ``z`` ``(B, L)``, the word ``mask`` ``(B, L)`` and the remaining attention budget
``u`` ``(B, L)`` (``1 − β`` in the paper; zero on padding) and returns ``α`` ``(B, L)``, a distribution
over the real words of each sentence. Only the *budgeted* transformations read ``u``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import entmax
import torch

from easyfirst.ops.constrained import csoftmax

# Padding scores for the unbudgeted transforms: far below any score Eq. 2 can produce (|z| <= ||v||_1),
# but finite, so sparsemax's sort-and-cumsum never meets inf - inf.
_MASKED_SCORE = -1e6


@dataclass(frozen=True)
class Attention:
    name: str
    apply: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
    budgeted: bool  # reads u = remaining budget (1 − β); sparse and "even" (β^L = 1 with N = L)


def _softmax(z: torch.Tensor, mask: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    return torch.softmax(z.masked_fill(~mask, float("-inf")), dim=-1)


def _sparsemax(z: torch.Tensor, mask: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    return entmax.sparsemax(z.masked_fill(~mask, _MASKED_SCORE), dim=-1) * mask


def _csoftmax(z: torch.Tensor, mask: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    return csoftmax(z, u * mask)


ATTENTIONS: dict[str, Attention] = {
    a.name: a
    for a in (
        Attention("csoftmax", _csoftmax, budgeted=True),
        Attention("softmax", _softmax, budgeted=False),
        Attention("sparsemax", _sparsemax, budgeted=False),
    )
}
