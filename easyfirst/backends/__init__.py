"""Named backends: the model's encoder and decoder computed faster for some settings, and one chooser
(:func:`easyfirst.backends.chooser.choose_backend`). The model (easyfirst.model) is the reference; what
each backend computes, how the chooser picks and how an equation is changed in both places:
docs/architecture.md, "Backends" and "Where the paper's equations live".

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
