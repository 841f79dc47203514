"""Exactness of the constrained sparsemax: an independent slow solver (bisection on τ), gradcheck, the
backward against autograd of the closed form, invariants, extremes, and evenness when iterated."""

from __future__ import annotations

import math

import entmax
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from easyfirst.ops import csparsemax
from reference import assert_agrees_with_slow_solver, assert_budgeted_invariants, random_rows, slow_csparsemax


@pytest.mark.parametrize("spread", [0.1, 1.0, 10.0, 300.0, 2000.0])
def test_agrees_with_slow_solver_on_thousands_of_rows(spread):
    for length in (1, 2, 5, 13):
        z, u = random_rows(1000, length, spread, seed=length + int(10 * spread))
        assert_agrees_with_slow_solver(slow_csparsemax, csparsemax(z, u), z, u, 1e-10)


def test_ties_and_repeated_breakpoints():
    # equal scores, equal bounds, and z_i − u_i landing on another word's z_j
    z = torch.tensor(
        [[0.5, 0.5, 0.5, 0.5], [1.0, 0.5, 0.5, 0.0], [0.3, 0.3, 0.0, 0.0], [2.0, 2.0, 1.0, 1.0]],
        dtype=torch.float64,
    )
    u = torch.tensor(
        [[0.5, 0.5, 0.5, 0.5], [0.5, 0.5, 0.5, 0.5], [0.3, 0.3, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]],
        dtype=torch.float64,
    )
    assert_agrees_with_slow_solver(slow_csparsemax, csparsemax(z, u), z, u, 1e-12)


def test_invariants():
    z, u = random_rows(4000, 9, 3.0, seed=7)
    alpha = assert_budgeted_invariants(csparsemax, lambda z: entmax.sparsemax(z, dim=-1), z, u)
    assert (alpha[u.sum(-1) >= 1] == 0).any(), "sparse: some words get exactly zero"


def closed_form(z: torch.Tensor, u: torch.Tensor, free: torch.Tensor, clamped: torch.Tensor) -> torch.Tensor:
    """α = z − τ on A, u on C, 0 elsewhere, τ = (Σ_A z + Σ_C u − 1)/|A|: differentiable for fixed A, C."""
    tau = (
        torch.where(free, z, 0).sum(-1, keepdim=True) + torch.where(clamped, u, 0).sum(-1, keepdim=True) - 1
    ) / (free.sum(-1, keepdim=True))
    return torch.where(free, z - tau, torch.where(clamped, u, torch.zeros_like(z)))


def test_backward_matches_autograd_of_the_closed_form():
    z, u = random_rows(500, 7, 2.0, seed=11)
    keep = (u.sum(-1) > 1.05) & (u > 0).all(-1)
    z, u = z[keep].requires_grad_(), u[keep].requires_grad_()
    alpha = csparsemax(z, u)
    a, b = alpha.detach(), u.detach()
    free, clamped = (a > 1e-12) & (a < b - 1e-12), a >= b - 1e-12
    keep = free.any(-1)
    grad = torch.randn_like(alpha)
    dz, du = torch.autograd.grad(alpha, (z, u), grad)
    ref = closed_form(z, u, free, clamped)
    torch.testing.assert_close(ref[keep], alpha[keep], atol=1e-12, rtol=0)
    rdz, rdu = torch.autograd.grad(ref[keep], (z, u), grad[keep])
    torch.testing.assert_close(dz[keep], rdz[keep], atol=1e-12, rtol=0)
    torch.testing.assert_close(du[keep], rdu[keep], atol=1e-12, rtol=0)


@pytest.mark.parametrize("shape", [(6,), (4, 5), (2, 3, 7)])
def test_gradcheck_in_float64(shape):
    g = torch.Generator().manual_seed(sum(shape))
    z = torch.randn(*shape, generator=g, dtype=torch.float64) * 0.5
    u = torch.rand(*shape, generator=g, dtype=torch.float64) * 0.5 + 0.1
    u[..., 0] = 0.0  # a zero budget on a word scored below τ (u = 0 is the edge of the domain)
    z[..., 0] = -5.0
    z.requires_grad_()
    u.requires_grad_()
    alpha = csparsemax(z, u).detach()
    assert ((alpha > 0) & (alpha < u.detach())).any() and (alpha == u.detach()).any()  # both kinds of word
    assert torch.autograd.gradcheck(csparsemax, (z, u), eps=1e-7, atol=1e-6)


def test_zero_budget_above_the_threshold_has_the_right_sided_derivative():
    """u_i = 0 with z_i > τ: α_i sits at its bound, so raising u_i gives word i mass (one-sided difference)."""
    z = torch.tensor([2.0, 0.3, 0.1, -1.0], dtype=torch.float64, requires_grad=True)
    u = torch.tensor([0.0, 1.0, 1.0, 1.0], dtype=torch.float64, requires_grad=True)
    grad = torch.tensor([1.0, -0.5, 2.0, 0.25], dtype=torch.float64)
    du = torch.autograd.grad(csparsemax(z, u), u, grad)[0]
    step = 1e-7
    for i in range(4):
        bumped = u.detach().clone()
        bumped[i] += step
        numeric = ((csparsemax(z.detach(), bumped) - csparsemax(z.detach(), u.detach())) * grad).sum() / step
        assert abs(du[i].item() - numeric.item()) < 1e-6, i
    assert du[0] != 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_threshold_on_a_flat_stretch_of_g(dtype):
    """Σα = 1 already with the words at their bounds, over a whole interval of τ (g is flat at exactly 1
    there, in dyadic numbers): any τ in it gives the same α, exactly the slow solver's, and finite
    gradients that keep α on the simplex."""
    z = torch.tensor([[3.0, 3.0, 0.0, 0.0], [1.0, 0.5, 0.5, -2.0], [4.0, 1.0, 1.0, 1.0]], dtype=dtype)
    u = torch.tensor([[0.5, 0.5, 1.0, 1.0], [0.5, 0.25, 0.25, 1.0], [1.0, 0.5, 0.5, 0.5]], dtype=dtype)
    z.requires_grad_()
    u.requires_grad_()
    alpha = csparsemax(z, u)
    assert_agrees_with_slow_solver(slow_csparsemax, alpha, z, u, 1e-6 if dtype == torch.float32 else 1e-12)
    dz, du = torch.autograd.grad(alpha, (z, u), torch.randn_like(alpha))
    assert torch.isfinite(dz).all() and torch.isfinite(du).all()
    torch.testing.assert_close(dz.sum(-1), torch.zeros(3, dtype=dtype), atol=1e-6, rtol=0)


def test_degenerate_rows_give_u_and_pass_gradients_to_u():
    z = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    u = torch.tensor([[0.0] * 4, [0.1, 0.2, 0.3, 0.1], [0.25] * 4], dtype=torch.float64, requires_grad=True)
    alpha = csparsemax(z, u)
    torch.testing.assert_close(alpha, u.detach(), atol=0, rtol=0)
    grad = torch.randn(3, 4, dtype=torch.float64)
    dz, du = torch.autograd.grad(alpha, (z, u), grad)
    assert torch.all(dz == 0)
    torch.testing.assert_close(du, grad, atol=0, rtol=0)


# extreme inputs (±1000, tiny and zero budgets): tests/ops/test_constrained.py, for both budgeted transforms


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_iterated_attention_is_even(dtype, tol):
    """α^n = csparsemax(z^n; 1 − β^{n−1}) for n = 1..L leaves β^L = 1 on every word."""
    g = torch.Generator().manual_seed(5)
    for length in (1, 2, 7, 30):
        beta = torch.zeros(64, length, dtype=dtype)
        for _ in range(length):
            z = torch.randn(64, length, generator=g).to(dtype)
            alpha = csparsemax(z, (1 - beta).clamp_min(0))
            beta = beta + alpha
            assert torch.all(beta <= 1 + tol)
        torch.testing.assert_close(beta, torch.ones_like(beta), atol=tol, rtol=0)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(-50, 50), st.floats(0, 1.5)), min_size=1, max_size=9))
def test_property_matches_slow_solver(pairs):
    z = torch.tensor([p[0] for p in pairs], dtype=torch.float64)
    u = torch.tensor([p[1] for p in pairs], dtype=torch.float64)
    alpha = csparsemax(z, u)
    assert_agrees_with_slow_solver(slow_csparsemax, alpha[None], z[None], u[None], 1e-10)
    if u.sum() >= 1:
        assert math.isclose(alpha.sum().item(), 1.0, abs_tol=1e-12)
