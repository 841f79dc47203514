"""Differentiable transforms: the constrained softmax, and the attention registry (easyfirst.ops.attention)."""

from easyfirst.ops.constrained import csoftmax, csparsemax

__all__ = ["csoftmax", "csparsemax"]
