"""The window affine map of Eq. 1–2 as one matrix product: a faster ``conv1d`` for the sketch decoder.

``window_affine(x, W, b)`` equals ``torch.nn.functional.conv1d(x, W, b, padding=w)`` for an odd width
K = 2w + 1: output word i is ``W · concat(x_{i−w}, …, x_{i+w}) + b``, zeros past the edges (Eq. 1).

Why not ``conv1d``: the decoder calls it once per sketch step on small inputs (16 sentences × ~25
words × 50 channels), where oneDNN's convolution spends much of its time outside the arithmetic
(benchmarks/speed/decoder.py measures the difference). Here the windows are copied once into a ``(B·L, K·C)`` matrix and everything is a single GEMM per direction:

- forward:  out = cols · Wᵀ (+ b),
- backward: dW = doutᵀ · cols, dcols = dout · W, then dx_j = Σ_k dcols[j − k + w, k] (K shifted adds).

The weight keeps ``nn.Conv1d``'s layout ``(O, C, K)``, so model files are unchanged.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def window_view(padded: torch.Tensor, width: int) -> torch.Tensor:
    """The windows of a zero-padded ``(…, L + 2w, C)`` as a view ``(…, L, K, C)``: [i, k] = row i + k.

    Copied into a ``(…, L, K, C)`` buffer, the C-vectors stay contiguous (copying the ``(…, L, C, K)``
    order of ``unfold`` itself was 5× slower here).
    """
    return padded.unfold(-2, width, 1).transpose(-1, -2)


def window_columns(x: torch.Tensor, width: int) -> torch.Tensor:
    """``x`` ``(B, C, L)`` → the windows ``(B·L, K·C)``: row (b, i) is concat(x_{i−w..i+w}), zero-padded."""
    size, channels, length = x.shape
    pad = width // 2
    padded = F.pad(x.transpose(1, 2), (0, 0, pad, pad))  # (B, L + 2w, C)
    return window_view(padded, width).reshape(size * length, width * channels)


def flat_weight(weight: torch.Tensor) -> torch.Tensor:
    """``(O, C, K)`` → ``(O, K·C)`` in the column order of :func:`window_columns`."""
    return weight.transpose(1, 2).reshape(weight.shape[0], -1)


class WindowAffineFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        size, _, length = x.shape
        out_channels, channels, width = weight.shape
        cols = window_columns(x, width)
        flat = flat_weight(weight)
        out = cols @ flat.t() if bias is None else torch.addmm(bias, cols, flat.t())
        ctx.save_for_backward(cols, flat)
        ctx.shape = (size, channels, length, width)
        ctx.has_bias = bias is not None
        return out.view(size, length, out_channels).transpose(1, 2)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        cols, flat = ctx.saved_tensors
        size, channels, length, width = ctx.shape
        dout = grad.transpose(1, 2).reshape(size * length, -1)  # (B·L, O)
        dx = dweight = dbias = None
        if ctx.needs_input_grad[0]:
            dcols = (dout @ flat).view(size, length, width, channels)
            pad = width // 2
            padded = dcols.new_zeros(size, length + 2 * pad, channels)
            for k in range(width):  # window slot k of word i read x_{i+k−w}, i.e. padded row i + k
                padded[:, k : k + length] += dcols[:, :, k]
            dx = padded[:, pad : pad + length].transpose(1, 2)
        if ctx.needs_input_grad[1]:
            dweight = (dout.t() @ cols).view(-1, width, channels).transpose(1, 2)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            dbias = dout.sum(0)
        return dx, dweight, dbias


def window_affine(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``conv1d(x, weight, bias, padding=K // 2)`` for odd K, as one GEMM (see the module docstring).

    Args:
        x: ``(B, C, L)``.
        weight: ``(O, C, K)``, K odd.
        bias: ``(O,)`` or None.

    Returns:
        ``(B, O, L)`` (a transposed view of a ``(B, L, O)`` tensor).
    """
    if weight.shape[-1] % 2 != 1:
        raise ValueError(f"window_affine needs an odd window width, not {weight.shape[-1]}")
    return WindowAffineFunction.apply(x, weight, bias)


class WindowConv1d(nn.Conv1d):
    """``nn.Conv1d`` with ``padding = K // 2`` (Eq. 1's zero-padded window), computed by :func:`window_affine`.

    Same parameters and ``state_dict`` as the ``nn.Conv1d`` it replaces. Input ``(B, C, L)`` → ``(B, O, L)``.
    """

    def __init__(self, in_channels: int, out_channels: int, width: int, bias: bool = True):
        if width % 2 != 1:
            raise ValueError(f"WindowConv1d needs an odd window width, not {width}")
        super().__init__(in_channels, out_channels, width, padding=width // 2, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return window_affine(x, self.weight, self.bias)
