"""Backend ``numba``: the model's BiLSTM and decoder on the CPU through the compiled loops of
:mod:`easyfirst.backends.kernels`, in training (with the backward written out) and in tagging, any
batch, each sentence on its own rows. Only the time loops and the sketch loop are compiled: the
products that do not change across steps (the input part of each LSTM gate, the encoder half of Eq. 1)
run in torch (:func:`encode`, :func:`decode`), and :class:`BiLSTMFunction` and :class:`SketchFunction`
take them and give their gradients."""

from __future__ import annotations

import logging
from contextlib import contextmanager

import numpy as np
import torch

from easyfirst.backends.declaration import ANY, CSOFTMAX, LEARNED, MANY, ONE, ROW_ATTENTIONS, AtMost, Backend
from easyfirst.ops.constrained import _EXP_RANGE
from easyfirst.ops.kinds import KINDS
from easyfirst.ops.window import flat_weight, window_columns

_module = None  # easyfirst.backends.kernels once imported; False where it cannot be
_blas: list = []  # threadpoolctl's controllers of the BLAS libraries loaded with the kernels


def kernels():
    """The compiled loops, imported on first use (importing Numba and SciPy takes about 0.4 s, which a
    run on the GPU need not pay); None where Numba cannot be imported. The first import after an
    install says so, once, and compiles every loop (float32, forward and backward), so that the next
    process finds them all in Numba's cache."""
    global _module
    if _module is None:
        try:
            from easyfirst.backends import kernels as compiled
        except ImportError:
            _module = False
            return None
        from threadpoolctl import ThreadpoolController

        _blas[:] = ThreadpoolController().select(user_api="blas").lib_controllers
        _module = compiled
        if compiled.cold():
            logging.getLogger("easyfirst").warning(
                "easyfirst: compiling the CPU loops (once after an install, about 30 s of one core); "
                "later runs read them from Numba's cache"
            )
            _compile_every_loop()
    return _module or None


def _compile_every_loop() -> None:
    """Run each compiled loop once on tiny float32 inputs: with records and each backward, then
    :func:`warm_up`'s."""
    two = np.full(1, 2, np.int64)
    # the first compile may be asked for inside the caller's inference_mode (a Tagger's first batch)
    with torch.inference_mode(False), torch.enable_grad():
        inputs, w_hh_t = torch.zeros(1, 2, 2, 4, requires_grad=True), torch.zeros(2, 1, 4, requires_grad=True)
        BiLSTMFunction.apply(inputs, w_hh_t, two).sum().backward()
        parts = [torch.zeros(1, 2, 2), torch.zeros(2, 1, 1), torch.ones(1, 1)]  # fixed, sketch half, v
        sketch, history = SketchFunction.apply(
            *(part.requires_grad_() for part in parts), two, two, 2, (True, 1.0, 0.0, CSOFTMAX), None
        )
        (sketch.sum() + history.sum()).backward()
    warm_up()


def warm_up() -> bool:
    """Run each tagging loop once on a tiny float32 input, so that Numba has compiled them (after an
    install; later read from its cache) before a request waits for it; False where Numba is missing."""
    if kernels() is None:
        return False
    one = np.ones(1, np.int64)
    with torch.no_grad():
        _bilstm(np.zeros((1, 1, 2, 4), np.float32), np.zeros((2, 1, 4), np.float32), one, store=False)
        _sketch(torch.zeros(1, 1, 2), torch.zeros(2, 1, 1), torch.ones(1, 1), one, one, 1, (True, 1.0, 0.0, CSOFTMAX),
                None, False)  # fmt: skip
    return True


@contextmanager
def _one_blas_thread():
    """BLAS on one thread for the duration of a compiled call, the caller's settings restored after (a
    multi-threaded OpenBLAS that finds the other cores busy waits for them: one sentence per update ran
    7× slower on this project's 2-core machine with another job on the second core). Reading and setting
    them cost about 8 µs (3% of an update at one sentence), so each compiled call holds them once."""
    kernels()  # the BLAS libraries are known once the kernels are imported
    before = [library.num_threads for library in _blas]
    for library, threads in zip(_blas, before, strict=True):
        if threads != 1:
            library.set_num_threads(1)
    try:
        yield
    finally:
        for library, threads in zip(_blas, before, strict=True):
            if threads != 1:
                library.set_num_threads(threads)


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(tensor.detach().numpy())


def _wants_gradients(module, x: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and (x.requires_grad or any(p.requires_grad for p in module.parameters()))


def _on_words(mask: torch.Tensor, rows: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor):
    """``rows · weightᵀ + bias`` for the rows of ``rows`` ``(B·L, C)`` that hold words, as ``(B·L, O)``;
    the compiled loops read a sentence's own rows only. Where at least two rows in three hold words (a
    file's batches, of similar lengths) every row is computed: selecting them cost more (5% of tagging
    EWT test); else (a server's group of short requests beside a long one) the padding rows are left
    unset."""
    flat = mask.reshape(-1)
    if 3 * int(flat.sum()) >= 2 * flat.numel():
        return torch.addmm(bias, rows, weight.T)
    words = flat.nonzero().squeeze(1)
    found = torch.addmm(bias, rows.index_select(0, words), weight.T)
    spread = found.new_empty(rows.shape[0], found.shape[1])
    spread[words] = found
    return spread


def encode(encoder, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """easyfirst.model.encoder.BiLSTMEncoder.forward: ``(B, L, 2H)``, zeros on padding, layer by layer:
    each step's input part (x W_ihᵀ + both biases, both directions in one product) in torch, with
    autograd where gradients are wanted and over the rows that hold words where not, then the time loops
    (:class:`BiLSTMFunction`)."""
    size, length = mask.shape
    lengths = mask.sum(1).numpy()  # (B,) int64, L_b
    gradients = _wants_gradients(encoder, x)
    directions = ("", "_reverse")
    for k, lstm in enumerate(encoder.layers):
        if k:
            x = encoder.between(x)
        weight = torch.cat([getattr(lstm, f"weight_ih_l0{d}") for d in directions])  # (2·4H, D)
        bias = torch.cat(
            [getattr(lstm, f"bias_ih_l0{d}") + getattr(lstm, f"bias_hh_l0{d}") for d in directions]
        )
        w_hh_t = torch.stack([getattr(lstm, f"weight_hh_l0{d}").T for d in directions])  # (2, H, 4H)
        if gradients:
            inputs = torch.nn.functional.linear(x, weight, bias).view(size, length, 2, -1)
            x = BiLSTMFunction.apply(inputs, w_hh_t, lengths)
        else:
            inputs = _on_words(mask, x.reshape(size * length, -1), weight, bias).view(size, length, 2, -1)
            x = _bilstm(_numpy(inputs), _numpy(w_hh_t), lengths, store=False)[0]
    return x


def _bilstm(values: np.ndarray, w_hh_t: np.ndarray, lengths: np.ndarray, store: bool):
    """kernels.bilstm on NumPy arrays: the states ``(B, L, 2H)`` as a tensor and, with ``store``, the
    records of the backward."""
    size, length, _, four = values.shape
    hidden = four // 4
    dtype = values.dtype
    out = np.zeros((size, length, 2 * hidden), dtype)
    shape = (2, size, length) if store else (0, 0, 0)
    gates, tanhs = np.empty((*shape, 4 * hidden), dtype), np.empty((*shape, hidden), dtype)
    cells = np.zeros((2, size, length + 1, hidden) if store else (0, 0, 0, 0), dtype)
    fast = dtype == np.float32
    with _one_blas_thread():
        kernels().bilstm(values, w_hh_t, lengths, fast, out, gates, cells, tanhs)
    return torch.from_numpy(out), (gates, cells, tanhs, out, lengths)


class BiLSTMFunction(torch.autograd.Function):
    """The time loops of one bidirectional ``nn.LSTM`` layer from its input parts ``(B, L, 2, 4H)``
    (sentence b its first ``lengths[b]`` rows) and ``W_hhᵀ`` ``(2, H, 4H)``, with backpropagation through
    time by hand."""

    @staticmethod
    def forward(ctx, inputs, w_hh_t, lengths):
        out, ctx.records = _bilstm(_numpy(inputs), _numpy(w_hh_t), lengths, store=True)
        ctx.w_hh_t = _numpy(w_hh_t)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        size, length, double = ctx.records[3].shape  # the states (B, L, 2H)
        d_inputs = np.zeros((size, length, 2, 2 * double), ctx.w_hh_t.dtype)
        d_w_hh_t = np.zeros_like(ctx.w_hh_t)
        with _one_blas_thread():
            kernels().lstm_backward(_numpy(grad), *ctx.records, ctx.w_hh_t, d_inputs, d_w_hh_t)
        return torch.from_numpy(d_inputs), torch.from_numpy(d_w_hh_t), None


def decode(decoder, states, mask, steps, score_words, beyond_length):
    """easyfirst.model.sketch.SketchDecoder.forward: Sᴺ ``(B, L, D_s)`` and the history ``(B, N_max,
    L)``, each sentence running its own N_b steps over its own words."""
    size, length = mask.shape
    lengths = mask.sum(1).numpy()  # L_b
    # N_b, as easyfirst.model.sketch.sentence_steps counts them: L_b, else N, at most L_b unless beyond it
    n_steps = lengths if steps is None else np.full_like(lengths, steps)
    n_steps = n_steps if beyond_length else np.minimum(n_steps, lengths)
    total = int(n_steps.max()) if size else 0
    if not total or not length:  # no step to run
        return states.new_zeros(size, length, decoder.sketch_dim), states.new_zeros(size, total, length)
    half = decoder.input_half  # Eq. 1's H half
    kind = decoder.attention
    settings = (
        decoder.full_state,
        float(decoder.temperature),
        float(decoder.coverage_penalty),
        KINDS[kind.name].code,
    )
    word_scores = None
    if kind.scores == "output":  # hard attention: the output layer's parts, no gradient through it
        word_scores = (_numpy(score_words.fixed), _numpy(score_words.weight.T))
    weight, v = decoder.sketch_half.weight, decoder.v.weight
    if _wants_gradients(decoder, states):  # Eq. 1's H half by the model's own module, with autograd
        fixed = half(states.transpose(1, 2)).transpose(1, 2)  # (B, L, O)
        return SketchFunction.apply(fixed, weight, v, lengths, n_steps, total, settings, word_scores)
    with torch.no_grad():  # Eq. 1's H half (B, L, O) over the windows of the words only
        cols = window_columns(states.transpose(1, 2), half.weight.shape[-1])
        fixed = _on_words(mask, cols, flat_weight(half.weight), half.bias).view(size, length, -1)
        return _sketch(fixed, weight, v, lengths, n_steps, total, settings, word_scores, False)[:2]


def _sketch(fixed, weight, v, lengths, n_steps, total: int, settings: tuple, word_scores, store: bool):
    """kernels.decoder_forward on tensors (``lengths`` and ``n_steps`` NumPy): Sᴺ, the history and
    (``store``) the records by packed row."""
    values = _numpy(fixed)
    size, length, out = values.shape
    sketch_dim, width = weight.shape[1], weight.shape[2]
    dtype = values.dtype
    if word_scores is None:
        word_scores = (np.empty((0, 0, 0), dtype), np.empty((0, 0), dtype))
    sketch = np.zeros((size, length, sketch_dim), dtype)
    history = np.zeros((size, total, length), dtype)
    steps, rows = (total, int(lengths.sum())) if store else (0, 0)
    nef_s = 0 if settings[0] else steps
    records = (
        np.empty((max(steps - 1, 0), rows, width * sketch_dim), dtype),  # windows of Sⁿ⁻¹, n ≥ 2
        np.empty((steps, rows, out), dtype),  # tanh(aⁿ)
        np.empty((steps, rows), bool),  # the free sets
        np.zeros((steps + 1 if store else 0, rows), dtype),  # β⁰..βᴺ
        np.empty((nef_s, rows, out), dtype),  # NEF-S: aⁿ
        np.empty((nef_s, size, sketch_dim), dtype),  # NEF-S: the pooled tanh, by packed sentence
    )
    fast = dtype == np.float32
    with _one_blas_thread():
        kernels().decoder_forward(
            values,
            _numpy(flat_weight(weight).T),  # (K·D_s, O)
            _numpy(v[0]),
            lengths,
            n_steps,
            settings,
            _EXP_RANGE,
            fast,
            *word_scores,
            sketch,
            history,
            records,
        )
    return torch.from_numpy(sketch), torch.from_numpy(history), records


class SketchFunction(torch.autograd.Function):
    """Sᴺ and the history from the encoder half of Eq. 1 ``(B, L, O)`` (bias included), the sketch
    half's weight ``(O, D_s, K)`` and v ``(1, D_z)``: the step loop, with its backward written out
    (Prop. 1's Jacobian for csoftmax)."""

    @staticmethod
    def forward(ctx, fixed, weight, v, lengths, n_steps, total, settings, word_scores):
        sketch, history, records = _sketch(
            fixed.detach(), weight, v, lengths, n_steps, total, settings, word_scores, True
        )
        ctx.records, ctx.settings, ctx.history = records, settings, history.numpy()
        ctx.weight, ctx.v, ctx.counts = _numpy(weight), _numpy(v[0]), (lengths, n_steps)
        return sketch, history

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_sketch, grad_history):  # autograd gives zeros for an output not used
        out, sketch_dim, width = ctx.weight.shape
        # the transposed window map: dS_j = Σ_k W_{K−1−k}ᵀ da_{j+k−w}, rows (k, o)
        back = np.ascontiguousarray(ctx.weight[:, :, ::-1].transpose(2, 0, 1)).reshape(width * out, -1)
        d_fixed = np.zeros((*ctx.history.shape[::2], out), ctx.history.dtype)
        d_flat, d_v = np.zeros((out, width * sketch_dim), d_fixed.dtype), np.zeros_like(ctx.v)
        with _one_blas_thread():
            grads = _numpy(grad_sketch), _numpy(grad_history)
            kernels().decoder_backward(ctx.records, ctx.history, back, ctx.v, *ctx.counts, ctx.settings,
                                       *grads, d_fixed, d_flat, d_v)  # fmt: skip
        d_weight = torch.from_numpy(d_flat).view(out, width, sketch_dim).transpose(1, 2)
        # a prescribed order or hard attention never reads v: no gradient, as in the reference
        d_v = torch.from_numpy(d_v)[None] if ctx.settings[-1] in LEARNED else None
        return torch.from_numpy(d_fixed), d_weight, d_v, None, None, None, None, None


# any batch on the CPU, in training and tagging; wider BiLSTM layers than 64 units run faster in torch's
# LSTM (docs/architecture.md, "Backends"); a transformer's vectors are input like any other (tests/backends/
# test_compiled.py holds a fine-tuned one's gradients to the reference's)
_SUPPORTS = {"revision": {1}, "sentences": {ONE, MANY}, "device": {"cpu"}, "dtype": {"float32", "float64"}}
NUMBA = Backend(
    "numba",
    "compiled CPU loops",
    encoder=encode,
    decoder=decode,
    encoder_supports=_SUPPORTS
    | {"training": ANY, "encoder_layers": ANY, "dropout_kind": ANY, "hidden_dim": AtMost(64)}
    | {"transformer": ANY},
    decoder_supports=_SUPPORTS
    | {
        "training": ANY,
        "model": {"nef-f", "nef-s"},
        "attention": ROW_ATTENTIONS,
        "sketch_steps": ANY,
        "steps_beyond_length": ANY,
        "attention_temperature": ANY,
        "coverage_penalty": ANY,
    },
    missing=lambda workload: None if kernels() else "Numba cannot be imported (pip install numba)",
)
