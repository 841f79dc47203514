"""The BiLSTM of :mod:`easyfirst.backends.lean` for one sentence, in NumPy: both directions of a
bidirectional ``nn.LSTM`` layer stepped together, and backpropagation through time by hand. ``loops``:
the compiled time loops (:mod:`easyfirst.backends.kernels`; backend ``numba`` passes them), or None
for the NumPy ones; lean.py wraps these in an autograd Function.
"""

from __future__ import annotations

import numpy as np


def pair(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """np.stack([first, second]) for two arrays of one shape, without np.stack's fixed cost (~15 µs)."""
    both = np.empty((2, *first.shape), first.dtype)
    both[0], both[1] = first, second
    return both


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """σ(x) = (1 + tanh(x/2)) / 2, which neither overflows nor warns for large |x|."""
    return np.tanh(x * 0.5) * 0.5 + 0.5


def lstm_forward(
    x: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray, bias: np.ndarray, loops=None
) -> tuple[np.ndarray, dict]:
    """Both directions of a bidirectional ``nn.LSTM`` layer (gates i, f, g, o) over the rows of ``x``
    ``(L, D)``, stepped together: direction 0 reads x forward, direction 1 backward. ``w_ih`` ``(2, 4H,
    D)``, ``w_hh`` ``(2, 4H, H)``, ``bias`` ``(2, 4H)`` (the two biases summed). Returns the states
    ``(2, L, H)`` in reading order and what :func:`lstm_backward` needs. ``loops``: the compiled time loop, else
    the NumPy one."""
    length, hidden = x.shape[0], w_hh.shape[2]
    inputs = pair(x @ w_ih[0].T, x[::-1] @ w_ih[1].T) + bias[:, None]  # (2, L, 4H), every step's input part
    w_hh_t = np.ascontiguousarray(w_hh.transpose(0, 2, 1))  # (2, H, 4H)
    gates = np.empty_like(inputs)  # i, f, o after σ and g after tanh
    cells = np.zeros((2, length + 1, hidden), x.dtype)  # c_0 = 0, c_1..c_L
    states = np.zeros((2, length + 1, hidden), x.dtype)  # h_0 = 0, h_1..h_L
    tanh_cells = np.empty((2, length, hidden), x.dtype)
    if loops is not None:
        loops.lstm_forward(inputs, w_hh_t, gates, cells, states, tanh_cells)
    else:
        for t in range(length):
            a = inputs[:, t] + np.matmul(states[:, t, None], w_hh_t)[:, 0]
            gate = gates[:, t]
            gate[:] = _sigmoid(a)
            gate[:, 2 * hidden : 3 * hidden] = np.tanh(a[:, 2 * hidden : 3 * hidden])
            cell = cells[:, t + 1]
            np.multiply(gate[:, hidden : 2 * hidden], cells[:, t], out=cell)  # f ⊙ c_{t−1}
            cell += gate[:, :hidden] * gate[:, 2 * hidden : 3 * hidden]  # + i ⊙ g
            np.tanh(cell, out=tanh_cells[:, t])
            np.multiply(gate[:, 3 * hidden :], tanh_cells[:, t], out=states[:, t + 1])  # o ⊙ tanh(c)
    saved = {"x": x, "gates": gates, "cells": cells, "tanh_cells": tanh_cells, "states": states}
    return states[:, 1:], saved


def lstm_backward(
    saved: dict, grad: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray, loops=None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Backpropagation through time for :func:`lstm_forward`, both directions together, from the
    gradient of the states ``(2, L, H)`` (reading order): dx ``(L, D)``, dW_ih, dW_hh and d bias (the
    same for both of ``nn.LSTM``'s biases), stacked by direction."""
    gates, cells, tanh_cells, states = saved["gates"], saved["cells"], saved["tanh_cells"], saved["states"]
    _, length, hidden = grad.shape
    d_gates = np.empty_like(gates)
    if loops is not None:
        loops.lstm_backward(np.ascontiguousarray(grad), gates, cells, tanh_cells, w_hh, d_gates)
    else:
        d_state = np.zeros((2, hidden), grad.dtype)
        d_cell = np.zeros((2, hidden), grad.dtype)
        for t in range(length - 1, -1, -1):
            gate, tanh_cell = gates[:, t], tanh_cells[:, t]
            i, f = gate[:, :hidden], gate[:, hidden : 2 * hidden]
            g, o = gate[:, 2 * hidden : 3 * hidden], gate[:, 3 * hidden :]
            d_h = grad[:, t] + d_state
            d_cell += d_h * o * (1 - tanh_cell * tanh_cell)
            d = d_gates[:, t]
            d[:, :hidden] = d_cell * g * i * (1 - i)
            d[:, hidden : 2 * hidden] = d_cell * cells[:, t] * f * (1 - f)
            d[:, 2 * hidden : 3 * hidden] = d_cell * i * (1 - g * g)
            d[:, 3 * hidden :] = d_h * tanh_cell * o * (1 - o)
            d_state = np.matmul(d[:, None], w_hh)[:, 0]
            d_cell *= f
    x = saved["x"]
    d_x = d_gates[0] @ w_ih[0] + (d_gates[1] @ w_ih[1])[::-1]
    d_w_ih = pair(d_gates[0].T @ x, d_gates[1].T @ x[::-1])
    d_w_hh = np.matmul(d_gates.transpose(0, 2, 1), states[:, :-1])
    return d_x, d_w_ih, d_w_hh, d_gates.sum(1)
