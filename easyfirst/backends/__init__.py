"""Named backends: the model's encoder and decoder computed faster for some settings, and one chooser.

The model (easyfirst.model) is the reference and the specification: ``nn.LSTM`` in
:mod:`easyfirst.model.encoder`, the step loop of Alg. 2 in :mod:`easyfirst.model.sketch`, for every
setting. A backend computes the same function as a part of it, for the settings it declares
(:mod:`~easyfirst.backends.declaration`):

- ``numba``: the compiled CPU path (:mod:`~easyfirst.backends.compiled` on the Numba loops of
  :mod:`~easyfirst.backends.kernels` and :mod:`~easyfirst.backends.rows`): the BiLSTM and the sketch
  loop, one forward for training and tagging and one backward; any batch on the CPU, each sentence on
  its own rows (its BiLSTM up to 64 units per direction);
- ``reference``: the model's own modules, for every setting, dtype and device: what runs on the GPU,
  in bfloat16 and float16, and BiLSTMs wider than numba's (in tagging on the CPU the encoder runs each
  direction over the padded batch through torch's LSTM, easyfirst.model.encoder).

These are the two implementations of each equation: a change to one is made in both and proved by the
float64 equivalence tests.

:func:`easyfirst.backends.chooser.choose_backend` picks, for each batch, the first of these (in that order)
that declares the batch's settings, and says why it passed over the others; ``--backend NAME`` forces
one (the reference runs what it does not support). What keeps them equal: tests/backends/test_compiled.py
compares numba's outputs and gradients with the reference's in float64; tests/backends/test_backends.py
the choice.

To change an equation: change the reference; then either port each backend or remove the setting value
from its declaration so that the chooser passes it over until it is ported. A new setting of the encoder
or decoder goes into ``ENCODER_SETTINGS`` / ``DECODER_SETTINGS`` (declaration.py): every fast backend
declines it until it declares it.

This module imports no torch: the names are read by the config and ``--help``.
"""

# the backends by name, in the chooser's order of preference (easyfirst.backends.chooser.BACKENDS)
NAMES = ("numba", "reference")
CHOICES = ("auto", *NAMES)  # what --backend and Tagger.backend take; auto: the chooser's pick


def check_backend(name: str) -> str:
    """``name`` if it is one of :data:`CHOICES`, else a ValueError that lists them."""
    if name not in CHOICES:
        raise ValueError(f"unknown backend {name!r}: one of {', '.join(CHOICES)}")
    return name
