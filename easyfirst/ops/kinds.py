"""The attentions ρ of Eq. 3 by name, and what each reads: no torch here.

``easyfirst.ops.attention`` gives each name its function; this table is what the config checks and the
CLI's help lists, before (or without) importing torch. ``scores`` says where an attention's scores come
from (``"attention"``: learned, Eq. 2; ``"output"``: the output layer, for ``hard``; None: a prescribed
order), ``budgeted`` whether it reads the remaining budget ``u = 1 − β``, ``code`` the number compiled step
loops read instead of the name (easyfirst.backends.kernels; written here, never a position in a list).
This is the one table of attention names: ``easyfirst.ops.attention`` gives each its function, and every
backend reads its names and codes from here (easyfirst.backends).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AttentionKind:
    budgeted: bool  # reads u = remaining budget (1 − β); "even" (β^L = 1 with N = L)
    code: int  # for compiled loops (Numba reads integers, not names); unique, never reused
    scores: str | None = "attention"  # "attention" (Eq. 2), "output" (Eq. 6 scores, hard) or None

    @property
    def learned(self) -> bool:
        """Whether gradients reach Eq. 2's scores (and v) through it: not for the prescribed orders,
        nor for ``hard``, whose choice is an argmax of the output layer's scores."""
        return self.scores == "attention"


KINDS: dict[str, AttentionKind] = {
    "csoftmax": AttentionKind(code=0, budgeted=True),
    "csparsemax": AttentionKind(code=7, budgeted=True),
    "softmax": AttentionKind(code=2, budgeted=False),
    "sparsemax": AttentionKind(code=1, budgeted=False),
    "entmax15": AttentionKind(code=8, budgeted=False),
    "uniform": AttentionKind(code=3, budgeted=False, scores=None),
    "left-to-right": AttentionKind(code=4, budgeted=False, scores=None),
    "right-to-left": AttentionKind(code=5, budgeted=False, scores=None),
    "hard": AttentionKind(code=6, budgeted=True, scores="output"),
}
