"""One sentence on the CPU, in NumPy: the BiLSTM and the decoder (csoftmax, sparsemax or softmax
attention, a prescribed order: uniform, left-to-right, right-to-left, or vanilla easy-first's hard
choice) at one sentence per update.

Training with one sentence per update, as the paper's own code does (github.com/Unbabel/
neural-easy-first, dynet/neftagger.py; configs/pos-reference.toml), runs the BiLSTM over one row of L
words and the sketch loop of Alg. 2 over one row per step, where every operation is tiny and its fixed
cost is nearly all there is: about 1.3–5 µs for a torch operation with its autograd record, 0.3–1 µs for
a NumPy one. With no padding and one sentence, the masks, the per-sentence step counts and the
``common`` split of the batched loop disappear too. So a batch of one sentence on the CPU (float32 or
float64; ``enabled = False`` turns this off) takes these two autograd Functions instead:

- :class:`LeanBiLSTMFunction`: both directions of ``nn.LSTM`` stepped together, and backpropagation
  through time by hand; the same parameters, so a model trains and tags the same either way;
- :class:`LeanSketchFunction`: the input half of the window map (Eq. 1) once, then the step loop with
  the mathematics of :mod:`easyfirst.model.fused_sketch` (Eqs. 1–7, 11; NEF-F and NEF-S, N fixed or
  N = L, a fresh unit of budget every L steps, temperature and coverage penalty), whose backward it
  follows step by step with Prop. 1's Jacobian for csoftmax (sparsemax and softmax attention,
  unbudgeted, take the same loop with their own Jacobians, the prescribed orders and hard attention with
  none); the sums over steps (the weight, v and
  input-half gradients) are one matrix product each at the end. csoftmax is computed in float64 exp
  space (the CPU path of easyfirst.ops.constrained) when every score lies within 600 nats of 0, else by
  :func:`easyfirst.ops.constrained.csoftmax_forward`.

With Numba installed (the extra ``fast``; the dev install has it), training runs the time loops of
both, the BiLSTM's and the sketch loop forward and backward, as compiled kernels
(:mod:`easyfirst.model.lean_kernels`, one call per loop instead of dozens of NumPy calls per step;
imported on first use, see :func:`kernels`). Tagging one sentence (no gradients) runs the NumPy loops
below: Numba compiles the kernels on their first use after an install (about 30 s), which a first
``easyfirst tag --text`` or ``plot`` should not wait for. ``compiled = False`` keeps the NumPy loops for
training too; they are also the path without Numba.

The batched torch paths stay the reference: tests/test_lean.py holds both loops to them in float64.
"""

from __future__ import annotations

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from easyfirst.ops.constrained import _EXP_RANGE, csoftmax_forward
from easyfirst.ops.window import flat_weight

# the attention transformations this path serves (easyfirst.ops.attention names), in the order of the
# codes the loops take (easyfirst.model.lean_kernels uses the numbers): the learned ones, then (from
# UNIFORM on) those through which no gradient reaches Eq. 2's scores: the prescribed orders, and hard
# attention, which picks the uncovered word with the best tag score (Alg. 1)
ATTENTIONS = ("csoftmax", "sparsemax", "softmax", "uniform", "left-to-right", "right-to-left", "hard")
CSOFTMAX, SPARSEMAX, SOFTMAX, UNIFORM, LEFT_TO_RIGHT, RIGHT_TO_LEFT, HARD = range(7)
# False sends single sentences through the batched torch paths too (benchmarks/reference_speed.py and the
# tests compare the two)
enabled = True
# False runs the NumPy loops of this module even where Numba is installed (the tests compare the two)
compiled = True
_blas_limited = 0  # 1: NumPy's BLAS limited to one thread; 2: SciPy's too (the kernels call it)
_kernels_module = None  # easyfirst.model.lean_kernels once imported; False where it cannot be


def kernels():
    """The compiled step loops (:mod:`easyfirst.model.lean_kernels`, pip install "easyfirst[fast]"),
    imported on first use: importing Numba and SciPy takes about 0.4 s, which a command that never
    runs a single sentence on the CPU (tagging in batches, a GPU) need not pay. None where Numba (or
    SciPy, whose BLAS it calls) is not installed: the NumPy loops of this module run instead."""
    global _kernels_module
    if _kernels_module is None:
        try:
            from easyfirst.model import lean_kernels

            _kernels_module = lean_kernels
        except ImportError:
            _kernels_module = False
    return _kernels_module or None


def _compiled():
    """The kernels when this path is to run them (``compiled`` and Numba installed), else None."""
    return kernels() if compiled else None


def lean_applies(x: torch.Tensor) -> bool:
    """Whether ``x`` ``(B, L, …)`` can take this path: one sentence on the CPU, in float32 or float64.

    The first time it does, NumPy's BLAS is limited to one thread for the rest of the process: its
    products here are tiny, and a multi-threaded OpenBLAS that finds the other cores busy waits for
    them (one sentence per update ran 7× slower on this project's 2-core machine with another job on
    the second core).
    """
    global _blas_limited
    applies = (
        enabled and x.shape[0] == 1 and x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64)
    )
    if applies:
        # training loads the kernels, and SciPy's BLAS with them, which the limit must then reach too
        level = 2 if torch.is_grad_enabled() and _compiled() is not None else 1
        if _blas_limited < level:
            threadpool_limits(1, user_api="blas")
            _blas_limited = level
    return applies


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


class _Records:
    """What the forward keeps for the backward, in arrays preallocated for the N steps (NEF-F keeps no
    affines and no pooled sketches: those arrays are empty)."""

    def __init__(
        self, steps: int, length: int, out: int, width: int, sketch_dim: int, full_state: bool, dtype
    ):
        self.cols = np.empty((max(steps - 1, 0), length, width * sketch_dim), dtype)  # windows of Sⁿ⁻¹, n ≥ 2
        self.tanhs = np.empty((steps, length, out), dtype)  # tanh(aⁿ)
        self.free = np.empty((steps, length), bool)  # csoftmax's free set A (sparsemax: the support)
        self.betas = np.zeros((steps + 1, length), dtype)  # β⁰..βᴺ
        nef_s = 0 if full_state else steps
        self.affines = np.empty((nef_s, length, out), dtype)  # NEF-S: aⁿ
        self.pooled = np.empty((nef_s, sketch_dim), dtype)  # NEF-S: tanh(Σ_j α_j a_s,j)


def lean_loop(
    fixed: np.ndarray,
    weight_t: np.ndarray,
    v: np.ndarray,
    steps: int,
    full_state: bool,
    temperature: float,
    coverage_penalty: float,
    transform: int,
    store: bool,
    word_scores: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, _Records]:
    """Sᴺ ``(L, D_s)``, the history ``(N, L)`` (αⁿ of every step) and the records for the backward.
    ``fixed`` ``(L, O)`` (the encoder half, bias included), ``weight_t`` ``(K·D_s, O)`` (the sketch
    half, windows' column order), ``v`` ``(D_z,)``; ``transform``: the attention's code
    (:data:`ATTENTIONS`); ``word_scores``, for hard attention: the output layer's ``fixed`` ``(L, K)``
    and sketch ``weight_t`` ``(D_s, K)`` (:func:`hard_row`). Without ``store`` (tagging), the records
    keep one step and the NumPy loop runs (see module)."""
    length, out = fixed.shape
    score_dim = v.shape[0]
    sketch_dim = out - score_dim
    width = weight_t.shape[0] // sketch_dim
    pad = width // 2
    slots = steps if store else 1
    records = _Records(slots, length, out, width, sketch_dim, full_state, fixed.dtype)
    loops = _compiled() if store else None
    if word_scores is None:
        word_scores = (np.empty((0, 0), fixed.dtype), np.empty((0, 0), fixed.dtype))  # none read
    if loops is not None:
        sketch, history = np.zeros((length, sketch_dim), fixed.dtype), np.empty((steps, length), fixed.dtype)
        if loops.decoder_forward(
            fixed,
            weight_t,
            v.astype(fixed.dtype),
            steps,
            full_state,
            float(temperature),
            float(coverage_penalty),
            transform,
            _EXP_RANGE,
            *word_scores,
            sketch,
            history,
            records.cols,
            records.tanhs,
            records.free,
            records.betas,
            records.affines,
            records.pooled,
        ):
            return sketch, history, records
        records.betas[:] = 0  # a score beyond the exp range: the loop below, with its log-space csoftmax
    padded = np.zeros((length + 2 * pad, sketch_dim), dtype=fixed.dtype)  # Sⁿ with w zero words each side
    sketch = padded[pad : pad + length]
    windows = _window_view(padded, width)  # (L, K·D_s)
    history = np.empty((steps, length), dtype=fixed.dtype)
    beta = np.zeros(length, dtype=fixed.dtype)
    for n in range(1, steps + 1):
        k = n - 1 if store else 0
        t = records.tanhs[k]
        if n == 1:  # S⁰ = 0
            affine = fixed
        else:  # the windows of Sⁿ⁻¹ (Eq. 1), copied: S is updated in place below
            cols = records.cols[k - 1] if store else np.empty((length, width * sketch_dim), fixed.dtype)
            np.copyto(cols, windows)
            affine = cols @ weight_t
            affine += fixed
        if not full_state:
            records.affines[k] = affine
        np.tanh(affine, out=t)
        z = t[:, :score_dim] @ v  # Eq. 2
        if temperature != 1.0:
            z /= temperature
        if coverage_penalty:
            z -= coverage_penalty * beta
        if transform == SPARSEMAX:  # Eq. 3 with sparsemax: no budget
            alpha, records.free[k] = sparsemax_row(z)
        elif transform == SOFTMAX:
            alpha, records.free[k] = softmax_row(z)
        elif transform == HARD:  # Alg. 1 on Sⁿ⁻¹ and u = 1 − β, a fresh unit every L steps
            alpha, records.free[k] = hard_row(sketch, _budget(n, length, beta), word_scores)
        elif transform >= UNIFORM:
            alpha, records.free[k] = prescribed_row(n, length, transform, fixed.dtype)
        else:  # Eq. 3, csoftmax with u = 1 − β, a fresh unit every L steps
            alpha, records.free[k] = csoftmax_row(z, _budget(n, length, beta))
        history[n - 1] = alpha
        if full_state:  # Eq. 7
            sketch += alpha[:, None] * t[:, score_dim:]
        else:  # Eq. 4
            pooled = records.pooled[k]
            np.tanh(alpha @ affine[:, score_dim:], out=pooled)
            sketch += alpha[:, None] * pooled
        if store:
            np.add(records.betas[k], alpha, out=records.betas[k + 1])
        beta += alpha
    return sketch.copy(), history, records


def _budget(n: int, length: int, beta: np.ndarray) -> np.ndarray:
    """u = (⌈n/L⌉ − βⁿ⁻¹)₊: a fresh unit of budget every L steps."""
    return np.maximum((1.0 if n <= length else float(np.ceil(n / length))) - beta, 0)


def lean_backward(
    records: _Records,
    history: np.ndarray,
    weight: np.ndarray,
    v: np.ndarray,
    grad_sketch: np.ndarray | None,
    grad_history: np.ndarray | None,
    full_state: bool,
    temperature: float,
    coverage_penalty: float,
    transform: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """d fixed ``(L, O)``, d weight in the windows' column order ``(O, K·D_s)`` and dv ``(D_z,)``.

    Per step only what the next (earlier) step needs: dα, Prop. 1's Jacobian, daⁿ and dSⁿ⁻¹; the
    weight, v and encoder-half gradients sum over the steps, so they are one product each at the end.
    """
    steps, length = history.shape
    out = records.tanhs.shape[2]
    score_dim = v.shape[0]
    sketch_dim = out - score_dim
    width = weight.shape[1] // sketch_dim
    pad = width // 2
    dtype = history.dtype
    back = transposed_window(weight, width)
    g_sketch = np.zeros((length, sketch_dim), dtype) if grad_sketch is None else grad_sketch.copy()
    g_beta = np.zeros(length, dtype)
    d_affines = np.empty((steps, length, out), dtype)  # daⁿ
    d_scores = np.empty((steps, length), dtype)  # dzⁿ (before T)
    loops = _compiled()
    if loops is not None:
        loops.decoder_backward(
            records.tanhs,
            records.free,
            records.betas,
            records.affines,
            records.pooled,
            history,
            back,
            v.astype(dtype),
            g_sketch,
            np.zeros((steps, length), dtype) if grad_history is None else grad_history,
            full_state,
            float(temperature),
            float(coverage_penalty),
            transform,
            d_affines,
            d_scores,
        )
        return _sums_over_steps(records, d_affines, d_scores, score_dim)
    d_padded = np.zeros((length + 2 * pad, out), dtype)
    d_windows = _window_view(d_padded, width)  # (L, K·O)
    d_cols = np.empty((length, width * out), dtype)
    upstream = np.empty((length, out), dtype)  # d tanh(aⁿ)
    derivatives = 1 - records.tanhs * records.tanhs  # tanh'(aⁿ) of every step at once
    for n in range(steps, 0, -1):
        k = n - 1
        t, alpha = records.tanhs[k], history[k]
        d_alpha = g_beta.copy() if grad_history is None else grad_history[k] + g_beta
        if full_state:  # Sⁿ = Sⁿ⁻¹ + α ⊙ t_s
            d_alpha += np.einsum("ij,ij->i", g_sketch, t[:, score_dim:])
            np.multiply(alpha[:, None], g_sketch, out=upstream[:, score_dim:])
        else:  # Sⁿ = Sⁿ⁻¹ + α pᵀ, p = tanh(αᵀ a_s)
            pooled, a_sketch = records.pooled[k], records.affines[k][:, score_dim:]
            d_pooled = (alpha @ g_sketch) * (1 - pooled * pooled)
            d_alpha += g_sketch @ pooled + a_sketch @ d_pooled
        d_z, d_budget = attention_row_backward(alpha, records.free[k], d_alpha, transform)
        if transform == CSOFTMAX:  # u = (⌈n/L⌉ − β)₊: the gradient passes where ⌈n/L⌉ − β ≥ 0, as clamp_min
            g_beta -= np.where(records.betas[k] <= (1 if n <= length else np.ceil(n / length)), d_budget, 0)
        if coverage_penalty:
            g_beta -= coverage_penalty * d_z
        if temperature != 1.0:
            d_z /= temperature
        d_scores[k] = d_z
        np.multiply(d_z[:, None], v, out=upstream[:, :score_dim])
        d_a, derivative = d_affines[k], derivatives[k]
        if full_state:
            np.multiply(upstream, derivative, out=d_a)
        else:  # a_s enters through the pooled sum only: its gradient goes in directly (no tanh')
            np.multiply(upstream[:, :score_dim], derivative[:, :score_dim], out=d_a[:, :score_dim])
            np.multiply(alpha[:, None], d_pooled, out=d_a[:, score_dim:])
        if n > 1:  # the sketch half read Sⁿ⁻¹'s windows
            d_padded[pad : pad + length] = d_a
            np.copyto(d_cols, d_windows)
            g_sketch += d_cols @ back
    return _sums_over_steps(records, d_affines, d_scores, score_dim)


def _sums_over_steps(
    records: _Records, d_affines: np.ndarray, d_scores: np.ndarray, score_dim: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """d fixed, d weight and dv: the sums over the steps of the backward loop, one product each."""
    out, cols = d_affines.shape[2], records.cols.shape[2]
    d_weight = d_affines[1:].reshape(-1, out).T @ records.cols.reshape(-1, cols)
    d_v = d_scores.reshape(-1) @ records.tanhs[:, :, :score_dim].reshape(-1, score_dim)
    return d_affines.sum(0), d_weight, d_v


def window_rows(x: np.ndarray, width: int) -> np.ndarray:
    """The windows of Eq. 1 over the rows of ``x`` ``(L, C)``, zeros past the edges: ``(L, K·C)``."""
    length, channels = x.shape
    pad = width // 2
    padded = np.zeros((length + 2 * pad, channels), x.dtype)
    padded[pad : pad + length] = x
    return _window_view(padded, width).copy()


def _window_view(padded: np.ndarray, width: int) -> np.ndarray:
    """The windows of K = ``width`` rows of a C-contiguous ``padded`` ``(L + K − 1, C)`` side by side:
    an ``(L, K·C)`` view whose rows overlap (row i starts at padded[i]). NumPy's sliding_window_view
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


class LeanSketchFunction(torch.autograd.Function):
    """Sᴺ ``(1, L, D_s)`` and the history ``(1, N, L)`` of one sentence from the encoder states ``H``
    ``(1, L, D_h)``: the input half of the window map (computed once), then the step loop (see module)."""

    @staticmethod
    def forward(ctx, states, in_weight, in_bias, weight, v, steps: int, settings: tuple, word_scores):
        width = weight.shape[2]
        in_flat = flat_weight(in_weight).detach().numpy()  # (O, K·D_h)
        in_cols = window_rows(states[0].detach().numpy(), width)  # (L, K·D_h)
        fixed = in_cols @ in_flat.T + in_bias.detach().numpy()  # the encoder half of affine(c_iⁿ), Eq. 1
        flat = flat_weight(weight).detach().numpy()  # (O, K·D_s)
        sketch, history, records = lean_loop(
            fixed,
            np.ascontiguousarray(flat.T),
            v[0].detach().numpy(),
            steps,
            *settings,
            store=True,
            word_scores=_numpy_pair(word_scores),
        )
        ctx.saved = (records, history, in_cols, in_flat, flat, v[0].detach().numpy())
        ctx.settings, ctx.shapes = settings, (in_weight.shape, weight.shape)
        return torch.from_numpy(sketch)[None], torch.from_numpy(history.copy())[None]

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_sketch, grad_history):
        records, history, in_cols, in_flat, flat, v = ctx.saved
        d_fixed, d_flat, d_v = lean_backward(
            records,
            history,
            flat,
            v,
            None if grad_sketch is None else grad_sketch[0].numpy(),
            None if grad_history is None else grad_history[0].numpy(),
            *ctx.settings,
        )
        (out, in_dim, width), (_, sketch_dim, _) = ctx.shapes
        # the input half: dW = d fixedᵀ · windows(H), db = Σ d fixed, dH by the transposed window map
        d_in_flat = d_fixed.T @ in_cols
        d_states = window_rows(d_fixed, width) @ transposed_window(in_flat, width)
        return (
            torch.from_numpy(d_states)[None],
            torch.from_numpy(d_in_flat).view(out, width, in_dim).transpose(1, 2),
            torch.from_numpy(d_fixed.sum(0)),
            torch.from_numpy(d_flat).view(out, width, sketch_dim).transpose(1, 2),
            # a prescribed order or hard attention never reads v: no gradient, as in the generic loop
            None if ctx.settings[3] >= UNIFORM else torch.from_numpy(d_v)[None],
            None,
            None,
            None,
        )


def lean_decoder(
    states: torch.Tensor,
    in_weight: torch.Tensor,
    in_bias: torch.Tensor,
    weight: torch.Tensor,
    v: torch.Tensor,
    steps: int,
    settings: tuple[bool, float, float, int],
    word_scores: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The decoder of :class:`easyfirst.model.sketch.SketchDecoder` with an attention of
    :data:`ATTENTIONS` for one sentence: Sᴺ ``(1, L, D_s)`` and the history ``(1, N, L)`` from
    ``states`` ``(1, L, D_h)``, the input and sketch halves' weights (``nn.Conv1d`` layout), v ``(1,
    D_z)``, N and (full_state, temperature, coverage penalty, the attention's code), and for hard
    attention the output layer (:class:`easyfirst.model.sketch.WordScores`: ``fixed`` ``(1, L, K)``,
    ``weight`` ``(K, D_s)``); with gradients where autograd wants them (none through the hard choice)."""
    tensors = (states, in_weight, in_bias, weight, v)
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return LeanSketchFunction.apply(*tensors, steps, settings, word_scores)
    with torch.no_grad():
        width = weight.shape[2]
        fixed = window_rows(states[0].numpy(), width) @ flat_weight(in_weight).numpy().T + in_bias.numpy()
        sketch, history, _ = lean_loop(
            fixed,
            np.ascontiguousarray(flat_weight(weight).numpy().T),
            v[0].numpy(),
            steps,
            *settings,
            store=False,
            word_scores=_numpy_pair(word_scores),
        )
    return torch.from_numpy(sketch)[None], torch.from_numpy(history)[None]


def _numpy_pair(word_scores: tuple[torch.Tensor, torch.Tensor] | None) -> tuple | None:
    """The output layer's parts for :func:`hard_row` from :class:`easyfirst.model.sketch.WordScores`'s:
    ``fixed`` ``(L, K)`` and the transposed sketch weight ``(D_s, K)``."""
    if word_scores is None:
        return None
    fixed, weight = word_scores
    return np.ascontiguousarray(fixed[0].detach().numpy()), np.ascontiguousarray(weight.detach().numpy().T)


# ---------------------------------------------------------------------------------------------------------
# The BiLSTM encoder for one sentence
# ---------------------------------------------------------------------------------------------------------


def _pair(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """np.stack([first, second]) for two arrays of one shape, without np.stack's fixed cost (~15 µs)."""
    both = np.empty((2, *first.shape), first.dtype)
    both[0], both[1] = first, second
    return both


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """σ(x) = (1 + tanh(x/2)) / 2, which neither overflows nor warns for large |x|."""
    return np.tanh(x * 0.5) * 0.5 + 0.5


def lstm_forward(
    x: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray, bias: np.ndarray, training: bool = True
) -> tuple[np.ndarray, dict]:
    """Both directions of a bidirectional ``nn.LSTM`` layer (gates i, f, g, o) over the rows of ``x``
    ``(L, D)``, stepped together: direction 0 reads x forward, direction 1 backward. ``w_ih`` ``(2, 4H,
    D)``, ``w_hh`` ``(2, 4H, H)``, ``bias`` ``(2, 4H)`` (the two biases summed). Returns the states
    ``(2, L, H)`` in reading order and what :func:`lstm_backward` needs. Not ``training``: the NumPy
    loop (see module)."""
    length, hidden = x.shape[0], w_hh.shape[2]
    inputs = _pair(x @ w_ih[0].T, x[::-1] @ w_ih[1].T) + bias[:, None]  # (2, L, 4H), every step's input part
    w_hh_t = np.ascontiguousarray(w_hh.transpose(0, 2, 1))  # (2, H, 4H)
    gates = np.empty_like(inputs)  # i, f, o after σ and g after tanh
    cells = np.zeros((2, length + 1, hidden), x.dtype)  # c_0 = 0, c_1..c_L
    states = np.zeros((2, length + 1, hidden), x.dtype)  # h_0 = 0, h_1..h_L
    tanh_cells = np.empty((2, length, hidden), x.dtype)
    loops = _compiled() if training else None
    if loops is not None:
        loops.lstm_forward(inputs, w_hh_t, gates, cells, states, tanh_cells)
    else:
        for t in range(length):
            a = inputs[:, t] + np.matmul(states[:, t, None], w_hh_t)[:, 0]
            gate = gates[:, t]
            gate[:] = _sigmoid(a)
            gate[:, 2 * hidden : 3 * hidden] = np.tanh(a[:, 2 * hidden : 3 * hidden])
            cell = cells[:, t + 1]
            np.multiply(gate[:, hidden : 2 * hidden], cells[:, t], out=cell)  # f ⊙ c_{t−1}
            cell += gate[:, :hidden] * gate[:, 2 * hidden : 3 * hidden]  # + i ⊙ g
            np.tanh(cell, out=tanh_cells[:, t])
            np.multiply(gate[:, 3 * hidden :], tanh_cells[:, t], out=states[:, t + 1])  # o ⊙ tanh(c)
    saved = {"x": x, "gates": gates, "cells": cells, "tanh_cells": tanh_cells, "states": states}
    return states[:, 1:], saved


def lstm_backward(
    saved: dict, grad: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Backpropagation through time for :func:`lstm_forward`, both directions together, from the
    gradient of the states ``(2, L, H)`` (reading order): dx ``(L, D)``, dW_ih, dW_hh and d bias (the
    same for both of ``nn.LSTM``'s biases), stacked by direction."""
    gates, cells, tanh_cells, states = saved["gates"], saved["cells"], saved["tanh_cells"], saved["states"]
    _, length, hidden = grad.shape
    d_gates = np.empty_like(gates)
    loops = _compiled()
    if loops is not None:
        loops.lstm_backward(np.ascontiguousarray(grad), gates, cells, tanh_cells, w_hh, d_gates)
    else:
        d_state = np.zeros((2, hidden), grad.dtype)
        d_cell = np.zeros((2, hidden), grad.dtype)
        for t in range(length - 1, -1, -1):
            gate, tanh_cell = gates[:, t], tanh_cells[:, t]
            i, f = gate[:, :hidden], gate[:, hidden : 2 * hidden]
            g, o = gate[:, 2 * hidden : 3 * hidden], gate[:, 3 * hidden :]
            d_h = grad[:, t] + d_state
            d_cell += d_h * o * (1 - tanh_cell * tanh_cell)
            d = d_gates[:, t]
            d[:, :hidden] = d_cell * g * i * (1 - i)
            d[:, hidden : 2 * hidden] = d_cell * cells[:, t] * f * (1 - f)
            d[:, 2 * hidden : 3 * hidden] = d_cell * i * (1 - g * g)
            d[:, 3 * hidden :] = d_h * tanh_cell * o * (1 - o)
            d_state = np.matmul(d[:, None], w_hh)[:, 0]
            d_cell *= f
    x = saved["x"]
    d_x = d_gates[0] @ w_ih[0] + (d_gates[1] @ w_ih[1])[::-1]
    d_w_ih = _pair(d_gates[0].T @ x, d_gates[1].T @ x[::-1])
    d_w_hh = np.matmul(d_gates.transpose(0, 2, 1), states[:, :-1])
    return d_x, d_w_ih, d_w_hh, d_gates.sum(1)


def _bilstm(x: torch.Tensor, weights: tuple, training: bool) -> tuple[torch.Tensor, tuple]:
    """:func:`lstm_forward` on tensors: the output ``(L, 2H)`` and what the backward needs."""
    w = [weight.detach().numpy() for weight in weights]
    w_ih, w_hh = _pair(w[0], w[4]), _pair(w[1], w[5])
    states, saved = lstm_forward(x.detach().numpy(), w_ih, w_hh, _pair(w[2] + w[3], w[6] + w[7]), training)
    return torch.from_numpy(np.concatenate([states[0], states[1][::-1]], 1)), (saved, w_ih, w_hh)


def lean_bilstm(x: torch.Tensor, *weights: torch.Tensor) -> torch.Tensor:
    """``nn.LSTM(bidirectional=True)``'s output ``(L, 2H)`` for one unpadded sentence ``x`` ``(L, D)``,
    from the module's eight parameters (forward direction, then reverse); with gradients where autograd
    wants them (:class:`LeanBiLSTMFunction`), else by the NumPy loop."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in (x, *weights)):
        return LeanBiLSTMFunction.apply(x, *weights)
    return _bilstm(x, weights, training=False)[0]


class LeanBiLSTMFunction(torch.autograd.Function):
    """:func:`lean_bilstm` with its backward: backpropagation through time by hand."""

    @staticmethod
    def forward(ctx, x, *weights):
        output, ctx.saved = _bilstm(x, weights, training=True)
        return output

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        saved, w_ih, w_hh = ctx.saved
        grad = grad.numpy()
        hidden = grad.shape[1] // 2
        d_x, d_ih, d_hh, d_b = lstm_backward(saved, _pair(grad[:, :hidden], grad[::-1, hidden:]), w_ih, w_hh)
        # each bias gets its own array: the optimizer and clipping change gradients in place
        found = [d_x, d_ih[0], d_hh[0], d_b[0], d_b[0].copy(), d_ih[1], d_hh[1], d_b[1], d_b[1].copy()]
        return tuple(torch.from_numpy(np.ascontiguousarray(d)) for d in found)
