"""The attentions ρ of Eq. 3 by name, and what each reads: no torch here.

``easyfirst.ops.attention`` gives each name its function; this table is what the config checks and the
CLI's help lists, before (or without) importing torch. ``scores`` says where an attention's scores come
from (``"attention"``: learned, Eq. 2; ``"output"``: the output layer, for ``hard``; None: a prescribed
order), ``budgeted`` whether it reads the remaining budget ``u = 1 − β``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AttentionKind:
    budgeted: bool  # reads u = remaining budget (1 − β); "even" (β^L = 1 with N = L)
    scores: str | None = "attention"  # "attention" (Eq. 2), "output" (Eq. 6 scores, hard) or None


KINDS: dict[str, AttentionKind] = {
    "csoftmax": AttentionKind(budgeted=True),
    "csparsemax": AttentionKind(budgeted=True),
    "softmax": AttentionKind(budgeted=False),
    "sparsemax": AttentionKind(budgeted=False),
    "entmax15": AttentionKind(budgeted=False),
    "uniform": AttentionKind(budgeted=False, scores=None),
    "left-to-right": AttentionKind(budgeted=False, scores=None),
    "right-to-left": AttentionKind(budgeted=False, scores=None),
    "hard": AttentionKind(budgeted=True, scores="output"),
}
