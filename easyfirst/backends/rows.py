"""The attention of one sentence's step (Eq. 3) and tanh, compiled by Numba for
:mod:`easyfirst.backends.kernels`: each transformation on one row of scores (csoftmax, sparsemax,
softmax, the prescribed orders, vanilla easy-first's hard choice), writing α and the set of words its
backward (:func:`attend_backward`) reads (csoftmax's free set A, sparsemax's support, softmax's every
word, none for the others).
tests/backends/test_compiled.py holds them to the batched functions of easyfirst.ops and to slow
solvers (tests/reference.py).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from easyfirst.backends.declaration import CSOFTMAX, HARD, RIGHT_TO_LEFT, SOFTMAX, SPARSEMAX, UNIFORM

# error_model="numpy": x / 0.0 is ±inf or nan as in NumPy (u = 0 gives q = +inf), not an exception
_jit = njit(cache=True, error_model="numpy", nogil=True)


# tanh(x) ≈ x p(x²) / q(x²) on [−C, C] (±1 in float32 beyond), without a call to libm: the rational
# approximation of Eigen, XLA and ONNX Runtime's MLAS, a few ulp from tanh
_CLAMP = np.float32(7.90531110763549805)
_ALPHA = tuple(
    np.float32(a)
    for a in (
        -2.76076847742355e-16,
        2.00018790482477e-13,
        -8.60467152213735e-11,
        5.12229709037114e-08,
        1.48572235717979e-05,
        6.37261928875436e-04,
        4.89352455891786e-03,
    )
)
_BETA = tuple(
    np.float32(b)
    for b in (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03)
)


@_jit
def _rational_tanh(x):
    x = min(max(x, -_CLAMP), _CLAMP)
    x2 = x * x
    p = (
        ((((_ALPHA[0] * x2 + _ALPHA[1]) * x2 + _ALPHA[2]) * x2 + _ALPHA[3]) * x2 + _ALPHA[4]) * x2 + _ALPHA[5]
    ) * x2
    q = ((_BETA[0] * x2 + _BETA[1]) * x2 + _BETA[2]) * x2 + _BETA[3]
    return x * (p + _ALPHA[6]) / q


@_jit
def _tanh_any(x, fast):
    """tanh(x): in float32 (``fast``) the rational approximation, vectorized by LLVM (libm's tanh took
    half of a forward step's time); in float64 libm's."""
    return _rational_tanh(x) if fast else math.tanh(x)


_HALF = np.float32(0.5)  # exact in float64 too


@_jit
def tanh_range(values, lo, hi, fast, sigmoid):
    """values[lo:hi] = tanh(values[lo:hi]) in place, or with ``sigmoid`` σ = (1 + tanh(x/2)) / 2, by
    :func:`_tanh_any`; the choice of tanh made once, outside the loop, so that LLVM vectorizes it."""
    if fast and sigmoid:
        for j in range(lo, hi):
            values[j] = _rational_tanh(values[j] * _HALF) * _HALF + _HALF
    elif fast:
        for j in range(lo, hi):
            values[j] = _rational_tanh(values[j])
    elif sigmoid:
        for j in range(lo, hi):
            values[j] = math.tanh(values[j] * _HALF) * _HALF + _HALF
    else:
        for j in range(lo, hi):
            values[j] = math.tanh(values[j])


@_jit
def csoftmax_row(z, u, exp_range, alpha, free):
    """csoftmax(z; u) of one row (Eq. 11, easyfirst.ops.constrained) into ``alpha`` and its free set A
    into ``free``: α = min(exp(z) τ, u) with τ = max_k r_k / T_k over the words sorted by decreasing
    exp(z)/u, r_k = 1 − Σ_{j<k} u_j and T_k = Σ_{j≥k} exp(z_j) summed from the small end. In float64
    exp space while every score lies within ``exp_range`` of 0, else in log space (:func:`_csoftmax_log`)."""
    length = z.shape[0]
    wide = np.empty(length)
    total = 0.0
    for i in range(length):
        wide[i] = np.float64(u[i])
        total += wide[i]
    if total <= 1.0:  # no slack: every constraint is tight
        for i in range(length):
            alpha[i] = u[i]
            free[i] = False
        return
    for i in range(length):
        if abs(z[i]) > exp_range:
            _csoftmax_log(z, u, wide, alpha, free)
            return
    e = np.empty(length)
    q = np.empty(length)
    for i in range(length):
        e[i] = math.exp(np.float64(z[i]))
        q[i] = -(e[i] / wide[i])
    order = np.argsort(q, kind="mergesort")  # decreasing exp(z)/u, ties in index order
    tail = np.empty(length)
    running = 0.0
    for k in range(length - 1, -1, -1):
        running += e[order[k]]
        tail[k] = running
    best = -np.inf
    used = 0.0
    for k in range(length):
        budget = wide[order[k]]
        used += budget
        ratio = (budget - used + 1.0) / tail[k]
        if ratio > best:
            best = ratio
    for i in range(length):
        share = e[i] * best
        free[i] = share < wide[i]
        alpha[i] = share if free[i] else u[i]


@_jit
def _csoftmax_log(z, u, wide, alpha, free):
    """:func:`csoftmax_row` in log space, for scores beyond exp's range: log τ = max_k log r_k − log T_k
    with log T_k a running log-sum-exp from the small end. A word without budget is held at 0 and left
    out of the sums (it would be held there whatever its score), so no exp overflows or underflows."""
    length = z.shape[0]
    key = np.empty(length)
    for i in range(length):
        key[i] = -(np.float64(z[i]) - math.log(wide[i])) if wide[i] > 0 else -np.inf
    order = np.argsort(key, kind="mergesort")
    log_tail = np.empty(length)
    running = -np.inf
    for k in range(length - 1, -1, -1):
        i = order[k]
        if wide[i] > 0:
            value = np.float64(z[i])
            top = max(running, value)
            running = top + math.log(math.exp(running - top) + math.exp(value - top))
        log_tail[k] = running
    best = -np.inf
    used = 0.0
    for k in range(length):
        used += wide[order[k]]
        left = wide[order[k]] - used + 1.0
        if left > 0 and log_tail[k] > -np.inf:
            best = max(best, math.log(left) - log_tail[k])
    for i in range(length):
        share = math.exp(np.float64(z[i]) + best) if wide[i] > 0 else 0.0
        free[i] = share < wide[i]
        alpha[i] = share if free[i] else u[i]


@_jit
def sparsemax_row(z, alpha, free):
    """sparsemax(z) of one row into ``alpha``, as easyfirst.ops.attention's, and its support into
    ``free``."""
    ordered = np.sort(z.astype(np.float64))[::-1]
    running = 0.0
    total = 0.0
    size = 0
    for k in range(ordered.shape[0]):  # the k with 1 + k z_(k) > Σ_{j≤k} z_(j) are a prefix
        running += ordered[k]
        if (k + 1) * ordered[k] > running - 1.0:
            size = k + 1
            total = running
    threshold = (total - 1.0) / size
    for i in range(z.shape[0]):
        alpha[i] = max(z[i] - threshold, 0.0)
        free[i] = alpha[i] > 0


@_jit
def softmax_row(z, alpha, free):
    """softmax(z) of one row into ``alpha``; every word is free."""
    top = z.max()
    total = 0.0
    for i in range(z.shape[0]):
        alpha[i] = math.exp(z[i] - top)
        total += alpha[i]
        free[i] = True
    for i in range(z.shape[0]):
        alpha[i] /= total


@_jit
def prescribed_row(n, transform, alpha, free):
    """α of step n for a prescribed order (UNIFORM, LEFT_TO_RIGHT, RIGHT_TO_LEFT), as
    easyfirst.ops.attention's; no word is free."""
    length = alpha.shape[0]
    position = (n - 1) % length
    if transform == RIGHT_TO_LEFT:
        position = length - 1 - position
    for i in range(length):
        free[i] = False
        if transform == UNIFORM:
            alpha[i] = 1.0 / length
        else:
            alpha[i] = 1.0 if i == position else 0.0


@_jit
def hard_row(sketch, budget, scores_fixed, scores_weight_t, alpha, free):
    """α of vanilla easy-first into ``alpha``, as easyfirst.ops.attention's ``hard``: all on the
    word with budget left whose best tag score (``scores_fixed`` + ``sketch`` ``scores_weight_t``) is
    highest, the leftmost of ties; none when no word has budget left. No word is free."""
    tags = np.dot(sketch, scores_weight_t)
    chosen = -1
    best = -np.inf
    for i in range(sketch.shape[0]):
        free[i] = False
        alpha[i] = 0.0
        if budget[i] > 0:
            top = -np.inf
            for k in range(tags.shape[1]):
                top = max(top, tags[i, k] + scores_fixed[i, k])
            if chosen < 0 or top > best:
                chosen, best = i, top
    if chosen >= 0:
        alpha[chosen] = 1.0


@_jit
def attend(transform, n, z, budget, exp_range, sketch, scores_fixed, scores_weight_t, b, alpha, free):
    """αⁿ of one sentence (Eq. 3) into ``alpha`` and its free set (csoftmax: A; sparsemax: the support;
    softmax: every word; the others: none) into ``free``."""
    if transform == CSOFTMAX:
        csoftmax_row(z, budget, exp_range, alpha, free)
    elif transform == SPARSEMAX:  # no budget
        sparsemax_row(z, alpha, free)
    elif transform == SOFTMAX:
        softmax_row(z, alpha, free)
    elif transform == HARD:  # Alg. 1 on Sⁿ⁻¹
        hard_row(sketch, budget, scores_fixed[b, : z.shape[0]], scores_weight_t, alpha, free)
    else:  # a prescribed order
        prescribed_row(n, transform, alpha, free)


@_jit
def budget_units(n, length):
    """⌈n/L⌉: the units of attention budget each of a sentence's L words has had by step n (Eq. 11's
    u = (⌈n/L⌉ − βⁿ⁻¹)₊, a fresh unit every L steps)."""
    return 1.0 if n <= length else float(math.ceil(n / length))


@_jit
def attend_backward(transform, n, alpha, free, beta, d_alpha, d_z, d_beta):
    """The backward of :func:`attend` on one sentence's row of step n: from dαⁿ ``d_alpha``, dzⁿ into
    ``d_z`` and, for csoftmax, the gradient through the budget u = (⌈n/L⌉ − βⁿ⁻¹)₊ added into ``d_beta``.
    csoftmax, Prop. 1: dz = α_A ⊙ (dα − ⟨α_A, dα⟩ / Σα_A), du = (dα − …) off A; softmax the same with
    A = all; sparsemax: dz = dα − mean_S(dα) on the support S; a prescribed order or hard: A empty, dz = 0."""
    length = alpha.shape[0]
    mass = 0.0
    dot = 0.0
    for i in range(length):
        if free[i]:
            weight = 1.0 if transform == SPARSEMAX else alpha[i]
            mass += weight
            dot += weight * d_alpha[i]
    mean = dot / mass if mass > 0 else dot
    units = budget_units(n, length)
    for i in range(length):
        centred = d_alpha[i] - mean
        if free[i]:
            d_z[i] = centred if transform == SPARSEMAX else alpha[i] * centred
        else:
            d_z[i] = 0.0
            # the gradient passes where ⌈n/L⌉ − β ≥ 0, as autograd's clamp_min
            if transform == CSOFTMAX and beta[i] <= units:
                d_beta[i] -= centred
