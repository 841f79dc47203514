"""The step loops of :mod:`easyfirst.backends.lean` compiled with Numba (the optional extra ``fast``).

At one sentence per update almost all of the NumPy path's time is the fixed cost of its small
operations: about 40 NumPy calls per sketch step each way and a dozen per BiLSTM step, at 0.5–1.5 µs
each, against about 10 µs of arithmetic in a step's matrix product. Here each loop is one compiled
call: the element-wise work is plain loops, the matrix products go to BLAS (``np.dot``, which Numba
takes from SciPy). The mathematics, the order of the steps and what is recorded for the backward are
those of the NumPy functions in :mod:`easyfirst.backends.lean`, which stay the readable statement of them
(and the path without Numba); tests/backends/test_lean.py holds both to the batched torch paths in float64.

Every kernel writes into arrays its caller allocates (the caller's ``_Records``), so that the two paths
share one layout. :func:`decoder_forward` returns False, having written nothing the caller keeps, when a
score lies outside csoftmax's exp range; the caller then runs the NumPy loop, which takes the log-space
path for that row.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg.cython_blas  # noqa: F401  (Numba's np.dot calls it: loaded now, threadpoolctl limits it)
from numba import njit

from easyfirst.backends.rows import CSOFTMAX, HARD, RIGHT_TO_LEFT, SOFTMAX, SPARSEMAX, UNIFORM

# error_model="numpy": x / 0.0 is ±inf or nan as in NumPy (u = 0 gives q = +inf), not an exception
_jit = njit(cache=True, error_model="numpy", nogil=True)


def cold() -> bool:
    """Whether a kernel has no fresh compiled copy in Numba's cache on disk (the first run after an
    install or a change of this file), so that its first call compiles it: about 30 s for them all,
    which the training's progress says (easyfirst.training.epochs). False where the cache cannot be read."""
    try:
        return any(not kernel._cache._cache_file._load_index() for kernel in _KERNELS)
    except Exception:  # noqa: BLE001 (Numba's cache internals: no note rather than a failed training)
        return False


@_jit
def _tanh(x, two):
    """tanh(x) from exp(−2|x|), in the type of ``two`` (2 as float32 or float64): libm's tanh
    (math.tanh) took half of a forward step's time, and float32's expf is twice as fast as exp. Below
    |x| = 0.5, expm1 keeps the relative error at a few ulp (1 − e would cancel)."""
    ax = abs(x)
    if ax < 0.5:
        m = math.expm1(-two * ax)
        y = -m / (two + m)
    else:
        e = math.exp(-two * ax)
        one = two / two
        y = (one - e) / (one + e)
    return y if x >= 0 else -y


@_jit
def csoftmax_row(z, u, exp_range, alpha, free):
    """csoftmax(z; u) of one row into ``alpha`` and its free set into ``free``, as
    :func:`easyfirst.backends.rows.csoftmax_row`; False when a score lies beyond ``exp_range``."""
    length = z.shape[0]
    for i in range(length):
        if abs(z[i]) > exp_range:
            return False
    e = np.empty(length)
    wide = np.empty(length)
    q = np.empty(length)
    total = 0.0
    for i in range(length):
        e[i] = math.exp(np.float64(z[i]))
        wide[i] = np.float64(u[i])
        total += wide[i]
        q[i] = -(e[i] / wide[i])
    if total <= 1.0:  # no slack: every constraint is tight
        for i in range(length):
            alpha[i] = u[i]
            free[i] = False
        return True
    order = np.argsort(q, kind="mergesort")  # decreasing exp(z)/u, ties in index order
    tail = np.empty(length)  # T_k = Σ_{j≥k} exp(z_j) in that order, from the small end
    running = 0.0
    for k in range(length - 1, -1, -1):
        running += e[order[k]]
        tail[k] = running
    best = -np.inf
    used = 0.0
    for k in range(length):
        budget = wide[order[k]]
        used += budget
        ratio = (budget - used + 1.0) / tail[k]  # r_k / T_k, r_k = 1 − Σ_{j<k} u_j
        if ratio > best:
            best = ratio
    for i in range(length):
        share = e[i] * best
        free[i] = share < wide[i]
        alpha[i] = share if free[i] else u[i]
    return True


@_jit
def sparsemax_row(z, alpha, free):
    """sparsemax(z) of one row into ``alpha`` and its support into ``free``, as
    :func:`easyfirst.backends.rows.sparsemax_row`."""
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
    :func:`easyfirst.backends.rows.prescribed_row`; no word is free."""
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
    """α of vanilla easy-first into ``alpha``, as :func:`easyfirst.backends.rows.hard_row`: all on the
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
def _fill_windows(rows, pad, width, cols):
    """cols[i] = the rows i − pad … i + pad of ``rows`` side by side, zeros past the edges (Eq. 1)."""
    length, channels = rows.shape
    for i in range(length):
        for k in range(width):
            j = i + k - pad
            base = k * channels
            if 0 <= j < length:
                for c in range(channels):
                    cols[i, base + c] = rows[j, c]
            else:
                for c in range(channels):
                    cols[i, base + c] = 0.0


@_jit
def _update_sketch(full_state, alpha, t, affine, pooled, sketch, two):
    """Sⁿ = Sⁿ⁻¹ + αⁿ ⊙ …, in place: Eq. 7 (NEF-F, the word's own tanh(aⁿ)) or Eq. 4 (NEF-S, the pooled
    tanh(Σ_j α_j a_s,j) into ``pooled``, the record of the step)."""
    length, sketch_dim = sketch.shape
    score_dim = t.shape[1] - sketch_dim
    if full_state:  # Eq. 7
        for i in range(length):
            for d in range(sketch_dim):
                sketch[i, d] += alpha[i] * t[i, score_dim + d]
        return
    for d in range(sketch_dim):  # Eq. 4
        total = 0.0
        for i in range(length):
            total += alpha[i] * affine[i, score_dim + d]
        pooled[d] = _tanh(total, two)
    for i in range(length):
        for d in range(sketch_dim):
            sketch[i, d] += alpha[i] * pooled[d]


@_jit
def decoder_forward(
    fixed,
    weight_t,
    v,
    steps,
    full_state,
    temperature,
    coverage_penalty,
    transform,
    exp_range,
    scores_fixed,
    scores_weight_t,
    sketch,
    history,
    cols_record,
    tanhs,
    free_record,
    betas,
    affines,
    pooled_record,
):
    """:func:`easyfirst.backends.lean.lean_loop` into the given arrays: Sᴺ into ``sketch`` (zeros on
    entry), αⁿ into ``history`` and the records of every step (tagging runs the NumPy loop); ``transform``:
    the attention's code (``code`` in easyfirst.ops.kinds.KINDS; those of easyfirst.backends.rows.
    ROW_ATTENTIONS); for HARD, the output layer's ``scores_fixed`` ``(L,
    K)`` and ``scores_weight_t`` ``(D_s, K)`` (:func:`hard_row`)."""
    length, out = fixed.shape
    score_dim = v.shape[0]
    sketch_dim = out - score_dim
    width = weight_t.shape[0] // sketch_dim
    pad = width // 2
    cols = np.empty((length, width * sketch_dim), fixed.dtype)
    affine = np.empty((length, out), fixed.dtype)
    z = np.empty(length, fixed.dtype)
    budget = np.empty(length, fixed.dtype)
    alpha = np.empty(length, fixed.dtype)
    two = fixed.dtype.type(2.0)
    for n in range(1, steps + 1):
        k = n - 1
        if n == 1:  # S⁰ = 0
            affine[:] = fixed
        else:  # the windows of Sⁿ⁻¹ (Eq. 1)
            _fill_windows(sketch, pad, width, cols)
            cols_record[k - 1] = cols
            affine[:] = np.dot(cols, weight_t)
            affine += fixed
        if not full_state:
            affines[k] = affine
        t = tanhs[k]
        units = 1.0 if n <= length else float(math.ceil(n / length))  # a fresh unit every L steps
        for i in range(length):
            for o in range(out):
                t[i, o] = _tanh(affine[i, o], two)
            score = 0.0
            for d in range(score_dim):  # Eq. 2
                score += t[i, d] * v[d]
            if temperature != 1.0:
                score /= temperature
            if coverage_penalty != 0.0:
                score -= coverage_penalty * betas[k, i]  # βⁿ⁻¹
            z[i] = score
            budget[i] = max(units - betas[k, i], 0.0)
        if transform == CSOFTMAX:  # Eq. 3
            if not csoftmax_row(z, budget, exp_range, alpha, free_record[k]):
                return False
        elif transform == SPARSEMAX:  # Eq. 3 with sparsemax: no budget
            sparsemax_row(z, alpha, free_record[k])
        elif transform == SOFTMAX:
            softmax_row(z, alpha, free_record[k])
        elif transform == HARD:  # Alg. 1 on Sⁿ⁻¹: z is not read
            hard_row(sketch, budget, scores_fixed, scores_weight_t, alpha, free_record[k])
        else:  # a prescribed order: z is not read
            prescribed_row(n, transform, alpha, free_record[k])
        history[n - 1] = alpha
        _update_sketch(
            full_state, alpha, t, affine, pooled_record[k] if not full_state else alpha, sketch, two
        )
        for i in range(length):
            betas[k + 1, i] = betas[k, i] + alpha[i]
    return True


@_jit
def decoder_backward(
    tanhs,
    free_record,
    betas,
    affines,
    pooled_record,
    history,
    back,
    v,
    g_sketch,
    grad_history,
    full_state,
    temperature,
    coverage_penalty,
    transform,
    d_affines,
    d_scores,
):
    """The step loop of :func:`easyfirst.backends.lean.lean_backward`: daⁿ into ``d_affines`` and dzⁿ
    (before the temperature) into ``d_scores``; ``g_sketch`` (dSᴺ on entry) is used up."""
    steps, length = history.shape
    out = tanhs.shape[2]
    score_dim = v.shape[0]
    sketch_dim = out - score_dim
    width = back.shape[0] // out
    pad = width // 2
    g_beta = np.zeros(length, history.dtype)
    d_alpha = np.empty(length, history.dtype)
    d_pooled = np.empty(sketch_dim, history.dtype)
    d_cols = np.empty((length, width * out), history.dtype)
    for n in range(steps, 0, -1):
        k = n - 1
        t, alpha, free, d_a = tanhs[k], history[k], free_record[k], d_affines[k]
        for i in range(length):
            d_alpha[i] = g_beta[i] + grad_history[k, i]
        if full_state:  # Sⁿ = Sⁿ⁻¹ + α ⊙ t_s
            for i in range(length):
                total = 0.0
                for d in range(sketch_dim):
                    total += g_sketch[i, d] * t[i, score_dim + d]
                    d_a[i, score_dim + d] = alpha[i] * g_sketch[i, d] * (1.0 - t[i, score_dim + d] ** 2)
                d_alpha[i] += total
        else:  # Sⁿ = Sⁿ⁻¹ + α pᵀ, p = tanh(αᵀ a_s)
            pooled, a = pooled_record[k], affines[k]
            for d in range(sketch_dim):
                total = 0.0
                for i in range(length):
                    total += alpha[i] * g_sketch[i, d]
                d_pooled[d] = total * (1.0 - pooled[d] * pooled[d])
            for i in range(length):
                total = 0.0
                for d in range(sketch_dim):
                    total += g_sketch[i, d] * pooled[d] + a[i, score_dim + d] * d_pooled[d]
                    d_a[i, score_dim + d] = alpha[i] * d_pooled[d]  # no tanh': a_s enters the sum only
                d_alpha[i] += total
        # csoftmax, Prop. 1: dz = α_A ⊙ (dα − ⟨α_A, dα⟩ / Σα_A), du = (dα − …) off A;
        # softmax the same with A = all; sparsemax: dz = dα − mean_S(dα) on the support S; a prescribed
        # order or hard: A empty, dz = 0
        # (easyfirst.backends.rows.attention_row_backward)
        mass = 0.0
        dot = 0.0
        for i in range(length):
            if free[i]:
                weight = 1.0 if transform == SPARSEMAX else alpha[i]
                mass += weight
                dot += weight * d_alpha[i]
        mean = dot / mass if mass > 0 else dot
        units = 1.0 if n <= length else float(math.ceil(n / length))
        for i in range(length):
            centred = d_alpha[i] - mean
            if free[i]:
                d_z = centred if transform == SPARSEMAX else alpha[i] * centred
            else:
                d_z = 0.0
                # u = (⌈n/L⌉ − β)₊: the gradient passes where ⌈n/L⌉ − β ≥ 0, as autograd's clamp_min
                if transform == CSOFTMAX and betas[k, i] <= units:
                    g_beta[i] -= centred
            if coverage_penalty != 0.0:
                g_beta[i] -= coverage_penalty * d_z
            if temperature != 1.0:
                d_z /= temperature
            d_scores[k, i] = d_z
            for d in range(score_dim):
                d_a[i, d] = d_z * v[d] * (1.0 - t[i, d] * t[i, d])
        if n > 1:  # the sketch half read Sⁿ⁻¹'s windows
            _fill_windows(d_a, pad, width, d_cols)
            g_sketch += np.dot(d_cols, back)


@_jit
def _sigmoid(x, two):
    half = two / (two + two)
    return _tanh(x * half, two) * half + half  # as easyfirst.backends.lstm._sigmoid


@_jit
def lstm_forward(inputs, w_hh_t, gates, cells, states, tanh_cells):
    """The time loop of :func:`easyfirst.backends.lstm.lstm_forward`, both directions: ``inputs`` ``(2, L,
    4H)`` (the input parts, bias included), ``w_hh_t`` ``(2, H, 4H)``; fills the other arrays
    (``cells`` and ``states`` ``(2, L + 1, H)`` hold zeros at 0)."""
    _, length, four = inputs.shape
    hidden = four // 4
    two = inputs.dtype.type(2.0)
    for t in range(length):
        for direction in range(2):
            a = inputs[direction, t] + np.dot(states[direction, t], w_hh_t[direction])
            gate = gates[direction, t]
            for j in range(four):
                gate[j] = _tanh(a[j], two) if 2 * hidden <= j < 3 * hidden else _sigmoid(a[j], two)
            for j in range(hidden):
                cell = gate[hidden + j] * cells[direction, t, j] + gate[j] * gate[2 * hidden + j]
                cells[direction, t + 1, j] = cell
                tanh_cells[direction, t, j] = _tanh(cell, two)
                states[direction, t + 1, j] = gate[3 * hidden + j] * tanh_cells[direction, t, j]


@_jit
def lstm_backward(grad, gates, cells, tanh_cells, w_hh, d_gates):
    """The time loop of :func:`easyfirst.backends.lstm.lstm_backward`: the gates' gradients into
    ``d_gates`` ``(2, L, 4H)`` from the states' ``grad`` ``(2, L, H)``, ``w_hh`` ``(2, 4H, H)``."""
    _, length, hidden = grad.shape
    d_state = np.zeros((2, hidden), grad.dtype)
    d_cell = np.zeros((2, hidden), grad.dtype)
    for t in range(length - 1, -1, -1):
        for direction in range(2):
            gate, d = gates[direction, t], d_gates[direction, t]
            for j in range(hidden):
                i, f = gate[j], gate[hidden + j]
                g, o = gate[2 * hidden + j], gate[3 * hidden + j]
                tanh_cell = tanh_cells[direction, t, j]
                d_h = grad[direction, t, j] + d_state[direction, j]
                c = d_cell[direction, j] + d_h * o * (1 - tanh_cell * tanh_cell)
                d[j] = c * g * i * (1 - i)
                d[hidden + j] = c * cells[direction, t, j] * f * (1 - f)
                d[2 * hidden + j] = c * i * (1 - g * g)
                d[3 * hidden + j] = d_h * tanh_cell * o * (1 - o)
                d_cell[direction, j] = c * f
            d_state[direction] = np.dot(d, w_hh[direction])


_KERNELS = [
    value for value in list(globals().values()) if hasattr(value, "_cache") and hasattr(value, "py_func")
]
