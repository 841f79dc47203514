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
