"""The GEMM window map equals torch's conv1d (the straightforward path it replaces), values and gradients."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from easyfirst.model.sketch import SketchDecoder
from easyfirst.ops.window import WindowConv1d, window_affine


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("shape", [(1, 1, 1, 1, 1), (3, 4, 7, 5, 5), (2, 3, 2, 4, 5), (4, 6, 9, 3, 3)])
def test_equals_conv1d_in_value_and_gradient(shape, with_bias):
    size, channels, length, out_channels, width = shape
    g = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(size, channels, length, generator=g, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(out_channels, channels, width, generator=g, dtype=torch.float64, requires_grad=True)
    bias = (
        torch.randn(out_channels, generator=g, dtype=torch.float64, requires_grad=True) if with_bias else None
    )
    expected = F.conv1d(x, weight, bias, padding=width // 2)
    got = window_affine(x, weight, bias)
    torch.testing.assert_close(got, expected, atol=1e-12, rtol=0)
    grad = torch.randn(expected.shape, generator=g, dtype=torch.float64)
    inputs = (x, weight) + ((bias,) if with_bias else ())
    torch.testing.assert_close(
        torch.autograd.grad(got, inputs, grad),
        torch.autograd.grad(expected, inputs, grad),
        atol=1e-12,
        rtol=0,
    )


def test_gradcheck_in_float64():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 6, generator=g, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(4, 3, 5, generator=g, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(4, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(window_affine, (x, weight, bias))


def test_module_keeps_the_conv1d_state_dict_and_rejects_even_widths():
    conv = torch.nn.Conv1d(5, 7, 5, padding=2)
    window = WindowConv1d(5, 7, 5)
    window.load_state_dict(conv.state_dict())  # same keys and shapes: old model files load
    x = torch.randn(3, 5, 11)
    torch.testing.assert_close(window(x), conv(x), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError):
        WindowConv1d(5, 7, 4)


def test_decoder_with_window_maps_equals_decoder_with_conv1d():
    torch.manual_seed(0)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=3).double()
    states = torch.randn(3, 7, 6, dtype=torch.float64)
    mask = torch.tensor([[True] * 7, [True] * 4 + [False] * 3, [True] * 2 + [False] * 5])
    states = states * mask.unsqueeze(-1)
    sketch, attention = decoder(states, mask)
    for name in ("input_half", "sketch_half"):  # the straightforward nn.Conv1d, same weights
        fast = getattr(decoder, name)
        conv = torch.nn.Conv1d(fast.in_channels, fast.out_channels, 5, padding=2, bias=fast.bias is not None)
        conv.load_state_dict(fast.state_dict())
        setattr(decoder, name, conv.double())
    slow_sketch, slow_attention = decoder(states, mask)
    torch.testing.assert_close(sketch, slow_sketch, atol=1e-12, rtol=0)
    torch.testing.assert_close(attention, slow_attention, atol=1e-12, rtol=0)
