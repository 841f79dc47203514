"""Differentiable transforms: the constrained softmax, and the attention registry (easyfirst.ops.attention)."""

from easyfirst.ops.constrained import csoftmax

__all__ = ["csoftmax"]
