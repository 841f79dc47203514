"""The single-row pieces of :mod:`easyfirst.backends.lean`'s decoder, in NumPy: each attention
transformation on one row of scores (csoftmax, sparsemax, softmax, the prescribed orders, vanilla
easy-first's hard choice) with its backward, the budget of a step, and the windows of Eq. 1 over the
rows of a sentence. Pure functions of their arrays; the loops that call them are in lean.py (and,
compiled, in kernels.py).
"""

from __future__ import annotations

import numpy as np
import torch

from easyfirst.ops.constrained import _EXP_RANGE, csoftmax_forward
from easyfirst.ops.kinds import KINDS

# the attention transformations these rows compute (names of easyfirst.ops.kinds.KINDS), and the codes
# the loops take, read from that table by name
_ROWS = ("csoftmax", "sparsemax", "softmax", "uniform", "left-to-right", "right-to-left", "hard")
ROW_ATTENTIONS = frozenset(_ROWS)
CSOFTMAX, SPARSEMAX, SOFTMAX, UNIFORM, LEFT_TO_RIGHT, RIGHT_TO_LEFT, HARD = (KINDS[n].code for n in _ROWS)
PRESCRIBED = (UNIFORM, LEFT_TO_RIGHT, RIGHT_TO_LEFT)
LEARNED = tuple(KINDS[n].code for n in _ROWS if KINDS[n].learned)  # gradients reach Eq. 2 through these


def csoftmax_row(z: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """α and the free set A of csoftmax(z; u) for one row (see easyfirst.ops.constrained)."""
    if np.abs(z).max() > _EXP_RANGE:  # rare: the log-space path of the batched function
        alpha, free = csoftmax_forward(torch.from_numpy(z)[None], torch.from_numpy(u)[None])
        return alpha[0].numpy(), free[0].numpy()
    e = np.exp(z.astype(np.float64))
    wide = u.astype(np.float64)
    # u = 0 gives q = +inf (clamped first); a clamped word's share e·w may overflow to +inf (still clamped)
    with np.errstate(divide="ignore", over="ignore"):
        order = np.argsort(-(e / wide), kind="stable")  # decreasing q = exp(z)/u
        budgets = wide[order]
        used = np.cumsum(budgets)
        if used[-1] <= 1:  # no slack: every constraint is tight
            return u.copy(), np.zeros(z.shape, dtype=bool)
        left = budgets - used + 1  # r_k = 1 − Σ_{j<k} u_j
        tail = np.cumsum(e[order][::-1])[::-1]  # T_k = Σ_{j≥k} exp(z_j), from the small end
        share = e * (left / tail).max()
    free = share < wide
    return np.where(free, share, wide).astype(z.dtype), free


def sparsemax_row(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """α = sparsemax(z) for one row and its support (as entmax.sparsemax): α = (z − τ)₊ with τ from the
    k largest scores, k the largest with 1 + k z_(k) > Σ_{j≤k} z_(j)."""
    ordered = np.sort(z)[::-1]
    cumulative = np.cumsum(ordered) - 1
    size = int(np.count_nonzero(np.arange(1, z.shape[0] + 1) * ordered > cumulative))
    alpha = np.maximum(z - cumulative[size - 1] / size, 0)
    return alpha, alpha > 0


def softmax_row(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """α = softmax(z) for one row; every word is free."""
    e = np.exp(z - z.max())
    return e / e.sum(), np.ones(z.shape, bool)


def prescribed_row(n: int, length: int, transform: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """α of step n for a prescribed order (easyfirst.ops.attention: uniform, left-to-right,
    right-to-left, starting over every L steps); no word is free, so no gradient reaches the scores."""
    if transform == UNIFORM:
        alpha = np.full(length, 1.0 / length, dtype)
    else:
        alpha = np.zeros(length, dtype)
        position = (n - 1) % length
        alpha[position if transform == LEFT_TO_RIGHT else length - 1 - position] = 1
    return alpha, np.zeros(length, bool)


def hard_row(
    sketch: np.ndarray, budget: np.ndarray, word_scores: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """α of vanilla easy-first (Alg. 1, lines 4–6; easyfirst.ops.attention's ``hard``): all on the word
    with budget left whose best tag score, ``fixed`` ``(L, K)`` + Sⁿ⁻¹ ``weight_t`` ``(D_s, K)``, is
    highest (ties: the leftmost); none when no word has budget left. No word is free."""
    fixed, weight_t = word_scores
    best = (fixed + sketch @ weight_t).max(1)
    alpha = np.zeros(budget.shape, sketch.dtype)
    if (budget > 0).any():
        alpha[np.where(budget > 0, best, -np.inf).argmax()] = 1
    return alpha, np.zeros(budget.shape, bool)


def attention_row(
    transform: int, z: np.ndarray, n: int, beta: np.ndarray, sketch: np.ndarray, word_scores
) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 3 for one row: ``(α, free set)`` of step ``n`` from the scores ``z`` ``(L,)``; the budgeted
    choices take u = 1 − βⁿ⁻¹ (a fresh unit every L steps), hard attention also Sⁿ⁻¹ and the output
    layer's ``word_scores`` (:func:`hard_row`)."""
    length = z.shape[0]
    if transform == SPARSEMAX:  # no budget
        return sparsemax_row(z)
    if transform == SOFTMAX:
        return softmax_row(z)
    if transform == HARD:  # Alg. 1 on Sⁿ⁻¹
        return hard_row(sketch, budget(n, length, beta), word_scores)
    if transform in PRESCRIBED:
        return prescribed_row(n, length, transform, sketch.dtype)
    if transform == CSOFTMAX:
        return csoftmax_row(z, budget(n, length, beta))  # Eq. 11
    raise ValueError(f"no row function for attention code {transform}")


def attention_row_backward(
    alpha: np.ndarray, free: np.ndarray, grad: np.ndarray, transform: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(dz, du)`` from α, its free set (csoftmax: A; sparsemax: the support; softmax: all words) and
    dα. csoftmax, Prop. 1: dz = α_A ⊙ (dα − ⟨α_A, dα⟩ / Σα_A), du = dα − … off A; softmax the same with
    A = all; sparsemax: dz = dα − mean_S(dα) on S; a prescribed order or hard: A empty, dz = 0. Only
    csoftmax reads u."""
    weighted = np.where(free, 1 if transform == SPARSEMAX else alpha, 0)
    mass = weighted.sum()
    centred = grad - (weighted @ grad) / (mass if mass > 0 else 1)
    return weighted * centred, np.where(free, 0, centred)


def budget(n: int, length: int, beta: np.ndarray) -> np.ndarray:
    """u = (⌈n/L⌉ − βⁿ⁻¹)₊: a fresh unit of budget every L steps."""
    return np.maximum((1.0 if n <= length else float(np.ceil(n / length))) - beta, 0)


def window_rows(x: np.ndarray, width: int) -> np.ndarray:
    """The windows of Eq. 1 over the rows of ``x`` ``(L, C)``, zeros past the edges: ``(L, K·C)``."""
    length, channels = x.shape
    pad = width // 2
    padded = np.zeros((length + 2 * pad, channels), x.dtype)
    padded[pad : pad + length] = x
    return window_view(padded, width).copy()


def window_view(padded: np.ndarray, width: int) -> np.ndarray:
    """The windows of K = ``width`` rows of a C-contiguous ``padded`` ``(L + K − 1, C)`` side by side:
    an ``(L, K·C)`` view whose rows overlap (row i starts at padded[i]). NumPy's slidingwindow_view
    gives the same windows at about 30 times the fixed cost."""
    rows, channels = padded.shape
    item = padded.itemsize
    shape, strides = (rows - width + 1, width * channels), (channels * item, item)
    return np.ndarray(shape, padded.dtype, padded, 0, strides)


def transposed_window(flat: np.ndarray, width: int) -> np.ndarray:
    """For out = window_rows(x) · flatᵀ (``flat`` ``(O, K·C)``), the ``(K·O, C)`` matrix B with
    dx = window_rows(d out) · B: dx_j = Σ_k W_{K−1−k}ᵀ d out_{j+k−w}, the window map transposed."""
    out, columns = flat.shape
    channels = columns // width
    flipped = flat.reshape(out, width, channels)[:, ::-1].transpose(1, 0, 2)
    return np.ascontiguousarray(flipped).reshape(width * out, channels)
