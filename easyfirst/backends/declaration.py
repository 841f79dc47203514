"""What a backend is: a name, the parts of the model it computes (the **encoder**: the BiLSTM layers,
with the dropout between them; the **decoder**: the sketch steps of Alg. 2), and, for each, the values
it supports of each setting of the part's *workload* (below). A setting it does not declare is one it
was not written for: the chooser (easyfirst.backends.chooser) passes it over, so a new setting runs on
the reference until a backend is ported and declares it. Torch-free: the declarations are data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from easyfirst.ops.kinds import KINDS

ANY = "any value"  # a declared setting with no restriction


@dataclass(frozen=True)
class AtMost:
    """A declared setting's values up to ``limit`` (a size where a backend stops being the faster)."""

    limit: int

    def __contains__(self, value) -> bool:
        return isinstance(value, int) and value <= self.limit

    def __str__(self) -> str:
        return f"at most {self.limit}"


# The revision of the reference's equations, per part (the encoder: easyfirst/model/encoder.py; the
# decoder: easyfirst/model/sketch.py with what it calls in easyfirst/ops): a change to what the reference
# computes bumps it, and every fast backend declines the part until it is ported and declares the new
# number (docs/architecture.md, "How to add …"; tests/backends/test_backends.py asks when the code changes).
REVISIONS = {"encoder": 1, "decoder": 1}

# A part's workload: the settings its computation reads, with their values: its revision (above), then
# ``[model]`` keys as a config file writes them, read flat from the model's settings whichever part holds
# them (named here, not taken from ``ModelConfig.encoder``, ``.decoder``: a part's sizes are read from its
# modules' weights and change no computation, while the model's name and the dropout kind, kept outside
# the parts, do), then what the batch adds (_BATCH). A new setting goes here. ``transformer``
# (model.transformer, a name or None): a backend that computes any of the embedder's parts itself, or
# that was not checked with a transformer's vectors in its input, declares {None}.
_BATCH = (
    "sentences",
    "device",
    "dtype",
    "training",
)  # sentences: ONE or MANY (below); training: gradients wanted
ENCODER_SETTINGS = ("revision", "encoder_layers", "hidden_dim", "dropout_kind", *_BATCH, "transformer")
DECODER_SETTINGS = (
    "revision",
    "model",
    "attention",
    "sketch_steps",
    "steps_beyond_length",
    "attention_temperature",
    "coverage_penalty",
    *_BATCH,
)
# the attention transformations the compiled path computes (names of easyfirst.ops.kinds.KINDS), and the
# codes its loops take (easyfirst.backends.rows), read from that table by name
_ROWS = ("csoftmax", "sparsemax", "softmax", "uniform", "left-to-right", "right-to-left", "hard")
ROW_ATTENTIONS = frozenset(_ROWS)
CSOFTMAX, SPARSEMAX, SOFTMAX, UNIFORM, LEFT_TO_RIGHT, RIGHT_TO_LEFT, HARD = (KINDS[n].code for n in _ROWS)
PRESCRIBED = (UNIFORM, LEFT_TO_RIGHT, RIGHT_TO_LEFT)
LEARNED = tuple(KINDS[n].code for n in _ROWS if KINDS[n].learned)  # gradients reach Eq. 2 through these

# how the batch is described in a workload's "sentences": one unpadded sentence, or anything else
ONE, MANY = "one", "many"


@dataclass(frozen=True)
class Backend:
    """A named way of computing the model's encoder and/or decoder, ``what`` it computes with in words
    (for the one line the verbs print).

    ``encoder(module, x, mask)`` → states and ``decoder(module, states, mask, steps, score_words,
    beyond_length)`` → (sketch, attention) take the model's own modules (easyfirst.model.encoder,
    easyfirst.model.sketch) and compute what their ``forward`` computes; None: this backend does not
    compute that part. ``encoder_supports`` and ``decoder_supports`` map each setting it was written for
    to the values it supports (a set, or :data:`ANY`). ``missing(workload)`` says why it cannot run this
    workload in this install (None when it can)."""

    name: str
    what: str
    encoder: Callable | None = None
    decoder: Callable | None = None
    encoder_supports: Mapping[str, Any] = field(default_factory=dict)
    decoder_supports: Mapping[str, Any] = field(default_factory=dict)
    missing: Callable[[Mapping[str, Any]], str | None] = lambda workload: None

    def refuses(self, part: str, workload: Mapping[str, Any]) -> str | None:
        """Why this backend cannot compute ``part`` ("encoder" or "decoder", one it computes) for
        ``workload``, in words; None when it can."""
        supports = self.encoder_supports if part == "encoder" else self.decoder_supports
        for key, value in workload.items():
            if key not in supports:
                return f"does not declare {key}"
            allowed = supports[key]
            if key == "revision" and value not in allowed:
                computes = " and ".join(map(str, sorted(allowed)))
                return f"not ported to revision {value} of the reference's {part} (computes {computes})"
            if isinstance(allowed, AtMost) and value not in allowed:
                return f"{key} = {value} ({allowed})"
            if allowed is not ANY and value not in allowed:
                listed = (
                    " or ".join(sorted(map(str, allowed))) + " only" if len(allowed) <= 3 else "not supported"
                )
                return f"{key} = {value} ({listed})"
        return self.missing(workload)  # last: finding out may import the backend (Numba: 0.4 s)
