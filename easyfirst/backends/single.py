"""Backends ``numpy`` and ``numba``: one unpadded sentence on the CPU (the paper's regime of one sentence
per update, and tagging a single sentence), the BiLSTM layer by layer and the sketch loop in NumPy
(easyfirst.backends.lean), with ``numba`` passing the compiled time loops (easyfirst.backends.kernels,
the extra ``fast``) in training.

Tagging never takes ``numba``: Numba compiles the kernels on their first use after an install (about
30 s), which a first ``easyfirst tag --text`` should not wait for; the NumPy loops tag as fast.
"""

from __future__ import annotations

import torch
from threadpoolctl import threadpool_limits

from easyfirst.backends import lean
from easyfirst.backends.declaration import ANY, ONE, Backend
from easyfirst.backends.rows import ROW_ATTENTIONS
from easyfirst.ops.kinds import KINDS

# nn.LSTM's parameters in the order lean_bilstm takes them: forward direction, then reverse
LSTM_WEIGHTS = [
    f"{kind}_{part}_l0{direction}"
    for direction in ("", "_reverse")
    for kind, part in (("weight", "ih"), ("weight", "hh"), ("bias", "ih"), ("bias", "hh"))
]


def _encoder(loops):
    def encode(encoder, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """easyfirst.model.encoder.BiLSTMEncoder.forward for one sentence ``(1, L, D)``, layer by layer."""
        for k, lstm in enumerate(encoder.layers):
            if k:
                x = encoder.between(x)
            x = lean.lean_bilstm(x[0], *(getattr(lstm, name) for name in LSTM_WEIGHTS), loops=loops())[None]
        return x

    return encode


def _decoder(loops):
    def decode(decoder, states, mask, steps, score_words, beyond_length):
        """easyfirst.model.sketch.SketchDecoder.forward for one sentence ``(1, L, D_h)``."""
        length = mask.shape[1]
        if not length:  # nothing to attend to: the reference's empty result
            return decoder(states, mask, steps, score_words, beyond_length)
        steps = length if steps is None else steps if beyond_length else min(steps, length)
        kind = decoder.attention
        settings = (decoder.full_state, decoder.temperature, decoder.coverage_penalty, KINDS[kind.name].code)
        return lean.lean_decoder(
            states,
            decoder.input_half.weight,
            decoder.input_half.bias,
            decoder.sketch_half.weight,
            decoder.v.weight,
            steps,
            settings,
            (score_words.fixed, score_words.weight) if kind.scores == "output" else None,
            loops=loops(),
        )

    return decode


def _limit_blas(level: int):
    """NumPy's BLAS (and, for the kernels, SciPy's) limited to one thread for the rest of the process:
    the products here are tiny, and a multi-threaded OpenBLAS that finds the other cores busy waits for
    them (one sentence per update ran 7× slower on this project's 2-core machine with another job on the
    second core)."""

    def prepare():
        if level == 2:
            lean.kernels()  # SciPy's BLAS, loaded with the kernels, must be there for the limit to reach it
        threadpool_limits(1, user_api="blas")

    return prepare


_ENCODER = {
    "revision": {1},
    "encoder_layers": ANY,
    "dropout_kind": ANY,
    "sentences": {ONE},
    "device": {"cpu"},
}
_DECODER = {
    "revision": {1},
    "model": {"nef-f", "nef-s"},
    "attention": ROW_ATTENTIONS,
    "sketch_steps": ANY,
    "steps_beyond_length": ANY,
    "attention_temperature": ANY,
    "coverage_penalty": ANY,
    "sentences": {ONE},
    "device": {"cpu"},
}
_FLOATS = {"dtype": {"float32", "float64"}}

NUMPY = Backend(  # one sentence on the CPU in NumPy
    "numpy",
    encoder=_encoder(lambda: None),
    decoder=_decoder(lambda: None),
    encoder_supports=_ENCODER | _FLOATS | {"training": ANY},
    decoder_supports=_DECODER | _FLOATS | {"training": ANY},
    prepare=_limit_blas(1),
)
NUMBA = Backend(  # one sentence on the CPU, the time loops compiled by Numba (in training)
    "numba",
    encoder=_encoder(lean.kernels),
    decoder=_decoder(lean.kernels),
    encoder_supports=_ENCODER | _FLOATS | {"training": {True}},
    decoder_supports=_DECODER | _FLOATS | {"training": {True}},
    missing=lambda: None if lean.kernels() else "Numba is not installed (pip install 'easyfirst[fast]')",
    prepare=_limit_blas(2),
)
