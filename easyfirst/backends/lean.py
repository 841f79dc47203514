"""One sentence on the CPU, in NumPy: the BiLSTM and the decoder (csoftmax, sparsemax or softmax
attention, a prescribed order: uniform, left-to-right, right-to-left, or vanilla easy-first's hard
choice) at one sentence per update.

Training with one sentence per update, as the paper's own code does (github.com/Unbabel/
neural-easy-first, dynet/neftagger.py; configs/pos-reference.toml), runs the BiLSTM over one row of L
words and the sketch loop of Alg. 2 over one row per step, where every operation is tiny and its fixed
cost is nearly all there is: about 1.3–5 µs for a torch operation with its autograd record, 0.3–1 µs for
a NumPy one. With no padding and one sentence, the masks, the per-sentence step counts and the
``common`` split of the batched loop disappear too. So the backends ``numpy`` and ``numba``
(easyfirst.backends.single; the chooser takes them for one unpadded sentence on the CPU in float32 or
float64) run these two autograd Functions instead:

- :class:`LeanBiLSTMFunction`: both directions of ``nn.LSTM`` stepped together, and backpropagation
  through time by hand (:mod:`easyfirst.backends.lstm`); the same parameters, so a model trains and
  tags the same either way;
- :class:`LeanSketchFunction`: the input half of the window map (Eq. 1) once, then the step loop with
  the mathematics of :mod:`easyfirst.backends.fused` (Eqs. 1–7, 11; NEF-F and NEF-S, N fixed or
  N = L, a fresh unit of budget every L steps, temperature and coverage penalty), whose backward it
  follows step by step with Prop. 1's Jacobian for csoftmax (sparsemax and softmax attention, unbudgeted, take the same loop
  with their own Jacobians, the prescribed orders and hard attention with none; each row's attention
  and its backward are in :mod:`easyfirst.backends.rows`); the sums over steps (the weight, v and
  input-half gradients) are one matrix product each at the end. csoftmax is computed in float64 exp
  space (the CPU path of easyfirst.ops.constrained) when every score lies within 600 nats of 0, else by
  :func:`easyfirst.ops.constrained.csoftmax_forward`.

Every function takes ``loops``: the compiled kernels (:mod:`easyfirst.backends.kernels`, one call per
loop instead of dozens of NumPy calls per step; loaded by :func:`kernels`), which backend ``numba``
passes in training, or None for the NumPy loops below (backend ``numpy``, and tagging: Numba compiles
the kernels on their first use after an install, about 30 s, which a first ``easyfirst tag --text`` or
``plot`` should not wait for).

The batched torch paths stay the reference: tests/backends/test_lean.py holds both loops to them in float64.
"""

from __future__ import annotations

import numpy as np
import torch

from easyfirst.backends import rows
from easyfirst.backends.lstm import lstm_backward, lstm_forward, pair
from easyfirst.backends.rows import CSOFTMAX, LEARNED
from easyfirst.ops.constrained import _EXP_RANGE
from easyfirst.ops.window import flat_weight

_kernels_module = None  # easyfirst.backends.kernels once imported; False where it cannot be


def kernels():
    """The compiled step loops (:mod:`easyfirst.backends.kernels`, pip install "easyfirst[fast]"),
    imported on first use: importing Numba and SciPy takes about 0.4 s, which a command that never
    runs a single sentence on the CPU (tagging in batches, a GPU) need not pay. None where Numba (or
    SciPy, whose BLAS it calls) is not installed: the NumPy loops of this module run instead."""
    global _kernels_module
    if _kernels_module is None:
        try:
            from easyfirst.backends import kernels as lean_kernels

            _kernels_module = lean_kernels
        except ImportError:
            _kernels_module = False
    return _kernels_module or None


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
    loops=None,
) -> tuple[np.ndarray, np.ndarray, _Records]:
    """Sᴺ ``(L, D_s)``, the history ``(N, L)`` (αⁿ of every step) and the records for the backward.
    ``fixed`` ``(L, O)`` (the encoder half, bias included), ``weight_t`` ``(K·D_s, O)`` (the sketch
    half, windows' column order), ``v`` ``(D_z,)``; ``transform``: the attention's code
    (``code`` in easyfirst.ops.kinds.KINDS); ``word_scores``, for hard attention: the output layer's ``fixed`` ``(L, K)``
    and sketch ``weight_t`` ``(D_s, K)`` (:func:`hard_row`). Without ``store`` (tagging), the records
    keep one step and the NumPy loop runs (see module)."""
    length, out = fixed.shape
    score_dim = v.shape[0]
    sketch_dim = out - score_dim
    width = weight_t.shape[0] // sketch_dim
    pad = width // 2
    slots = steps if store else 1
    records = _Records(slots, length, out, width, sketch_dim, full_state, fixed.dtype)
    loops = loops if store else None  # tagging runs the NumPy loop (see module)
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
    windows = rows.window_view(padded, width)  # (L, K·D_s)
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
        alpha, records.free[k] = rows.attention_row(transform, z, n, beta, sketch, word_scores)  # Eq. 3
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
    loops=None,
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
    back = rows.transposed_window(weight, width)
    g_sketch = np.zeros((length, sketch_dim), dtype) if grad_sketch is None else grad_sketch.copy()
    g_beta = np.zeros(length, dtype)
    d_affines = np.empty((steps, length, out), dtype)  # daⁿ
    d_scores = np.empty((steps, length), dtype)  # dzⁿ (before T)
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
    d_windows = rows.window_view(d_padded, width)  # (L, K·O)
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
        d_z, d_budget = rows.attention_row_backward(alpha, records.free[k], d_alpha, transform)
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


class LeanSketchFunction(torch.autograd.Function):
    """Sᴺ ``(1, L, D_s)`` and the history ``(1, N, L)`` of one sentence from the encoder states ``H``
    ``(1, L, D_h)``: the input half of the window map (computed once), then the step loop (see module)."""

    @staticmethod
    def forward(ctx, states, in_weight, in_bias, weight, v, steps: int, settings: tuple, word_scores, loops):
        width = weight.shape[2]
        in_flat = flat_weight(in_weight).detach().numpy()  # (O, K·D_h)
        in_cols = rows.window_rows(states[0].detach().numpy(), width)  # (L, K·D_h)
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
            loops=loops,
        )
        ctx.saved = (records, history, in_cols, in_flat, flat, v[0].detach().numpy())
        ctx.settings, ctx.shapes, ctx.loops = settings, (in_weight.shape, weight.shape), loops
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
            loops=ctx.loops,
        )
        (out, in_dim, width), (_, sketch_dim, _) = ctx.shapes
        # the input half: dW = d fixedᵀ · windows(H), db = Σ d fixed, dH by the transposed window map
        d_in_flat = d_fixed.T @ in_cols
        d_states = rows.window_rows(d_fixed, width) @ rows.transposed_window(in_flat, width)
        return (
            torch.from_numpy(d_states)[None],
            torch.from_numpy(d_in_flat).view(out, width, in_dim).transpose(1, 2),
            torch.from_numpy(d_fixed.sum(0)),
            torch.from_numpy(d_flat).view(out, width, sketch_dim).transpose(1, 2),
            # a prescribed order or hard attention never reads v: no gradient, as in the generic loop
            None if ctx.settings[3] not in LEARNED else torch.from_numpy(d_v)[None],
            None,
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
    loops=None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The decoder of :class:`easyfirst.model.sketch.SketchDecoder` with an attention of
    :data:`~easyfirst.backends.rows.ROW_ATTENTIONS` for one sentence: Sᴺ ``(1, L, D_s)`` and the history ``(1, N, L)`` from
    ``states`` ``(1, L, D_h)``, the input and sketch halves' weights (``nn.Conv1d`` layout), v ``(1,
    D_z)``, N and (full_state, temperature, coverage penalty, the attention's code), and for hard
    attention the output layer (:class:`easyfirst.model.sketch.WordScores`: ``fixed`` ``(1, L, K)``,
    ``weight`` ``(K, D_s)``); with gradients where autograd wants them (none through the hard choice)."""
    tensors = (states, in_weight, in_bias, weight, v)
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return LeanSketchFunction.apply(*tensors, steps, settings, word_scores, loops)
    with torch.no_grad():
        width = weight.shape[2]
        fixed = (
            rows.window_rows(states[0].numpy(), width) @ flat_weight(in_weight).numpy().T + in_bias.numpy()
        )
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


def _bilstm(x: torch.Tensor, weights: tuple, loops) -> tuple[torch.Tensor, tuple]:
    """:func:`lstm_forward` on tensors: the output ``(L, 2H)`` and what the backward needs."""
    w = [weight.detach().numpy() for weight in weights]
    w_ih, w_hh = pair(w[0], w[4]), pair(w[1], w[5])
    states, saved = lstm_forward(x.detach().numpy(), w_ih, w_hh, pair(w[2] + w[3], w[6] + w[7]), loops)
    return torch.from_numpy(np.concatenate([states[0], states[1][::-1]], 1)), (saved, w_ih, w_hh)


def lean_bilstm(x: torch.Tensor, *weights: torch.Tensor, loops=None) -> torch.Tensor:
    """``nn.LSTM(bidirectional=True)``'s output ``(L, 2H)`` for one unpadded sentence ``x`` ``(L, D)``,
    from the module's eight parameters (forward direction, then reverse); with gradients where autograd
    wants them (:class:`LeanBiLSTMFunction`), else by the NumPy loop."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in (x, *weights)):
        return LeanBiLSTMFunction.apply(x, loops, *weights)
    return _bilstm(x, weights, None)[0]


class LeanBiLSTMFunction(torch.autograd.Function):
    """:func:`lean_bilstm` with its backward: backpropagation through time by hand."""

    @staticmethod
    def forward(ctx, x, loops, *weights):
        output, ctx.saved = _bilstm(x, weights, loops)
        ctx.loops = loops
        return output

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        saved, w_ih, w_hh = ctx.saved
        grad = grad.numpy()
        hidden = grad.shape[1] // 2
        d_x, d_ih, d_hh, d_b = lstm_backward(
            saved, pair(grad[:, :hidden], grad[::-1, hidden:]), w_ih, w_hh, ctx.loops
        )
        # each bias gets its own array: the optimizer and clipping change gradients in place
        found = [d_x, d_ih[0], d_hh[0], d_b[0], d_b[0].copy(), d_ih[1], d_hh[1], d_b[1], d_b[1].copy()]
        d_x, *d_weights = (torch.from_numpy(np.ascontiguousarray(d)) for d in found)
        return d_x, None, *d_weights
