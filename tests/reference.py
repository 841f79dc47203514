"""Slow, obviously-correct reference solvers for the tests (plain Python floats, one row at a time)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch


def slow_csoftmax(z: list[float], u: list[float]) -> list[float]:
    """argmin −H(α) − zᵀα over the simplex with α ≤ u, by iterative clamp-and-renormalize.

    Start with every word free (those with u = 0 clamped); give the free words their softmax share of
    the budget left; clamp every word over its bound; repeat until none is over. Clamping all violators
    at once is safe: it only raises the scale (budget / free mass), so a violator stays one.
    """
    if sum(u) <= 1:
        return list(u)
    clamped = {i for i, b in enumerate(u) if b == 0}
    while True:
        free = [i for i in range(len(z)) if i not in clamped]
        if not free:  # Σu exceeded 1 by a rounding error only: every bound is tight
            return list(u)
        budget = 1 - math.fsum(u[i] for i in clamped)
        top = max(z[i] for i in free)
        weight = {i: math.exp(z[i] - top) for i in free}
        total = math.fsum(weight.values())
        alpha = [u[i] if i in clamped else budget * weight[i] / total for i in range(len(z))]
        over = {i for i in free if alpha[i] > u[i]}
        if not over:
            return alpha
        clamped |= over


def slow_csparsemax(z: list[float], u: list[float]) -> list[float]:
    """argmin ‖α − z‖² over the simplex with α ≤ u, by bisection on the threshold τ.

    α_i = clip(z_i − τ, 0, u_i) with Σ_i α_i = 1; the sum falls from Σu to 0 as τ rises from
    min(z − u) to max(z), so halve [lo, hi] until the floats stop moving.
    """
    if math.fsum(u) <= 1:
        return list(u)

    def total(tau: float) -> float:
        return math.fsum(min(max(zi - tau, 0.0), ui) for zi, ui in zip(z, u, strict=True))

    lo, hi = min(zi - ui for zi, ui in zip(z, u, strict=True)), max(z)
    while True:
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if total(mid) >= 1:
            lo = mid
        else:
            hi = mid
    return [min(max(zi - lo, 0.0), ui) for zi, ui in zip(z, u, strict=True)]


def random_rows(count: int, length: int, spread: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores spread over `spread` nats and bounds of five kinds: tight, summing to 1, loose (u > 1),
    with zeros (padding, used-up words), and plain uniform(0, 1)."""
    g = torch.Generator().manual_seed(seed)
    z = (torch.rand(count, length, generator=g, dtype=torch.float64) - 0.5) * spread
    kind = torch.randint(0, 5, (count,), generator=g)
    u = torch.rand(count, length, generator=g, dtype=torch.float64)
    u = torch.where((kind == 0)[:, None], u * 0.3, u)  # many tight constraints
    u = torch.where((kind == 1)[:, None], u / u.sum(-1, keepdim=True), u)  # budgets summing to 1
    u = torch.where((kind == 2)[:, None], u + 1, u)  # all loose: the unconstrained transform
    zero = torch.rand(count, length, generator=g) < 0.25  # zero budgets (padding, used-up words)
    u = torch.where(zero & (kind == 3)[:, None], 0.0, u)
    return z, u


def slow_entmax(z: list[float], alpha: float) -> list[float]:
    """α-entmax (α > 1) by its closed form p_i = [(α − 1)z_i − τ]₊^{1/(α−1)}, τ by 200 bisection steps.

    Σ_i p_i(τ) is decreasing in τ; it is ≥ 1 at τ = (α − 1)max z − 1 and 0 at τ = (α − 1)max z.
    """
    top = (alpha - 1) * max(z)
    low, high = top - 1, top

    def mass(tau: float) -> list[float]:
        return [max((alpha - 1) * zi - tau, 0.0) ** (1 / (alpha - 1)) for zi in z]

    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if math.fsum(mass(middle)) >= 1 else (low, middle)
    p = mass(low)
    total = math.fsum(p)
    return [x / total for x in p]


def tsallis(p: list[float], alpha: float) -> float:
    """Ω_α(p): the negative Tsallis entropy (Σ p^α − 1)/(α(α − 1)), or Σ p log p for α = 1."""
    if alpha == 1:
        return math.fsum(x * math.log(x) for x in p if x > 0)
    return (math.fsum(x**alpha for x in p) - 1) / (alpha * (alpha - 1))


def assert_agrees_with_slow_solver(
    solver: Callable[[list[float], list[float]], list[float]],
    alpha: torch.Tensor,
    z: torch.Tensor,
    u: torch.Tensor,
    tolerance: float,
) -> None:
    """Every row of α ``(R, L)`` within ``tolerance`` of ``solver``'s (slow_csoftmax or slow_csparsemax)
    on (z, u) in float64."""
    for row in range(z.shape[0]):
        expected = solver(z[row].double().tolist(), u[row].double().tolist())
        error = max(abs(a - e) for a, e in zip(alpha[row].tolist(), expected, strict=True))
        assert error < tolerance, (z[row], u[row], alpha[row], expected)


def assert_budgeted_invariants(
    transform: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    unconstrained: Callable[[torch.Tensor], torch.Tensor],
    z: torch.Tensor,
    u: torch.Tensor,
) -> torch.Tensor:
    """What every budgeted transform (csoftmax, csparsemax) keeps on rows ``(R, L)`` in float64: α sums
    to 1 where Σu ≥ 1, 0 ≤ α ≤ u, α = 0 where u = 0; with loose bounds (u > 1) it is ``unconstrained``;
    with bounds summing to exactly 1 it is u. Returns α on (z, u)."""
    alpha = transform(z, u)
    feasible = u.sum(-1) >= 1
    torch.testing.assert_close(
        alpha.sum(-1)[feasible], torch.ones(int(feasible.sum()), dtype=torch.float64), atol=1e-12, rtol=0
    )
    assert torch.all(alpha >= 0) and torch.all(alpha <= u)
    assert torch.all(alpha[u == 0] == 0)
    loose = torch.ones_like(u) + torch.rand_like(u)
    torch.testing.assert_close(transform(z, loose), unconstrained(z), atol=1e-14, rtol=0)
    exact = u / u.sum(-1, keepdim=True)
    torch.testing.assert_close(transform(z, exact), exact, atol=1e-14, rtol=0)
    return alpha
