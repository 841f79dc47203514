"""Exactness of the constrained softmax: an independent slow solver, gradcheck, Prop. 1 against autograd
of the closed form, invariants, extremes, and the evenness of iterated csoftmax attention."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from easyfirst.ops import constrained, csoftmax, csparsemax
from reference import (
    assert_agrees_with_slow_solver,
    assert_budgeted_invariants,
    random_rows,
    slow_csoftmax,
    slow_csparsemax,
)


@pytest.mark.parametrize("spread", [1.0, 10.0, 100.0, 300.0])
def test_agrees_with_slow_solver_on_thousands_of_rows(spread):
    for length in (1, 2, 5, 13):
        z, u = random_rows(1000, length, spread, seed=length + int(spread))
        assert_agrees_with_slow_solver(slow_csoftmax, csoftmax(z, u), z, u, 1e-10)


def test_invariants():
    z, u = random_rows(4000, 9, 20.0, seed=7)
    assert_budgeted_invariants(csoftmax, lambda z: torch.softmax(z, -1), z, u)


def closed_form(z: torch.Tensor, u: torch.Tensor, free: torch.Tensor) -> torch.Tensor:
    """α = exp(z_i)(1 − Σ_{∉A} u)/Σ_A exp(z) on A, u elsewhere: differentiable by autograd for fixed A."""
    budget = 1 - torch.where(free, 0, u).sum(-1, keepdim=True)
    weight = torch.where(free, torch.exp(z - z.max(-1, keepdim=True).values), 0)
    return torch.where(free, budget * weight / weight.sum(-1, keepdim=True), u)


def test_backward_is_prop1_and_matches_autograd_of_the_closed_form():
    z, u = random_rows(500, 7, 6.0, seed=11)
    keep = (u.sum(-1) > 1.05) & (u > 0).all(-1)
    z, u = z[keep].requires_grad_(), u[keep].requires_grad_()
    alpha = csoftmax(z, u)
    free = alpha.detach() < u.detach()
    grad = torch.randn_like(alpha)
    dz, du = torch.autograd.grad(alpha, (z, u), grad)
    ref = closed_form(z, u, free)
    torch.testing.assert_close(ref, alpha, atol=1e-12, rtol=0)
    rdz, rdu = torch.autograd.grad(ref, (z, u), grad)
    torch.testing.assert_close(dz, rdz, atol=1e-10, rtol=0)
    torch.testing.assert_close(du, rdu, atol=1e-10, rtol=0)


@pytest.mark.parametrize("shape", [(6,), (4, 5), (2, 3, 7)])
def test_gradcheck_in_float64(shape):
    g = torch.Generator().manual_seed(sum(shape))
    z = torch.randn(*shape, generator=g, dtype=torch.float64) * 2
    u = torch.rand(*shape, generator=g, dtype=torch.float64) * 0.6 + 0.05
    u[..., 0] = 0.0  # a zero budget
    z.requires_grad_()
    u.requires_grad_()
    assert torch.autograd.gradcheck(csoftmax, (z, u), eps=1e-7, atol=1e-6)


def test_degenerate_rows_give_u_and_pass_gradients_to_u():
    z = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    u = torch.tensor([[0.0] * 4, [0.1, 0.2, 0.3, 0.1], [0.25] * 4], dtype=torch.float64, requires_grad=True)
    alpha = csoftmax(z, u)
    torch.testing.assert_close(alpha, u.detach(), atol=0, rtol=0)
    grad = torch.randn(3, 4, dtype=torch.float64)
    dz, du = torch.autograd.grad(alpha, (z, u), grad)
    assert torch.all(dz == 0)
    torch.testing.assert_close(du, grad, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("transform,slow", [(csoftmax, slow_csoftmax), (csparsemax, slow_csparsemax)])
def test_no_nan_or_inf_at_extreme_inputs(dtype, transform, slow):
    """Both budgeted transforms (csparsemax shares csoftmax's conventions) at logits of ±1000, tiny and
    zero budgets: finite values and gradients, on the simplex, within the bounds, and exact."""
    z = torch.tensor(
        [
            [1000.0, -1000.0, 0.0, 1000.0],
            [-1000.0] * 4,
            [1000.0, 0.0, 0.0, -1000.0],
            [0.0, 0.0, 0.0, 0.0],
            [88.0, -88.0, 500.0, -500.0],
            [1000.0, 999.5, -1000.0, 999.9],
            [3.0, 2.0, 1.0, 0.0],
        ],
        dtype=dtype,
    )
    u = torch.tensor(
        [
            [0.3, 0.5, 1.0, 0.2],
            [1.0, 1.0, 1.0, 1.0],
            [1e-30, 1.0, 1e-30, 1.0],
            [0.0, 0.0, 0.0, 0.0],
            [1.0, 1.0, 0.0, 0.5],
            [0.2, 1.0, 0.0, 0.5],
            [1e-30, 1e-30, 1e-30, 2.0],
        ],
        dtype=dtype,
    )
    z.requires_grad_()
    u.requires_grad_()
    alpha = transform(z, u)
    assert torch.isfinite(alpha).all()
    feasible = u.sum(-1) >= 1
    torch.testing.assert_close(
        alpha.sum(-1)[feasible], torch.ones(int(feasible.sum()), dtype=dtype), atol=1e-6, rtol=0
    )
    assert torch.all(alpha <= u) and torch.all(alpha >= 0)
    dz, du = torch.autograd.grad(alpha, (z, u), torch.randn_like(alpha))
    assert torch.isfinite(dz).all() and torch.isfinite(du).all()
    # and the values are the exact ones
    assert_agrees_with_slow_solver(
        slow, alpha.detach(), z.detach(), u.detach(), 1e-6 if dtype == torch.float32 else 1e-10
    )


def test_spread_logits_do_not_lose_the_tail():
    # with "total minus prefix" the small tail cancels to 0 and the row would no longer sum to 1
    z = torch.tensor([[60.0, 59.0, 0.0, -40.0, -41.0]], dtype=torch.float32)
    u = torch.tensor([[0.1, 0.1, 0.3, 0.5, 0.5]], dtype=torch.float32)
    alpha = csoftmax(z, u)
    assert_agrees_with_slow_solver(slow_csoftmax, alpha, z, u, 1e-6)
    assert abs(alpha.sum().item() - 1) < 1e-6


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_iterated_attention_is_even(dtype, tol):
    """α^n = csoftmax(z^n; 1 − β^{n−1}) for n = 1..L leaves β^L = 1 on every word (Eq. 11)."""
    g = torch.Generator().manual_seed(5)
    for length in (1, 2, 7, 30):
        beta = torch.zeros(64, length, dtype=dtype)
        for _ in range(length):
            z = torch.randn(64, length, generator=g).to(dtype) * 10
            alpha = csoftmax(z, (1 - beta).clamp_min(0))
            beta = beta + alpha
            assert torch.all(beta <= 1 + tol)
        torch.testing.assert_close(beta, torch.ones_like(beta), atol=tol, rtol=0)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-50, 50), st.floats(0, 1.5)), min_size=1, max_size=9),
)
def test_property_matches_slow_solver(pairs):
    z = torch.tensor([p[0] for p in pairs], dtype=torch.float64)
    u = torch.tensor([p[1] for p in pairs], dtype=torch.float64)
    alpha = csoftmax(z, u)
    assert_agrees_with_slow_solver(slow_csoftmax, alpha[None], z[None], u[None], 1e-10)
    if u.sum() >= 1:
        assert math.isclose(alpha.sum().item(), 1.0, abs_tol=1e-12)


@pytest.fixture(params=["default", "log-space"])
def path(request, monkeypatch):
    """Both ways to the tail masses: the default (float64 exp space on the CPU within 600 nats), and the
    log-space scan that GPUs and wider rows take, forced here on every row."""
    if request.param == "log-space":
        monkeypatch.setattr(constrained, "_exp_space_is_safe", lambda z, u: False)
    return request.param


@pytest.mark.parametrize("spread", [1.0, 30.0, 300.0, 1500.0])
def test_both_paths_agree_with_slow_solver(spread, path):
    for length in (1, 2, 5, 13):
        z, u = random_rows(300, length, spread, seed=100 + length + int(spread))
        assert_agrees_with_slow_solver(slow_csoftmax, csoftmax(z, u), z, u, 1e-10)


def test_log_space_path_gradcheck_in_float64(monkeypatch):
    monkeypatch.setattr(constrained, "_exp_space_is_safe", lambda z, u: False)
    test_gradcheck_in_float64((4, 5))
    test_backward_is_prop1_and_matches_autograd_of_the_closed_form()


def test_exp_space_only_within_its_range():
    """The float64 exp-space path only where exp() of every budgeted score stays far from overflow and
    underflow (no shift is made there); the unbudgeted words, whatever their score, do not count."""
    from easyfirst.ops.constrained import _exp_space_is_safe

    u = torch.tensor([[0.5, 1.0, 0.0, 0.0]])
    assert _exp_space_is_safe(torch.tensor([[0.0, -599.0, 0.0, 0.0]]), u)
    assert _exp_space_is_safe(torch.tensor([[0.0, -599.0, 800.0, -torch.inf]]), u)
    assert not _exp_space_is_safe(torch.tensor([[0.0, -601.0, 0.0, 0.0]]), u)
    assert not _exp_space_is_safe(torch.tensor([[650.0, 640.0, 0.0, 0.0]]), u)
    assert not _exp_space_is_safe(torch.tensor([[0.0, -torch.inf, 0.0, 0.0]]), u)
    assert not _exp_space_is_safe(torch.tensor([[0.0, torch.nan, 0.0, 0.0]]), u)


def exact_with_finite_gradients(
    z_rows: list[list[float]], u_rows: list[list[float]], dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """csoftmax of the rows, checked against the slow solver (1e-6 in float32, 1e-12 in float64) and for
    finite gradients; returns α, u and dz for a random dα."""
    z = torch.tensor(z_rows, dtype=dtype, requires_grad=True)
    u = torch.tensor(u_rows, dtype=dtype, requires_grad=True)
    alpha = csoftmax(z, u)
    assert_agrees_with_slow_solver(slow_csoftmax, alpha, z, u, 1e-6 if dtype == torch.float32 else 1e-12)
    dz, du = torch.autograd.grad(alpha, (z, u), torch.randn_like(alpha))
    assert torch.isfinite(dz).all() and torch.isfinite(du).all()
    return alpha.detach(), u.detach(), dz


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ties_at_the_clamp_boundary(dtype, path):
    """Words whose softmax share is exactly their bound (tied keys q, on the boundary), tied words all
    clamped, and all tied free: α is exact whichever side rounding puts them, and the gradients sum to
    zero over z (α stays on the simplex) and are finite."""
    alpha, u, dz = exact_with_finite_gradients(
        [[0.0] * 5, [1.0, 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, -1.0], [2.0, 2.0, 2.0, 2.0, 2.0]],
        [[0.2, 0.2, 0.2, 0.2, 5.0], [0.25, 0.25, 1.0, 1.0, 1.0], [0.5] * 5, [0.2, 0.2, 0.2, 0.2, 0.2001]],
        dtype,
    )
    tolerance = 1e-6 if dtype == torch.float32 else 1e-12
    assert torch.all(alpha <= u)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(4, dtype=dtype), atol=tolerance, rtol=0)
    torch.testing.assert_close(dz.sum(-1), torch.zeros(4, dtype=dtype), atol=tolerance, rtol=0)


def test_rows_of_width_one(path):
    """One word: α = u when u ≤ 1 (no slack; du = dα, dz = 0), else α = 1 with no gradient at all."""
    z = torch.tensor([[3.0], [-2.0], [0.0], [7.0]], dtype=torch.float64, requires_grad=True)
    u = torch.tensor([[0.0], [0.4], [1.0], [2.5]], dtype=torch.float64, requires_grad=True)
    alpha = csoftmax(z, u)
    assert alpha.flatten().tolist() == [0.0, 0.4, 1.0, 1.0]
    grad = torch.tensor([[1.5], [-2.0], [0.5], [3.0]], dtype=torch.float64)
    dz, du = torch.autograd.grad(alpha, (z, u), grad)
    assert dz.flatten().tolist() == [0.0, 0.0, 0.0, 0.0]
    assert du.flatten().tolist() == [1.5, -2.0, 0.5, 0.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_infinite_and_huge_scores(dtype, path):
    """Masked scores of −inf (with or without a budget) and unbudgeted words scored far above the
    others: exact values, finite gradients."""
    inf = float("inf")
    exact_with_finite_gradients(
        [[-inf, 0.0, 1.0], [-inf, 0.0, 1.0], [1000.0, 0.0, 1.0], [inf, 0.0, 1.0], [-inf, 0.5, 0.0]],
        [[0.0, 1.0, 1.0], [0.5, 0.3, 1.0], [0.0, 1.0, 0.6], [0.0, 1.0, 1.0], [1.0, 0.6, 1.0]],
        dtype,
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_budgets_summing_to_exactly_one_are_tight(dtype, path):
    """Σu = 1 exactly (dyadic budgets, so every partial sum is exact): the only feasible point is u, and
    rounding in exp(z)/Z must not free a word there: α = u and du = dα, dz = 0, exactly."""
    g = torch.Generator().manual_seed(13)
    counts = torch.rand(500, 9, generator=g).mul(64).floor() + 1  # positive integers
    counts[:, -1] += 1024 - counts.sum(-1)  # ... summing to 2^10 (every row sums to ≤ 9 · 64 before)
    u = (counts / 1024).to(dtype).requires_grad_()
    z = (torch.randn(500, 9, generator=g, dtype=dtype) * 5).requires_grad_()
    alpha = csoftmax(z, u)
    assert torch.equal(alpha, u.detach())
    grad = torch.randn_like(alpha)
    dz, du = torch.autograd.grad(alpha, (z, u), grad)
    assert torch.equal(dz, torch.zeros_like(dz)) and torch.equal(du, grad)
