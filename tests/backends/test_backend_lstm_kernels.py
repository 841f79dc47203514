"""The one-sentence BiLSTM of the CPU backends (easyfirst/backends/lstm.py) against torch's nn.LSTM and
autograd in float64, its NumPy time loops against the compiled ones (easyfirst/backends/kernels.py), and
the compiled attention rows against slow references (tests/reference.py) and a hand count."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import extra
from easyfirst.backends.lstm import lstm_backward, lstm_forward, pair
from reference import slow_csoftmax

extra("numba", "fast")
from easyfirst.backends import kernels  # noqa: E402

LENGTH, DIM, HIDDEN = 5, 3, 4


@pytest.fixture
def layer():
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(DIM, HIDDEN, bidirectional=True, batch_first=True).double()
    x = torch.randn(LENGTH, DIM, dtype=torch.float64)
    weights = {
        "w_ih": np.stack([lstm.weight_ih_l0.detach().numpy(), lstm.weight_ih_l0_reverse.detach().numpy()]),
        "w_hh": np.stack([lstm.weight_hh_l0.detach().numpy(), lstm.weight_hh_l0_reverse.detach().numpy()]),
        "bias": np.stack(
            [
                (lstm.bias_ih_l0 + lstm.bias_hh_l0).detach().numpy(),
                (lstm.bias_ih_l0_reverse + lstm.bias_hh_l0_reverse).detach().numpy(),
            ]
        ),
    }
    return lstm, x, weights


def test_pair_stacks_two_arrays():
    a, b = np.arange(6.0).reshape(2, 3), -np.arange(6.0).reshape(2, 3)
    assert np.array_equal(pair(a, b), np.stack([a, b]))


@pytest.mark.parametrize("loops", [None, kernels], ids=["numpy", "numba"])
def test_the_forward_is_torchs_bidirectional_lstm(layer, loops):
    lstm, x, w = layer
    states, _ = lstm_forward(x.numpy(), w["w_ih"], w["w_hh"], w["bias"], loops=loops)
    expected = lstm(x[None])[0][0]  # (L, 2H): forward states, then backward ones, by word
    assert states.shape == (2, LENGTH, HIDDEN)
    np.testing.assert_allclose(states[0], expected[:, :HIDDEN].detach().numpy(), rtol=1e-10, atol=1e-12)
    # direction 1 reads backward: its states in reading order are the words from the last
    np.testing.assert_allclose(states[1][::-1], expected[:, HIDDEN:].detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loops", [None, kernels], ids=["numpy", "numba"])
def test_the_backward_is_autograds(layer, loops):
    lstm, x, w = layer
    x = x.clone().requires_grad_(True)
    out = lstm(x[None])[0][0]
    grad = torch.randn_like(out)
    (out * grad).sum().backward()
    states, saved = lstm_forward(x.detach().numpy(), w["w_ih"], w["w_hh"], w["bias"], loops=loops)
    g = grad.numpy()
    grad_states = pair(g[:, :HIDDEN], g[::-1, HIDDEN:].copy())
    d_x, d_w_ih, d_w_hh, d_bias = lstm_backward(saved, grad_states, w["w_ih"], w["w_hh"], loops=loops)
    close = {"rtol": 1e-9, "atol": 1e-11}
    np.testing.assert_allclose(d_x, x.grad.numpy(), **close)
    np.testing.assert_allclose(d_w_ih[0], lstm.weight_ih_l0.grad.numpy(), **close)
    np.testing.assert_allclose(d_w_ih[1], lstm.weight_ih_l0_reverse.grad.numpy(), **close)
    np.testing.assert_allclose(d_w_hh[1], lstm.weight_hh_l0_reverse.grad.numpy(), **close)
    np.testing.assert_allclose(d_bias[0], lstm.bias_ih_l0.grad.numpy(), **close)
    np.testing.assert_allclose(d_bias[1], lstm.bias_hh_l0_reverse.grad.numpy(), **close)


def rows(function, *inputs):
    length = inputs[0].shape[0]
    alpha, free = np.empty(length), np.empty(length, dtype=np.bool_)
    answer = function(*inputs, alpha, free)
    return answer, alpha, free


def test_the_compiled_csoftmax_row_is_the_slow_solvers():
    z, u = np.array([2.0, 0.5, -1.0, 1.0]), np.array([0.3, 1.0, 1.0, 0.9])
    done, alpha, free = rows(kernels.csoftmax_row, z, u, 700.0)
    assert done
    np.testing.assert_allclose(alpha, slow_csoftmax(list(z), list(u)), rtol=1e-12)
    assert list(free) == [False, True, True, True]  # the first word is held at its bound 0.3
    assert not rows(kernels.csoftmax_row, np.array([800.0, 0.0]), np.array([1.0, 1.0]), 700.0)[0]
    _, tight, _ = rows(kernels.csoftmax_row, z, np.array([0.25, 0.25, 0.25, 0.25]), 700.0)
    assert list(tight) == [0.25] * 4  # Σu = 1: every bound is tight


def test_the_compiled_softmax_and_sparsemax_rows_by_hand():
    _, alpha, free = rows(kernels.softmax_row, np.array([0.0, np.log(3.0)]))
    np.testing.assert_allclose(alpha, [0.25, 0.75])
    assert free.all()
    # sparsemax([1, 0.5, -1]): τ = 0.25, α = (0.75, 0.25, 0)
    _, alpha, free = rows(kernels.sparsemax_row, np.array([1.0, 0.5, -1.0]))
    np.testing.assert_allclose(alpha, [0.75, 0.25, 0.0])
    assert list(free) == [True, True, False]
