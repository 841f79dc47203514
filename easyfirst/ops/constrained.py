"""Constrained softmax (Martins & Kreutzer 2017, §4, Prop. 1, Algs. 3–4) as an autograd Function.

    csoftmax(z; u) = argmin_{α ∈ Δ} −H(α) − zᵀα   subject to   α ≤ u

The solution is α_i = min(exp(z_i)/Z, u_i), with Z = Σ_{i∈A} exp(z_i) / (1 − Σ_{i∉A} u_i) and A the
words whose constraint is not tight. The tight (clamped) words are a prefix of the words sorted by
q_i = z_i − log u_i in decreasing order (Alg. 3): with the k first words clamped, word k is free iff
exp(z_k)·r_k / T_k ≤ u_k, where r_k = 1 − Σ_{j<k} u_j is the budget left and T_k = Σ_{j≥k} exp(z_j) the
tail mass; the clamped prefix is the shortest one after which this holds. All of it is vectorised: a
sort, suffix sums and a cumulative sum per row, O(L log L), no Python loop.

Numerics:

- tail masses are suffix sums accumulated from the small end, never "total minus prefix", which cancels
  to zero when the scores spread over tens of nats: in log space (``logcumsumexp`` over the reversed
  sorted scores), or, on the CPU when the scores span less than 600 nats, in float64 exp space (where
  nothing underflows and which is faster; see :func:`_log_suffix_sums`); comparisons are made between
  logarithms, so nothing underflows past ~88 nats in float32;
- clamped words are set to u_i explicitly, free words to exp(z_i − log T + log r) and then capped at u_i,
  so β = Σ α never exceeds its budget by a rounding error;
- scores are shifted by their row maximum first, so float32 keeps its precision at |z| ~ 1000;
- words with u_i = 0 (padding, or budget used up) are clamped and get exactly 0;
- a row with Σu ≤ 1 has no feasible point with slack: every constraint is tight and α = u (an
  all-padding row, Σu = 0, gives α = 0); its backward is du = dα, dz = 0.

Backward (Prop. 1, Eqs. 12–13): m = Σ_{i∈A} α_i dα_i / Σ_{i∈A} α_i, dz_i = 1[i∈A] α_i (dα_i − m),
du_i = 1[i∉A] (dα_i − m). The denominator is written Σ_{i∈A} α_i, which equals 1 − Σ_{i∉A} u_i in exact
arithmetic; computed from the α actually returned, it keeps Σ_i dz_i = 0 to rounding error.
"""

from __future__ import annotations

import torch

# Below this many nats under the row maximum, exp() in float64 approaches underflow (−745): rows whose
# words spread wider than this take the log-space scan.
_EXP_RANGE = 600.0


def _log_suffix_sums(zs: torch.Tensor, z: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
    """``log Σ_{j≥k} exp(zs_j)`` for every k of rows ``(R, L)``, summed from the end.

    ``zs`` is ``z`` (shifted so that its budgeted maximum is 0) in sorted order; ``z`` and ``positive``
    (u > 0), in the original order, decide which method is safe.

    ``torch.logcumsumexp`` is exact in log space but, on the CPU, a scalar loop (~28 ns per element on
    one thread, about a third of the whole forward at (64, 50)). When every budgeted score lies within
    ``_EXP_RANGE`` nats of the row maximum, the same suffix sums are taken in float64 exp space, which
    cannot underflow there and is as precise (relative error ~L·1e-16, summed from the small end, never
    "total minus prefix"); otherwise, and on other devices (no host synchronisation on a GPU), the
    log-space scan. Words with no budget are never free, but their exp() must stay finite.
    """
    if z.device.type == "cpu" and bool(torch.where(positive, z > -_EXP_RANGE, z < _EXP_RANGE).all()):
        tail = torch.exp(zs.to(torch.float64)).flip(-1).cumsum(-1).flip(-1)
        return torch.log(tail).to(zs.dtype)
    return torch.logcumsumexp(zs.flip(-1), dim=-1).flip(-1)


def _csoftmax_forward(z: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """α and the free-word mask A for rows ``(R, L)``.

    Written for few, large tensor operations (the decoder calls it once per sketch step on small rows,
    where each operation's fixed cost dominates): the clamped prefix is found in sorted order, and α is
    computed in the original order from the rank of each word, so only one index vector is scattered.
    """
    length = z.shape[-1]
    positive = u > 0
    # shift by the row maximum (the solution is shift-invariant): keeps float32 precise at |z| ~ 1000
    z = z - torch.where(positive, z, -torch.inf).amax(-1, keepdim=True).clamp_min(torch.finfo(z.dtype).min)
    key = torch.where(positive, z - torch.log(u), torch.inf)  # q_i = z_i − log u_i; u = 0 sorts first
    keys, order = torch.sort(key, dim=-1, descending=True, stable=True)
    zs, us = z.gather(-1, order), u.gather(-1, order)
    log_tail = _log_suffix_sums(zs, z, positive)  # log T_k = log Σ_{j≥k} exp(z_j), from the small end
    log_left = torch.log((1 - (torch.cumsum(us, dim=-1) - us)).clamp_min(0))  # log r_k, r_k = 1 − Σ_{j<k} u_j
    # word k is free given k clamped before it: exp(z_k)·r_k / T_k ≤ u_k, i.e. q_k ≤ log T_k − log r_k
    # (an exhausted budget, log r = −inf, makes every later word free with share 0; u = 0 has q = inf)
    fits = keys <= log_tail - log_left
    first_free = torch.where(fits.any(-1), fits.to(torch.int8).argmax(-1), length).unsqueeze(-1)  # (R, 1)
    at = first_free.clamp_max(length - 1)
    rank = torch.empty_like(order).scatter_(-1, order, torch.arange(length, device=z.device).expand_as(order))
    clamped = rank < first_free
    # (z − log T) first: both are large when the free words sit far below the maximum, and their
    # difference is exact where it matters; adding log r to a large z − log T first would round it
    log_share = (z - log_tail.gather(-1, at)) + log_left.gather(-1, at)
    alpha = torch.where(clamped, u, torch.minimum(torch.exp(log_share), u))
    tight = u.sum(-1, keepdim=True) <= 1  # no slack anywhere: α = u
    return torch.where(tight, u, alpha), ~(clamped | tight)


def _csoftmax_backward(
    alpha: torch.Tensor, free: torch.Tensor, grad: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Prop. 1's Jacobian-vector product: ``(dz, du)`` from α, the free set A and dα (same shapes)."""
    weighted = torch.where(free, alpha, 0)
    mass = weighted.sum(-1, keepdim=True)
    m = (weighted * grad).sum(-1, keepdim=True) / torch.where(mass > 0, mass, 1)
    centred = grad - m
    return weighted * centred, torch.where(free, 0, centred)


class CSoftmaxFunction(torch.autograd.Function):
    """Constrained softmax over the last dimension with the exact backward of Prop. 1."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        if z.shape != u.shape:
            raise ValueError(f"csoftmax: z {tuple(z.shape)} and u {tuple(u.shape)} must have the same shape")
        shape = z.shape
        if z.numel() == 0:
            ctx.save_for_backward(z, z.bool())
            return z.clone()
        alpha, free = _csoftmax_forward(z.reshape(-1, shape[-1]), u.reshape(-1, shape[-1]).to(z.dtype))
        alpha, free = alpha.view(shape), free.view(shape)
        ctx.save_for_backward(alpha, free)
        return alpha

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        alpha, free = ctx.saved_tensors
        return _csoftmax_backward(alpha, free, grad)


def csoftmax(z: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Constrained softmax α = argmin_{α∈Δ, α≤u} −H(α) − zᵀα over the last dimension.

    Args:
        z: scores ``(..., L)``.
        u: upper bounds ``(..., L)``, non-negative; ``u_i = 0`` gives ``α_i = 0`` exactly. Rows with
            ``Σu ≤ 1`` return ``α = u``.

    Returns:
        ``α`` ``(..., L)``. Differentiable in both ``z`` and ``u``.
    """
    return CSoftmaxFunction.apply(z, u)


# ---------------------------------------------------------------------------------------------------------
# Constrained sparsemax
# ---------------------------------------------------------------------------------------------------------


def _csparsemax_forward(z: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """α, the free set A and the upper-clamped set C for rows ``(R, L)``.

    The solution is α_i = clip(z_i − τ, 0, u_i) with τ the root of g(τ) = Σ_i clip(z_i − τ, 0, u_i) = 1.
    g is continuous, piecewise linear and non-increasing, with breakpoints at z_i (word i leaves 0) and
    z_i − u_i (word i reaches u_i), and g(τ) = F(τ; z) − F(τ; z − u) with F(τ; a) = Σ_i max(a_i − τ, 0).
    F at every breakpoint is a sort, a cumulative sum and a ``searchsorted``; the first breakpoint
    (from the top) with g ≥ 1 brackets τ between it and the one before, which fixes A and C; τ is then
    solved exactly from them, τ = (Σ_A z + Σ_C u − 1) / |A|, rather than interpolated.
    """
    length = z.shape[-1]
    positive = u > 0
    inf = torch.tensor(float("inf"), dtype=z.dtype, device=z.device)
    z = z - torch.where(positive, z, -inf).amax(-1, keepdim=True).clamp_min(torch.finfo(z.dtype).min)
    # words with no budget play no part: park them below every breakpoint that can bracket τ
    low = torch.where(positive, z - u, inf).amin(-1, keepdim=True).clamp_max(0) - 1
    top = torch.where(positive, z, low)  # breakpoints where a word leaves 0
    bottom = torch.where(positive, z - u, low)  # breakpoints where a word reaches its bound

    def excess(a: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """F(t; a) = Σ_i max(a_i − t, 0) for every t in the row; a ``(R, L)``, t ``(R, M)``."""
        ascending = a.sort(-1).values
        # sums of the c largest, accumulated from the top (no "total minus prefix")
        largest = torch.cat([torch.zeros_like(a[:, :1]), ascending.flip(-1).cumsum(-1)], -1)
        count = length - torch.searchsorted(ascending, t.contiguous(), right=True)
        return largest.gather(-1, count) - count.to(a.dtype) * t

    points = torch.cat([top, bottom], -1).sort(-1, descending=True).values  # (R, 2L)
    g = excess(top, points) - excess(bottom, points)  # non-decreasing along the row
    reached = g >= 1
    k = torch.where(reached.any(-1), reached.to(torch.int8).argmax(-1), 2 * length - 1).clamp_min(1)
    upper = points.gather(-1, k.unsqueeze(-1) - 1)  # τ lies in [points_k, points_{k−1})
    clamped = positive & (bottom >= upper)
    free = positive & (top >= upper) & ~clamped
    size = free.sum(-1, keepdim=True)
    tau = (
        torch.where(free, z, 0).sum(-1, keepdim=True) + torch.where(clamped, u, 0).sum(-1, keepdim=True) - 1
    ) / (size.clamp_min(1).to(z.dtype))
    alpha = torch.where(clamped, u, torch.where(free, torch.minimum((z - tau).clamp_min(0), u), 0))
    tight = u.sum(-1, keepdim=True) <= 1  # no slack anywhere: α = u
    alpha = torch.where(tight, u, alpha)
    # a word with no budget that z − τ would push above 0 sits at its bound u_i = 0: its du counts
    clamped = clamped | (~positive & (z > tau)) | tight
    return alpha, free & ~tight, clamped


class CSparsemaxFunction(torch.autograd.Function):
    """Constrained sparsemax over the last dimension with its exact backward.

    With A the free words and C the words at their bound, α_A = z_A − τ, α_C = u_C and
    τ = (Σ_A z + Σ_C u − 1)/|A|, so dz_i = 1[i∈A](dα_i − mean_A dα) and du_i = 1[i∈C](dα_i − mean_A dα).
    """

    @staticmethod
    def forward(ctx, z: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        if z.shape != u.shape:
            raise ValueError(
                f"csparsemax: z {tuple(z.shape)} and u {tuple(u.shape)} must have the same shape"
            )
        shape = z.shape
        if z.numel() == 0:
            ctx.save_for_backward(z.bool(), z.bool())
            return z.clone()
        alpha, free, clamped = _csparsemax_forward(
            z.reshape(-1, shape[-1]), u.reshape(-1, shape[-1]).to(z.dtype)
        )
        ctx.save_for_backward(free.view(shape), clamped.view(shape))
        return alpha.view(shape)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        free, clamped = ctx.saved_tensors
        size = free.sum(-1, keepdim=True)
        mean = torch.where(free, grad, 0).sum(-1, keepdim=True) / size.clamp_min(1).to(grad.dtype)
        centred = grad - mean
        return torch.where(free, centred, 0), torch.where(clamped, centred, 0)


def csparsemax(z: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Constrained sparsemax α = argmin_{α∈Δ, α≤u} ‖α − z‖² over the last dimension.

    Sparse (words scored far below the others get exactly 0) and, iterated with u = 1 − β, even like
    csoftmax.

    Args:
        z: scores ``(..., L)``.
        u: upper bounds ``(..., L)``, non-negative; ``u_i = 0`` gives ``α_i = 0`` exactly. Rows with
            ``Σu ≤ 1`` return ``α = u``.

    Returns:
        ``α`` ``(..., L)``. Differentiable in both ``z`` and ``u``.
    """
    return CSparsemaxFunction.apply(z, u)
