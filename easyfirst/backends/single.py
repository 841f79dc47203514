"""Backends ``numpy`` and ``numba``: one unpadded sentence on the CPU (the paper's regime of one sentence
per update, and tagging a single sentence), the BiLSTM layer by layer and the sketch loop in NumPy
(easyfirst.backends.lean), with ``numba`` passing the compiled time loops (easyfirst.backends.kernels,
the extra ``fast``) in training.

In tagging (no gradients) ``numba`` takes any batch on the CPU, each sentence on its own rows in the
compiled loops of easyfirst.backends.sentencewise, once they are loaded in the process
(easyfirst.backends.chooser.load_tagging_loops: ``easyfirst serve`` loads them at its start, and so
does forcing the backend with ``--backend numba``). Until then the chooser passes it over, without
importing Numba: Numba compiles the loops on their first use after an install (30–45 s on the 2-core
machine of docs/studies/serve-load.md), which a first ``easyfirst tag --text`` should not wait for, and importing it
costs about 0.4 s.
"""

from __future__ import annotations

import torch
from threadpoolctl import threadpool_limits

from easyfirst.backends import lean, sentencewise
from easyfirst.backends.declaration import ANY, MANY, ONE, Backend
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


def _wants_gradients(module, x: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and (x.requires_grad or any(p.requires_grad for p in module.parameters()))


def _numba_encoder(encoder, x, mask):
    """Backend ``numba``'s encoder: one sentence with gradients through the training kernels, else any
    batch through the tagging loops (easyfirst.backends.sentencewise)."""
    if not _wants_gradients(encoder, x):
        return sentencewise.encode(encoder, x, mask)
    if mask.shape[0] > 1:  # gradients through a batch (not a workload it is chosen for): the reference
        return encoder(x, mask)
    return _TRAINING_ENCODER(encoder, x, mask)


def _numba_decoder(decoder, states, *arguments):
    """Backend ``numba``'s decoder, as :func:`_numba_encoder`."""
    if not _wants_gradients(decoder, states):
        return sentencewise.decode(decoder, states, *arguments)
    if states.shape[0] > 1:
        return decoder(states, *arguments)
    return _TRAINING_DECODER(decoder, states, *arguments)


def _numba_missing(workload) -> str | None:
    """Why ``numba`` cannot run: Numba is not installed, or (tagging) its loops are not loaded yet."""
    if workload.get("training") is False and not sentencewise.loaded():
        return "its tagging loops are not loaded (easyfirst serve and --backend numba load them)"
    return None if lean.kernels() else "Numba is not installed (pip install 'easyfirst[fast]')"


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
    "transformer": {None},
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
_TRAINING_ENCODER, _TRAINING_DECODER = _encoder(lean.kernels), _decoder(lean.kernels)
_ANY_BATCH = {"sentences": {ONE, MANY}, "training": ANY}
NUMBA = Backend(  # one sentence in training, any batch in tagging, on the CPU: loops compiled by Numba
    "numba",
    encoder=_numba_encoder,
    decoder=_numba_decoder,
    encoder_supports=_ENCODER | _FLOATS | _ANY_BATCH,
    decoder_supports=_DECODER | _FLOATS | _ANY_BATCH,
    together=(("sentences", MANY, "training", {False}),),
    missing=_numba_missing,
    prepare=_limit_blas(2),
)
