"""Backend ``numba`` in tagging: a batch's encoder and decoder with each sentence on its own rows, in the
compiled loops of :mod:`easyfirst.backends.tag_kernels` (one call per part for the whole batch).

Without gradients the batched paths pay a torch operation's fixed cost at every time step and sketch
step of the longest sentence, over padding and over the sentences that have stopped; here the products
that do not change across steps stay batched in torch (the input part of each LSTM gate, the encoder
half of Eq. 1, the output layer), and only the time loops and the sketch loop run compiled, sentence by
sentence. The tags and probabilities are those of the reference up to float32 rounding
(tests/backends/test_tag_kernels.py; docs/studies/serve-load.md says what was measured on EWT).
"""

from __future__ import annotations

import numpy as np
import torch

from easyfirst.backends import lean
from easyfirst.ops.constrained import _EXP_RANGE
from easyfirst.ops.kinds import KINDS
from easyfirst.ops.window import flat_weight, window_columns

_module = None  # easyfirst.backends.tag_kernels once imported; False where it cannot be


def loaded() -> bool:
    """Whether :func:`load` has loaded the compiled loops in this process (this imports nothing)."""
    return bool(_module)


def load() -> bool:
    """Import the compiled tagging loops (:mod:`easyfirst.backends.tag_kernels`) and run each once on a
    tiny float32 input, so that Numba has compiled them (after an install: 30–45 s, then read from its
    cache on disk) before a request waits for it; False where Numba (or SciPy) is not installed."""
    global _module
    if _module is None:
        try:
            from easyfirst.backends import tag_kernels as compiled
        except ImportError:
            _module = False
            return False
        one = np.ones(1, np.int64)
        compiled.bilstm_tag(
            np.zeros((2, 1, 1, 4), np.float32),
            np.zeros((2, 1, 4), np.float32),
            one,
            True,
            np.zeros((1, 1, 2), np.float32),
        )
        empty = (np.empty((0, 0, 0), np.float32), np.empty((0, 0), np.float32))
        compiled.decoder_tag(
            np.zeros((1, 1, 2), np.float32),
            np.zeros((1, 2), np.float32),
            np.ones(1, np.float32),
            one,
            one,
            True,
            1.0,
            0.0,
            0,
            _EXP_RANGE,
            True,
            *empty,
            np.zeros((1, 1, 1), np.float32),
            np.zeros((1, 1, 1), np.float32),
            np.empty(1, bool),
        )
        _module = compiled
    return bool(_module)


def tag_kernels():
    """The compiled tagging loops, once :func:`load` has loaded them."""
    if not _module:
        raise RuntimeError(
            "the compiled tagging loops are not loaded (easyfirst.backends.chooser.load_tagging_loops)"
        )
    return _module


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(tensor.detach().numpy())


def _words(mask: torch.Tensor) -> torch.Tensor | None:
    """The rows of a ``(B·L, …)`` view of a batch that hold words (None: all do). The products that do
    not change across steps run over these rows only: a group of one-sentence requests is padded to its
    longest sentence (EWT dev, groups of 16: about 60% of the rows are padding)."""
    flat = mask.reshape(-1)
    return None if bool(flat.all()) else flat.nonzero().squeeze(1)


def _on_words(words: torch.Tensor | None, rows: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor):
    """``rows · weightᵀ + bias`` for the word rows of ``rows`` ``(B·L, C)``, as ``(B·L, O)``: the padding
    rows are left unset, since the compiled loops read a sentence's own rows only."""
    if words is None:
        return torch.addmm(bias, rows, weight.T)
    found = torch.addmm(bias, rows.index_select(0, words), weight.T)
    spread = found.new_empty(rows.shape[0], found.shape[1])
    spread[words] = found
    return spread


def encode(encoder, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """easyfirst.model.encoder.BiLSTMEncoder.forward without gradients: ``(B, L, 2H)``, zeros on padding."""
    lengths = _numpy(mask.sum(1))
    size, length = mask.shape
    words = _words(mask)
    for k, lstm in enumerate(encoder.layers):
        if k:
            x = encoder.between(x)
        directions = ("", "_reverse")
        weight = torch.cat([getattr(lstm, f"weight_ih_l0{d}") for d in directions])  # (2·4H, D)
        bias = torch.cat(
            [getattr(lstm, f"bias_ih_l0{d}") + getattr(lstm, f"bias_hh_l0{d}") for d in directions]
        )
        # every step's input part, both directions in one product: (2, B, L, 4H)
        both = _on_words(words, x.reshape(size * length, -1), weight, bias)
        inputs = both.view(size, length, 2, -1).permute(2, 0, 1, 3)
        w_hh_t = torch.stack([getattr(lstm, f"weight_hh_l0{d}").T for d in directions])  # (2, H, 4H)
        inputs = _numpy(inputs)
        out = np.zeros((size, length, 2 * lstm.hidden_size), inputs.dtype)
        tag_kernels().bilstm_tag(inputs, _numpy(w_hh_t), lengths, inputs.dtype == np.float32, out)
        x = torch.from_numpy(out)
    return x


def decode(decoder, states, mask, steps, score_words, beyond_length):
    """easyfirst.model.sketch.SketchDecoder.forward without gradients: Sᴺ ``(B, L, D_s)`` and the
    history ``(B, N_max, L)``, each sentence running its own N_b steps over its own words."""
    size, length = mask.shape
    lengths = mask.sum(1)
    n_steps = lengths  # N_b as easyfirst.model.sketch.sentence_steps: L_b, N, or min(N, L_b)
    if steps is not None:
        n_steps = torch.full_like(lengths, steps) if beyond_length else lengths.clamp_max(steps)
    total = int(n_steps.max()) if size else 0
    half = decoder.input_half  # Eq. 1's H half, (B, L, O), over the windows of the words only
    cols = window_columns(states.transpose(1, 2), half.weight.shape[-1])
    fixed = _numpy(_on_words(_words(mask), cols, flat_weight(half.weight), half.bias).view(size, length, -1))
    weight_t = _numpy(flat_weight(decoder.sketch_half.weight).T)  # (K·D_s, O)
    v = _numpy(decoder.v.weight[0])
    kind = decoder.attention
    if kind.scores == "output":  # hard attention: the output layer's parts
        word_scores = (_numpy(score_words.fixed), _numpy(score_words.weight.T))
    else:
        word_scores = (np.empty((0, 0, 0), fixed.dtype), np.empty((0, 0), fixed.dtype))
    settings = (
        decoder.full_state,
        float(decoder.temperature),
        float(decoder.coverage_penalty),
        KINDS[kind.name].code,
    )
    sketch = np.zeros((size, length, decoder.sketch_dim), fixed.dtype)
    history = np.zeros((size, total, length), fixed.dtype)
    done = np.empty(size, bool)
    lengths, n_steps = _numpy(lengths), _numpy(n_steps)
    tag_kernels().decoder_tag(
        fixed,
        weight_t,
        v,
        lengths,
        n_steps,
        *settings,
        _EXP_RANGE,
        fixed.dtype == np.float32,
        *word_scores,
        sketch,
        history,
        done,
    )
    for b in np.flatnonzero(~done):  # a score beyond csoftmax's exp range: the NumPy loop's log space
        n, k = lengths[b], n_steps[b]
        scored = None if kind.scores != "output" else (word_scores[0][b, :n], word_scores[1])
        found, alpha, _ = lean.lean_loop(
            fixed[b, :n], weight_t, v, int(k), *settings, store=False, word_scores=scored
        )
        sketch[b, :n], history[b, :k, :n] = found, alpha
    return torch.from_numpy(sketch), torch.from_numpy(history)
