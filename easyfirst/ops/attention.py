"""The attention transformations ρ of Eq. 3, by name (the names and what each reads: easyfirst.ops.kinds).

Each takes the scores ``z`` ``(B, L)``, the word ``mask`` ``(B, L)``, the remaining attention budget
``u`` ``(B, L)`` (``1 − β`` in the paper, refreshed every L steps; zero on padding) and the step ``n``
(from 1), and returns ``α`` ``(B, L)``, a distribution over the real words of each sentence.

Where the scores come from (``Attention.scores``):

- ``"attention"``: z of Eq. 2, learned (softmax, sparsemax, entmax15, csoftmax, csparsemax); the
  decoder may divide them by a temperature or subtract a coverage penalty λβ first (§4);
- ``"output"``: the output layer of Eq. 6 applied to concat(h_i, s_iⁿ⁻¹), max over tags — the score of
  the vanilla easy-first decoder (Alg. 1, line 4), used by ``hard``;
- ``None``: a prescribed order that reads no score (uniform, left-to-right, right-to-left).

Only the *budgeted* transformations read ``u``: csoftmax and csparsemax (as the bound α ≤ u), and
``hard`` (a word is still uncovered while its budget is positive).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import entmax
import torch

from easyfirst.ops.constrained import csoftmax, csparsemax
from easyfirst.ops.kinds import KINDS

# Padding scores for the unbudgeted transforms: far below any score Eq. 2 can produce (|z| <= ||v||_1),
# but finite, so sparsemax's sort-and-cumsum never meets inf - inf.
_MASKED_SCORE = -1e6


@dataclass(frozen=True)
class Attention:
    name: str
    apply: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor]
    budgeted: bool  # as easyfirst.ops.kinds.KINDS says for the name
    scores: str | None


def _softmax(z: torch.Tensor, mask: torch.Tensor, u: torch.Tensor, n: int) -> torch.Tensor:
    # a finite padding score: a row with no word (an empty sentence) gets α = 0, not 0/0 = NaN
    return torch.softmax(z.masked_fill(~mask, _MASKED_SCORE), dim=-1) * mask


def _sparsemax(z: torch.Tensor, mask: torch.Tensor, u: torch.Tensor, n: int) -> torch.Tensor:
    return entmax.sparsemax(z.masked_fill(~mask, _MASKED_SCORE), dim=-1) * mask


def _entmax15(z: torch.Tensor, mask: torch.Tensor, u: torch.Tensor, n: int) -> torch.Tensor:
    return entmax.entmax15(z.masked_fill(~mask, _MASKED_SCORE), dim=-1) * mask


def _csoftmax(z: torch.Tensor, mask: torch.Tensor, u: torch.Tensor, n: int) -> torch.Tensor:
    return csoftmax(z, u * mask)


def _csparsemax(z: torch.Tensor, mask: torch.Tensor, u: torch.Tensor, n: int) -> torch.Tensor:
    return csparsemax(z, u * mask)


def _uniform(z: torch.Tensor, mask: torch.Tensor, u: torch.Tensor, n: int) -> torch.Tensor:
    maskf = mask.to(z.dtype)
    return maskf / maskf.sum(-1, keepdim=True).clamp_min(1)


def _one_hot(position: torch.Tensor, mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``(B, L)`` rows with a 1 at ``position`` ``(B,)`` (long), zero on padding."""
    return torch.nn.functional.one_hot(position, mask.shape[-1]).to(dtype) * mask


def _in_order(n: int, mask: torch.Tensor) -> torch.Tensor:
    """Position (from 0) of step n in left-to-right order, starting over every L_b steps: ``(B,)``."""
    return (n - 1) % mask.sum(-1).clamp_min(1)


def _left_to_right(z: torch.Tensor, mask: torch.Tensor, u: torch.Tensor, n: int) -> torch.Tensor:
    return _one_hot(_in_order(n, mask), mask, z.dtype)


def _right_to_left(z: torch.Tensor, mask: torch.Tensor, u: torch.Tensor, n: int) -> torch.Tensor:
    last = mask.sum(-1).clamp_min(1) - 1
    return _one_hot(last - _in_order(n, mask), mask, z.dtype)


def _hard(z: torch.Tensor, mask: torch.Tensor, u: torch.Tensor, n: int) -> torch.Tensor:
    """Vanilla easy-first (Alg. 1, line 6): all attention on the uncovered word with the highest score.

    The choice is an argmax, so no gradient flows through it; the sketch update it drives still is
    differentiable. Ties go to the leftmost word.
    """
    uncovered = mask & (u > 0)
    best = z.detach().masked_fill(~uncovered, float("-inf")).argmax(-1)
    return _one_hot(best, mask, z.dtype) * uncovered.any(-1, keepdim=True)


_RHO = {
    "csoftmax": _csoftmax,
    "csparsemax": _csparsemax,
    "softmax": _softmax,
    "sparsemax": _sparsemax,
    "entmax15": _entmax15,
    "uniform": _uniform,
    "left-to-right": _left_to_right,
    "right-to-left": _right_to_left,
    "hard": _hard,
}
ATTENTIONS: dict[str, Attention] = {
    name: Attention(name, _RHO[name], kind.budgeted, kind.scores) for name, kind in KINDS.items()
}
