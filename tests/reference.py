"""Slow, obviously-correct reference solvers for the tests (plain Python floats, one row at a time)."""

from __future__ import annotations

import math


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
