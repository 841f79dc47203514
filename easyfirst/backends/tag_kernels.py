"""Backend ``numba`` in tagging: the BiLSTM and the sketch loop of every sentence of a batch, each on its
own unpadded rows, in one compiled call per part (forward only; the extra ``fast``).

A batch's sentences run one after another here, each its own N_b steps over its own L_b words: no step
runs over padding or over sentences that have stopped, and no step pays a torch operation's fixed cost
(~300 µs a step for the batched loop of easyfirst.backends.fused at the groups a server gathers, against
a few µs of arithmetic). The mathematics are those of the training kernels
(:mod:`easyfirst.backends.kernels`, whose row functions these call) and of the NumPy loops of
:mod:`easyfirst.backends.lean`, less what only a backward reads: no records are kept, and tanh of a
word's sketch half is computed only where the word got attention (αᵢ = 0 adds nothing, exactly).
tests/backends/test_tag_kernels.py holds them to the reference.
"""

from __future__ import annotations

import math

import numpy as np

from easyfirst.backends.kernels import (
    CSOFTMAX,
    HARD,
    SOFTMAX,
    SPARSEMAX,
    _fill_windows,
    _jit,
    _tanh,
    csoftmax_row,
    hard_row,
    prescribed_row,
    softmax_row,
    sparsemax_row,
)

# tanh(x) ≈ x p(x²) / q(x²) on [−C, C] (±1 in float32 beyond): the rational approximation of Eigen,
# XLA and ONNX Runtime's MLAS, a few float32 ulp from tanh, without a call to libm, so that LLVM
# vectorizes the loops over a row (the exp-based tanh of the training kernels, one call per value, took
# half of a tagging step); float32 only, float64 keeps the exp-based one.
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
_HALF = np.float32(0.5)


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
def _tanh_any(x, fast, two):
    """tanh(x): the rational approximation in float32 (``fast``), else the exp-based one."""
    return _rational_tanh(x) if fast else _tanh(x, two)


@_jit
def bilstm_tag(inputs, w_hh_t, lengths, fast, out):
    """Both directions of a bidirectional ``nn.LSTM`` layer over each sentence b's first ``lengths[b]``
    rows: ``inputs`` ``(2, B, L, 4H)`` (x W_ihᵀ + both biases, per direction, gates i, f, g, o),
    ``w_hh_t`` ``(2, H, 4H)``; the states into ``out`` ``(B, L, 2H)`` (forward, then backward
    direction; zeros on entry, left so on padding). At time step t the sentences still running (the
    longest first) take one product together."""
    size = lengths.shape[0]
    hidden = w_hh_t.shape[1]
    dtype = inputs.dtype
    two = dtype.type(2.0)
    half = dtype.type(0.5)
    order = np.argsort(-lengths, kind="mergesort")
    state = np.empty((size, hidden), dtype)
    cell = np.empty((size, hidden), dtype)
    gates = np.empty((size, 4 * hidden), dtype)
    for direction in range(2):
        state[:] = 0
        cell[:] = 0
        active = size
        for step in range(lengths[order[0]] if size else 0):
            while lengths[order[active - 1]] <= step:
                active -= 1
            gates[:active] = np.dot(state[:active], w_hh_t[direction])
            for k in range(active):
                b = order[k]
                t = step if direction == 0 else lengths[b] - 1 - step
                for j in range(4 * hidden):
                    a = gates[k, j] + inputs[direction, b, t, j]
                    if 2 * hidden <= j < 3 * hidden:
                        gates[k, j] = _tanh_any(a, fast, two)
                    else:  # σ(a) = (1 + tanh(a/2)) / 2
                        gates[k, j] = _tanh_any(a * half, fast, two) * half + half
                for j in range(hidden):
                    c = gates[k, hidden + j] * cell[k, j] + gates[k, j] * gates[k, 2 * hidden + j]
                    cell[k, j] = c
                    state[k, j] = gates[k, 3 * hidden + j] * _tanh_any(c, fast, two)
                    out[b, t, direction * hidden + j] = state[k, j]


@_jit
def _step_rows(affine, packed, state, cols, used, starts, active, weight_t, pad, width, first):
    """aⁿ of the rows ``:used`` (the ``active`` sentences first in the packing): the encoder half
    ``packed``, plus at n ≥ 2 the windows of Sⁿ⁻¹ (each sentence's own, zeros past its edges) times
    the sketch half, one product for them all (Eq. 1)."""
    if first:  # S⁰ = 0
        affine[:used] = packed[:used]
        return
    for k in range(active):
        _fill_windows(state[starts[k] : starts[k + 1]], pad, width, cols[starts[k] : starts[k + 1]])
    affine[:used] = np.dot(cols[:used], weight_t)
    affine[:used] += packed[:used]


@_jit
def _add_sketch(full_state, alpha, affine, state, lo, hi, score_dim, fast, two):
    """Sⁿ = Sⁿ⁻¹ + αⁿ ⊙ … on the rows ``lo:hi`` of one sentence: Eq. 7 (NEF-F, each attended word's own
    tanh(aⁿ)) or Eq. 4 (NEF-S, the pooled tanh(Σ_j α_j a_s,j)); a word with α = 0 is left as it is
    (it would add zeros)."""
    sketch_dim = state.shape[1]
    if full_state:
        for i in range(lo, hi):
            if alpha[i] != 0:
                for d in range(sketch_dim):
                    state[i, d] += alpha[i] * _tanh_any(affine[i, score_dim + d], fast, two)
        return
    for d in range(sketch_dim):
        total = 0.0
        for i in range(lo, hi):
            total += alpha[i] * affine[i, score_dim + d]
        pooled = _tanh_any(total, fast, two)
        for i in range(lo, hi):
            state[i, d] += alpha[i] * pooled


@_jit
def decoder_tag(
    fixed,
    weight_t,
    v,
    lengths,
    steps,
    full_state,
    temperature,
    coverage_penalty,
    transform,
    exp_range,
    fast,
    scores_fixed,
    scores_weight_t,
    sketch,
    history,
    done,
):
    """The sketch loop of Alg. 2 for each sentence b of a batch: ``steps[b]`` steps over its
    ``lengths[b]`` words. ``fixed`` ``(B, L, O)`` (the encoder half of Eq. 1, bias included), ``weight_t``
    ``(K·D_s, O)``, ``v`` ``(D_z,)``, ``transform`` the attention's code (easyfirst.backends.rows), for
    HARD the output layer's ``scores_fixed`` ``(B, L, K)`` and ``scores_weight_t`` ``(D_s, K)``. Writes
    Sᴺ into ``sketch`` ``(B, L, D_s)`` and αⁿ into ``history`` ``(B, N_max, L)`` (zeros on entry), and
    ``done[b]`` False where a score lay beyond csoftmax's ``exp_range`` (that sentence is then to be
    computed by the NumPy loop, which takes the log-space path). The words of the sentences are packed
    one after another, those with the most steps first, so that the sentences still running at step n
    are the first rows: one product a step for them all, no padding."""
    size, _, out = fixed.shape
    score_dim = v.shape[0]
    sketch_dim = out - score_dim
    width = weight_t.shape[0] // sketch_dim
    dtype = fixed.dtype
    two = dtype.type(2.0)
    order, starts, packed = _pack(fixed, lengths, steps)
    rows = starts[size]
    state, cols = np.zeros((rows, sketch_dim), dtype), np.empty((rows, width * sketch_dim), dtype)
    affine, tanhs = np.empty((rows, out), dtype), np.empty((rows, score_dim), dtype)
    z, budget, alpha, beta = (
        np.empty(rows, dtype),
        np.empty(rows, dtype),
        np.empty(rows, dtype),
        np.zeros(rows, dtype),
    )
    free = np.empty(rows, np.bool_)
    done[:] = True
    active = size
    for n in range(1, (steps[order[0]] if size else 0) + 1):
        while steps[order[active - 1]] < n:
            active -= 1
        used = starts[active]
        _step_rows(affine, packed, state, cols, used, starts, active, weight_t, width // 2, width, n == 1)
        for i in range(used):
            for d in range(score_dim):
                tanhs[i, d] = _tanh_any(affine[i, d], fast, two)
        z[:used] = np.dot(tanhs[:used], v)  # Eq. 2
        for k in range(active):
            b, lo, hi = order[k], starts[k], starts[k + 1]
            if hi == lo or not done[b]:
                continue
            units = 1.0 if n <= hi - lo else float(math.ceil(n / (hi - lo)))  # a fresh unit every L steps
            for i in range(lo, hi):
                if temperature != 1.0:
                    z[i] /= temperature
                if coverage_penalty != 0.0:
                    z[i] -= coverage_penalty * beta[i]
                budget[i] = max(units - beta[i], 0.0)
            if not _attend(
                transform,
                n,
                z[lo:hi],
                budget[lo:hi],
                exp_range,
                state[lo:hi],
                scores_fixed,
                scores_weight_t,
                b,
                alpha[lo:hi],
                free[lo:hi],
            ):
                done[b] = False
                continue
            history[b, n - 1, : hi - lo] = alpha[lo:hi]
            _add_sketch(full_state, alpha, affine, state, lo, hi, score_dim, fast, two)
            beta[lo:hi] += alpha[lo:hi]
    for k in range(size):
        sketch[order[k], : lengths[order[k]]] = state[starts[k] : starts[k + 1]]


@_jit
def _pack(fixed, lengths, steps):
    """The sentences' order (most steps first), where each one's rows start in the packing (and the
    end), and the rows of ``fixed`` ``(B, L, O)`` packed so, without padding."""
    size = lengths.shape[0]
    order = np.argsort(-steps, kind="mergesort")
    starts = np.zeros(size + 1, np.int64)
    for k in range(size):
        starts[k + 1] = starts[k] + lengths[order[k]]
    packed = np.empty((starts[size], fixed.shape[2]), fixed.dtype)
    for k in range(size):
        packed[starts[k] : starts[k + 1]] = fixed[order[k], : lengths[order[k]]]
    return order, starts, packed


@_jit
def _attend(transform, n, z, budget, exp_range, sketch, scores_fixed, scores_weight_t, b, alpha, free):
    """αⁿ of one sentence (Eq. 3) into ``alpha`` and its free set into ``free``; False when csoftmax
    finds a score beyond ``exp_range``."""
    if transform == CSOFTMAX:
        return csoftmax_row(z, budget, exp_range, alpha, free)
    if transform == SPARSEMAX:
        sparsemax_row(z, alpha, free)
    elif transform == SOFTMAX:
        softmax_row(z, alpha, free)
    elif transform == HARD:  # Alg. 1 on Sⁿ⁻¹
        hard_row(sketch, budget, scores_fixed[b, : z.shape[0]], scores_weight_t, alpha, free)
    else:  # a prescribed order
        prescribed_row(n, transform, alpha, free)
    return True


KERNELS = (bilstm_tag, decoder_tag)
