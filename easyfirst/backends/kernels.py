"""The compiled CPU path: the BiLSTM and the sketch loop of Alg. 2 (Eqs. 1–7, 11) in loops compiled by
Numba, one forward for training and tagging and one backward.

Each sentence of a batch runs on its own unpadded rows: its words are packed one sentence after another,
those with the most steps first, so that the sentences still running at a step (or a BiLSTM time step)
are the first rows, and one matrix product a step serves them all; no step runs over padding or over
sentences that have stopped. The element-wise work is plain loops (one compiled call per part instead of
dozens of small torch or NumPy operations a step, each with a fixed cost of 0.3–5 µs against a few µs of
arithmetic), the matrix products go to BLAS (``np.dot``, which Numba takes from SciPy).

The forward keeps what the backward needs when it is given record arrays (training; see
:mod:`easyfirst.backends.compiled`); without them (tagging) it keeps nothing, and computes tanh
(:func:`easyfirst.backends.rows.tanh_range`) of a word's sketch half only where the word got attention
(αᵢ = 0 adds nothing, exactly). tests/backends/test_compiled.py holds every function here to the
reference (easyfirst.model) in float64.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg.cython_blas  # noqa: F401  (Numba's np.dot calls it: loaded now, its threads limited)

from easyfirst.backends.declaration import CSOFTMAX
from easyfirst.backends.rows import _jit, _tanh_any, attend, attend_backward, budget_units, tanh_range


def cold() -> bool:
    """Whether a kernel has no fresh compiled copy in Numba's cache on disk (the first run after an
    install or a change of this file), so that its first call compiles it. False where the cache cannot
    be read."""
    try:
        return any(not kernel._cache._cache_file._load_index() for kernel in _KERNELS)
    except Exception:  # noqa: BLE001 (Numba's cache internals: no note rather than a failed run)
        return False


@_jit
def _fill_window(rows, i, lo, hi, pad, width, target):
    """target = the rows i − pad … i + pad of ``rows`` side by side, zeros outside ``lo:hi`` (Eq. 1)."""
    channels = rows.shape[1]
    for k in range(width):
        j = i + k - pad
        base = k * channels
        if lo <= j < hi:
            for c in range(channels):
                target[base + c] = rows[j, c]
        else:
            for c in range(channels):
                target[base + c] = 0.0


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
def _add_sketch(full_state, alpha, affine, squashed, state, lo, hi, fast, pooled):
    """Sⁿ = Sⁿ⁻¹ + αⁿ ⊙ … on the rows ``lo:hi`` of one sentence: Eq. 7 (NEF-F, each attended word's own
    tanh(aⁿ), read from ``squashed`` where it was kept, else computed) or Eq. 4 (NEF-S, the pooled
    tanh(Σ_j α_j a_s,j), kept in ``pooled``); a word with α = 0 is left as it is (it would add zeros)."""
    sketch_dim = state.shape[1]
    score_dim = affine.shape[1] - sketch_dim
    if full_state:  # Eq. 7 (``pooled``, unused by NEF-F, holds a word's tanh where it is computed)
        for i in range(lo, hi):
            if alpha[i] == 0:
                continue
            if squashed.shape[0]:
                pooled[:] = squashed[i, score_dim:]
            else:
                pooled[:] = affine[i, score_dim:]
                tanh_range(pooled, 0, sketch_dim, fast, False)
            for d in range(sketch_dim):
                state[i, d] += alpha[i] * pooled[d]
        return
    for d in range(sketch_dim):  # Eq. 4
        total = 0.0
        for i in range(lo, hi):
            total += alpha[i] * affine[i, score_dim + d]
        pooled[d] = _tanh_any(total, fast)
        for i in range(lo, hi):
            state[i, d] += alpha[i] * pooled[d]


@_jit
def _windows(state, starts, active, budget, spent, pad, width, cols, need):
    """The rows of the first ``active`` sentences that step n computes into ``need`` (with ``spent``,
    those whose budget is not spent), the windows of Sⁿ⁻¹ around each (Eq. 1, its own sentence's)
    into the same rows of ``cols`` (none where ``cols`` is empty: S⁰ = 0); their count."""
    wanted = 0
    for k in range(active):
        lo, hi = starts[k], starts[k + 1]
        for i in range(lo, hi):
            if spent and budget[i] <= 0:
                continue
            need[wanted] = i
            if cols.shape[0]:
                _fill_window(state, i, lo, hi, pad, width, cols[wanted])
            wanted += 1
    return wanted


@_jit
def _affine(first, windows, weight_t, packed, need, wanted, used, products, affine):
    """aⁿ of Eq. 1 for the rows ``need[:wanted]`` of the first ``used``: the windows of Sⁿ⁻¹ times the
    sketch half plus the encoder half ``packed`` (alone at step 1: S⁰ = 0). The products go into a buffer
    and the sums element by element: an array expression a row (``block[r] + packed[i]``) allocated a
    temporary each time, 10% of the decoder's time in tagging."""
    if first:
        affine[:used] = packed[:used]
        return
    np.dot(windows[:wanted], weight_t, products[:wanted])
    for r in range(wanted):
        i = need[r]
        for c in range(affine.shape[1]):
            affine[i, c] = products[r, c] + packed[i, c]


@_jit
def _budgets(n, beta, starts, active, budget):
    """uⁿ = (⌈n/L⌉ − βⁿ⁻¹)₊ of the first ``active`` sentences' words: a fresh unit every L steps."""
    for k in range(active):
        lo, hi = starts[k], starts[k + 1]
        units = budget_units(n, hi - lo)
        for i in range(lo, hi):
            budget[i] = max(units - beta[i], 0.0)


@_jit
def _squash(affine, squashed, tanhs, v, z, need, wanted, fast):
    """tanh of the rows ``need[:wanted]`` of aⁿ and their scores zⁿ = tanh(a_z) v (Eq. 2) into ``z`` (the
    others' 0): where ``squashed`` has rows (the records), every column into it and each score summed in
    float64 (a BLAS call a step costs more than its sum at one sentence); else the score half into
    ``tanhs`` and the scores in one product, the sketch half's tanh left for where attention falls
    (:func:`_add_sketch`)."""
    score_dim = tanhs.shape[1]
    z[:] = 0.0
    if squashed.shape[0]:
        for r in range(wanted):
            i = need[r]
            squashed[i] = affine[i]
            tanh_range(squashed[i], 0, affine.shape[1], fast, False)
            score = 0.0
            for d in range(score_dim):
                score += squashed[i, d] * v[d]
            z[i] = score
        return
    for r in range(wanted):
        tanhs[r] = affine[need[r], :score_dim]
        tanh_range(tanhs[r], 0, score_dim, fast, False)
    found = np.dot(tanhs[:wanted], v)
    for r in range(wanted):
        z[need[r]] = found[r]


@_jit
def decoder_forward(
    fixed,
    weight_t,
    v,
    lengths,
    steps,
    settings,
    exp_range,
    fast,
    scores_fixed,
    scores_weight_t,
    sketch,
    history,
    records,
):
    """The sketch loop of Alg. 2 for each sentence b of a batch: ``steps[b]`` steps over its
    ``lengths[b]`` words. ``fixed`` ``(B, L, O)`` (the encoder half of Eq. 1, bias included), ``weight_t``
    ``(K·D_s, O)`` (the sketch half, the windows' column order), ``v`` ``(D_z,)``; ``settings``:
    (full_state, temperature, coverage penalty, the attention's code of easyfirst.backends.rows); for
    HARD the output layer's ``scores_fixed`` ``(B, L, K)`` and ``scores_weight_t`` ``(D_s, K)``. Writes
    Sᴺ into ``sketch`` ``(B, L, D_s)`` and αⁿ into ``history`` ``(B, N_max, L)`` (zeros on entry).
    ``records`` (training; empty arrays in tagging), by packed row: the windows of Sⁿ⁻¹ ``(N − 1, R,
    K·D_s)``, tanh(aⁿ) ``(N, R, O)``, the free sets ``(N, R)``, β⁰..βᴺ ``(N + 1, R)``, and for NEF-S aⁿ
    ``(N, R, O)`` and the pooled tanh ``(N, B, D_s)``."""
    full_state, temperature, coverage_penalty, transform = settings
    cols_record, tanh_record, free_record, beta_record, affine_record, pooled_record = records
    store = tanh_record.shape[0] > 0
    (size, _, out), score_dim = fixed.shape, v.shape[0]
    sketch_dim = out - score_dim
    width = weight_t.shape[0] // sketch_dim
    pad = width // 2
    dtype = fixed.dtype
    order, starts, packed = _pack(fixed, lengths, steps)
    rows = starts[size]
    state = np.zeros((rows, sketch_dim), dtype)
    cols = np.empty((0 if store else rows, width * sketch_dim), dtype)  # training: into the records
    affine, tanhs = np.empty((rows, out), dtype), np.empty((rows, score_dim), dtype)
    products = np.empty((rows, out), dtype)
    z, budget, alpha = np.empty(rows, dtype), np.empty(rows, dtype), np.empty(rows, dtype)
    beta, free, pooled = np.zeros(rows, dtype), np.empty(rows, np.bool_), np.empty(sketch_dim, dtype)
    # in tagging with csoftmax, a word whose budget is spent gets α = 0 whatever its score (τ is the
    # same without it): its row of Eq. 1 and its score are not computed (``need``: the rows that are)
    spent = not store and transform == CSOFTMAX
    need = np.empty(rows, np.int64)
    active = size
    for n in range(1, (steps[order[0]] if size else 0) + 1):
        while steps[order[active - 1]] < n:
            active -= 1
        used = starts[active]
        _budgets(n, beta, starts, active, budget)
        # the windows of Sⁿ⁻¹ times the sketch half, plus the encoder half; training keeps the windows
        windows = cols[:0] if n == 1 else cols_record[n - 2] if store else cols
        wanted = _windows(state, starts, active, budget, spent, pad, width, windows, need)
        _affine(n == 1, windows, weight_t, packed, need, wanted, used, products, affine)
        if store:
            beta_record[n - 1] = beta
            if not full_state:
                affine_record[n - 1, :used] = affine[:used]
        squashed = tanh_record[n - 1] if store else affine[:0]  # tanh(aⁿ) of every column, kept
        _squash(affine, squashed, tanhs, v, z[:used], need, wanted, fast)
        for k in range(active):
            b, lo, hi = order[k], starts[k], starts[k + 1]
            if hi == lo:
                continue
            for i in range(lo, hi):
                if temperature != 1.0:
                    z[i] /= temperature
                if coverage_penalty != 0.0:
                    z[i] -= coverage_penalty * beta[i]
            attend(transform, n, z[lo:hi], budget[lo:hi], exp_range, state[lo:hi], scores_fixed,
                    scores_weight_t, b, alpha[lo:hi], free[lo:hi])  # fmt: skip
            history[b, n - 1, : hi - lo] = alpha[lo:hi]
            _add_sketch(full_state, alpha, affine, squashed, state, lo, hi, fast, pooled)
            beta[lo:hi] += alpha[lo:hi]
            if store:
                free_record[n - 1, lo:hi] = free[lo:hi]
                if not full_state:
                    pooled_record[n - 1, k] = pooled
    if store:
        beta_record[beta_record.shape[0] - 1] = beta
    for k in range(size):
        sketch[order[k], : lengths[order[k]]] = state[starts[k] : starts[k + 1]]


@_jit
def _sketch_backward(full_state, n, k, alpha, tanhs, records, g_sketch, lo, hi, d_pooled, d_alpha, d_a):
    """The backward of :func:`_add_sketch` at step n on the rows ``lo:hi`` of the k-th packed sentence
    (``alpha`` its αⁿ, from 0; ``records`` NEF-S's aⁿ and pooled tanh): from dSⁿ ``g_sketch``, the
    sketch half of daⁿ into ``d_a`` and dαⁿ added into ``d_alpha``."""
    sketch_dim = g_sketch.shape[1]
    score_dim = d_a.shape[1] - sketch_dim
    if full_state:  # Sⁿ = Sⁿ⁻¹ + α ⊙ t_s
        for i in range(lo, hi):
            total = 0.0
            for d in range(sketch_dim):
                t = tanhs[i, score_dim + d]
                total += g_sketch[i, d] * t
                d_a[i, score_dim + d] = alpha[i - lo] * g_sketch[i, d] * (1.0 - t * t)
            d_alpha[i] += total
        return
    affine, pooled = records[0][n - 1], records[1][n - 1, k]
    for d in range(sketch_dim):  # Sⁿ = Sⁿ⁻¹ + α pᵀ, p = tanh(αᵀ a_s)
        total = 0.0
        for i in range(lo, hi):
            total += alpha[i - lo] * g_sketch[i, d]
        d_pooled[d] = total * (1.0 - pooled[d] * pooled[d])
    for i in range(lo, hi):
        total = 0.0
        for d in range(sketch_dim):
            total += g_sketch[i, d] * pooled[d] + affine[i, score_dim + d] * d_pooled[d]
            d_a[i, score_dim + d] = alpha[i - lo] * d_pooled[d]  # no tanh': a_s enters the sum only
        d_alpha[i] += total


@_jit
def decoder_backward(
    records, history, back, v, lengths, steps, settings, grad_sketch, grad_history, d_fixed, d_flat, d_v
):
    """The backward of :func:`decoder_forward` in training, each sentence's steps in reverse, the
    sentences packed as it packs them: from its ``records`` and ``history``, and dSᴺ ``grad_sketch``
    ``(B, L, D_s)`` and the history's gradient ``grad_history`` ``(B, N_max, L)``, the gradients of
    ``fixed`` into ``d_fixed`` ``(B, L, O)``, of the sketch half's weight into ``d_flat`` ``(O, K·D_s)``
    and of v into ``d_v`` (zeros on entry); ``back`` ``(K·O, D_s)``: the transposed window map. The
    weight's gradient Σₙ daⁿᵀ windows(Sⁿ⁻¹) is one product over the steps every row runs, then one a step."""
    full_state, temperature, coverage_penalty, transform = settings
    cols_record, tanhs, free_record, betas = records[:4]
    (size, total, _), (rows, out) = history.shape, tanhs.shape[1:]
    score_dim = v.shape[0]
    width = back.shape[0] // out
    dtype = history.dtype
    order, starts, g_sketch = _pack(grad_sketch, lengths, steps)  # dSⁿ by packed row
    d_affines = np.empty((total, rows, out), dtype)  # daⁿ of the rows still running at step n
    used = np.zeros(total + 1, np.int64)  # the rows still running at step n
    g_beta, d_alpha, d_z = np.zeros(rows, dtype), np.empty(rows, dtype), np.empty(rows, dtype)
    d_pooled, d_cols = np.empty(out - score_dim, dtype), np.empty((rows, width * out), dtype)
    active = 0
    for n in range(total, 0, -1):
        while active < size and steps[order[active]] >= n:
            active += 1
        used[n] = starts[active]
        t, d_a = tanhs[n - 1], d_affines[n - 1]
        for k in range(active):
            b, lo, hi = order[k], starts[k], starts[k + 1]
            if hi == lo:
                continue
            alpha = history[b, n - 1]
            for i in range(lo, hi):
                d_alpha[i] = g_beta[i] + grad_history[b, n - 1, i - lo]
            _sketch_backward(
                full_state, n, k, alpha, t, records[4:], g_sketch, lo, hi, d_pooled, d_alpha, d_a
            )
            attend_backward(transform, n, alpha[: hi - lo], free_record[n - 1, lo:hi], betas[n - 1, lo:hi],
                            d_alpha[lo:hi], d_z[lo:hi], g_beta[lo:hi])  # fmt: skip
            for i in range(lo, hi):  # Eq. 2 with the temperature and the coverage penalty
                if coverage_penalty != 0.0:
                    g_beta[i] -= coverage_penalty * d_z[i]
                if temperature != 1.0:
                    d_z[i] /= temperature
                for d in range(score_dim):
                    d_a[i, d] = d_z[i] * v[d] * (1.0 - t[i, d] * t[i, d])
                    d_v[d] += d_z[i] * t[i, d]
                d_fixed[b, i - lo] += d_a[i]
            for i in range(lo, hi if n > 1 else lo):  # the sketch half read Sⁿ⁻¹'s windows
                _fill_window(d_a, i, lo, hi, width // 2, width, d_cols[i])
        if n > 1:
            g_sketch[: used[n]] += np.dot(d_cols[: used[n]], back)
    first = 2  # the weight's gradient
    while first <= total and used[first] == rows:
        first += 1
    if first > 2:
        flat = d_affines[1 : first - 1].reshape(-1, out)
        d_flat += np.dot(flat.T, cols_record[: first - 2].reshape(-1, d_flat.shape[1]))
    for n in range(first, total + 1):
        d_flat += np.dot(d_affines[n - 1, : used[n]].T, cols_record[n - 2, : used[n]])


@_jit
def bilstm(inputs, w_hh_t, lengths, fast, out, gate_record, cell_record, tanh_record):
    """Both directions of a bidirectional ``nn.LSTM`` layer over each sentence b's first ``lengths[b]``
    rows: ``inputs`` ``(B, L, 2, 4H)`` (x W_ihᵀ + both biases, per direction, gates i, f, g, o, in the
    words' order), ``w_hh_t`` ``(2, H, 4H)``; the states into ``out`` ``(B, L, 2H)`` (forward, then
    backward direction; zeros on entry, left so on padding). With records (training: ``gate_record``
    ``(2, B, L, 4H)``, ``cell_record`` ``(2, B, L + 1, H)`` zeros at 0, ``tanh_record`` ``(2, B, L,
    H)``; empty arrays in tagging) it keeps each direction's gates, cells and tanh(cells) in its reading
    order."""
    size = lengths.shape[0]
    hidden = w_hh_t.shape[1]
    dtype = inputs.dtype
    store = gate_record.shape[0] > 0
    order = np.argsort(-lengths, kind="mergesort")
    state = np.empty((size, hidden), dtype)
    cell = np.empty((size, hidden), dtype)
    gates = np.empty((size, 4 * hidden), dtype)
    squashed = np.empty(hidden, dtype)  # tanh(c) of one sentence's step
    for direction in range(2):
        state[:] = 0
        cell[:] = 0
        active = size
        for step in range(lengths[order[0]] if size else 0):
            while lengths[order[active - 1]] <= step:
                active -= 1
            np.dot(state[:active], w_hh_t[direction], gates[:active])
            for k in range(active):
                b = order[k]
                t = step if direction == 0 else lengths[b] - 1 - step
                gate, given = gates[k], inputs[b, t, direction]
                for j in range(4 * hidden):
                    gate[j] += given[j]
                tanh_range(gate, 0, 2 * hidden, fast, True)  # i, f
                tanh_range(gate, 2 * hidden, 3 * hidden, fast, False)  # g
                tanh_range(gate, 3 * hidden, 4 * hidden, fast, True)  # o
                for j in range(hidden):
                    cell[k, j] = gate[hidden + j] * cell[k, j] + gate[j] * gate[2 * hidden + j]
                    squashed[j] = cell[k, j]
                tanh_range(squashed, 0, hidden, fast, False)
                for j in range(hidden):
                    state[k, j] = gate[3 * hidden + j] * squashed[j]
                    out[b, t, direction * hidden + j] = state[k, j]
                if store:
                    cell_record[direction, b, step + 1] = cell[k]
                    tanh_record[direction, b, step] = squashed
                    gate_record[direction, b, step] = gate


@_jit
def lstm_backward(grad, gates, cells, tanh_cells, out, lengths, w_hh_t, d_inputs, d_w_hh_t):
    """The backward of :func:`bilstm` in training, each direction's time loop in reverse: from the
    states' gradient ``grad`` and the states ``out`` ``(B, L, 2H)``, the records and ``w_hh_t``, the
    gradients of the input parts into ``d_inputs`` ``(B, L, 2, 4H)`` and of W_hhᵀ into ``d_w_hh_t``
    ``(2, H, 4H)`` (zeros on entry)."""
    size, hidden = lengths.shape[0], w_hh_t.shape[1]
    dtype = grad.dtype
    order = np.argsort(-lengths, kind="mergesort")
    d_state, d_cell = np.zeros((size, hidden), dtype), np.zeros((size, hidden), dtype)
    d_gates = np.empty((size, 4 * hidden), dtype)
    rows = lengths.sum()
    previous, gathered = np.empty((rows, hidden), dtype), np.empty((rows, 4 * hidden), dtype)  # h_{s−1}, dg_s
    for direction in range(2):
        d_state[:] = 0
        d_cell[:] = 0
        active = 0
        r = 0
        for step in range((lengths[order[0]] if size else 0) - 1, -1, -1):
            while active < size and lengths[order[active]] > step:
                active += 1
            for k in range(active):
                b = order[k]
                t = step if direction == 0 else lengths[b] - 1 - step
                gate, d = gates[direction, b, step], d_gates[k]
                for j in range(hidden):
                    i, f = gate[j], gate[hidden + j]
                    g, o = gate[2 * hidden + j], gate[3 * hidden + j]
                    tanh_cell = tanh_cells[direction, b, step, j]
                    d_h = grad[b, t, direction * hidden + j] + d_state[k, j]
                    c = d_cell[k, j] + d_h * o * (1 - tanh_cell * tanh_cell)
                    d[j] = c * g * i * (1 - i)
                    d[hidden + j] = c * cells[direction, b, step, j] * f * (1 - f)
                    d[2 * hidden + j] = c * i * (1 - g * g)
                    d[3 * hidden + j] = d_h * tanh_cell * o * (1 - o)
                    d_cell[k, j] = c * f
                d_inputs[b, t, direction] = d
                if step:  # the state before, in the reading order (h₀ = 0 adds nothing)
                    before = t - 1 if direction == 0 else t + 1
                    previous[r] = out[b, before, direction * hidden : (direction + 1) * hidden]
                    gathered[r] = d
                    r += 1
            d_state[:active] = np.dot(d_gates[:active], w_hh_t[direction].T)
        if r:
            d_w_hh_t[direction] = np.dot(previous[:r].T, gathered[:r])


# the loops Python calls: each one's cached code holds the functions it calls (a function only called
# from compiled code may have no cache entry of its own)
_KERNELS = [bilstm, lstm_backward, decoder_forward, decoder_backward]
