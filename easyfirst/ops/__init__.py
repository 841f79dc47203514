"""Differentiable transforms: the constrained softmax, and the attention registry (easyfirst.ops.attention;
its names, without torch: easyfirst.ops.kinds)."""

from __future__ import annotations

__all__ = ["csoftmax", "csparsemax"]


def __getattr__(name: str):
    # imported when first asked for, so that easyfirst.ops.kinds is read without importing torch
    if name in __all__:
        from easyfirst.ops import constrained

        return getattr(constrained, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
