"""Constrained softmax (Martins & Kreutzer 2017, §4, Prop. 1, Algs. 3–4) as an autograd Function.

    csoftmax(z; u) = argmin_{α ∈ Δ} −H(α) − zᵀα   subject to   α ≤ u

The solution is α_i = min(exp(z_i)/Z, u_i), with Z = Σ_{i∈A} exp(z_i) / (1 − Σ_{i∉A} u_i) and A the
words whose constraint is not tight. The tight (clamped) words are a prefix of the words sorted by
q_i = z_i − log u_i in decreasing order (Alg. 3). With the k first words clamped, r_k = 1 − Σ_{j<k} u_j
is the budget left and T_k = Σ_{j≥k} exp(z_j) the tail mass, and Z is the smallest of the Z_k = T_k / r_k
(over r_k, T_k > 0): f(Z') = Σ_i min(exp(z_i)/Z', u_i) decreases in Z' and f(Z) = 1, while for any clamped
set S, f(Z_S) ≤ Σ_{i∈S} u_i + Σ_{i∉S} exp(z_i)/Z_S = 1, so Z_S ≥ Z, with equality at the true set,
which is one of the prefixes. So no search for "the first prefix after which the next word fits" is
needed, and ties in q (which cannot straddle the boundary: clamped words have exp(z_i)/u_i > Z) may be
sorted either way. All of it is vectorised: a sort, two cumulative sums and a maximum per row,
O(L log L), no Python loop.

Numerics:

- tail masses are suffix sums accumulated from the small end, never "total minus prefix", which cancels
  to zero when the scores spread over tens of nats: on the CPU, when every budgeted score lies within
  600 nats of 0, in float64 exp space (nothing overflows or underflows there; see
  :func:`_exp_space_is_safe`); otherwise (and on a GPU) in log space with ``logcumsumexp``, scores
  shifted by their budgeted row maximum so that float32 keeps its precision at |z| ~ 1000;
- the budgets left r_k sum the u of the clamped words only, never "total minus suffix";
- clamped words are set to u_i exactly, free words to exp(z_i)/Z only where that is below u_i, so
  β = Σ α never exceeds its budget by a rounding error;
- words with u_i = 0 (padding, or budget used up) are clamped and get exactly 0;
- a row with Σu ≤ 1 has no feasible point with slack: every constraint is tight and α = u (an
  all-padding row, Σu = 0, gives α = 0); its backward is du = dα, dz = 0.

Backward (Prop. 1, Eqs. 12–13): m = Σ_{i∈A} α_i dα_i / Σ_{i∈A} α_i, dz_i = 1[i∈A] α_i (dα_i − m),
du_i = 1[i∉A] (dα_i − m). The denominator is written Σ_{i∈A} α_i, which equals 1 − Σ_{i∉A} u_i in exact
arithmetic; computed from the α actually returned, it keeps Σ_i dz_i = 0 to rounding error.
"""

from __future__ import annotations

import torch

# Within this many nats of 0, exp() in float64 stays far from underflow (−745) and overflow (+709), also
# summed over a row: rows with a budgeted score beyond it take the log-space path.
_EXP_RANGE = 600.0


def _exp_space_is_safe(z: torch.Tensor, u: torch.Tensor) -> bool:
    """Whether rows ``(R, L)`` can take the float64 exp-space path: on the CPU, with every budgeted
    score (u > 0) within ``_EXP_RANGE`` nats of 0 (the unbudgeted words, whatever their score, do not
    count).

    There exp(z) neither overflows nor comes near underflow, so the scores need no shift, the tail
    masses T_k are cumulative sums in float64 (as precise as the log-space scan, relative error
    ~L·1e-16, summed from the small end) and q is ordered as exp(z)/u, a division instead of a log:
    faster than ``torch.logcumsumexp``, a scalar loop on the CPU (benchmarks/speed/transforms.py). Elsewhere (no host synchronisation on a GPU), or for wider scores, the log-space path.
    """
    if z.device.type != "cpu" or z.numel() == 0:
        return False
    # every score in range (the common case) settles it without looking at the budgets
    limit = _EXP_RANGE
    return z.abs().max().item() <= limit or torch.where(u > 0, z, 0).abs().max().item() <= limit


def _budget_left(us: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """r_k = 1 − Σ_{j<k} u_j for budgets ``us`` ``(R, L)`` in decreasing q order, summed over the words
    before k only (precise where r is small), and whether the row is tight, Σu ≤ 1 ``(R, 1)``."""
    used = torch.cumsum(us, -1)
    return (us - used).add_(1), used[:, -1:] <= 1


def csoftmax_forward(z: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """α and the free-word mask A for rows ``(R, L)``, in float64 exp space where
    :func:`_exp_space_is_safe` holds, else in log space.

    w = 1/Z = max_k r_k / T_k over the clamped prefixes of the q order (see the module docstring): one
    sort, two cumulative sums and a maximum, then α_i = min(exp(z_i)·w, u_i) and A in the original
    order; no search for the first prefix that fits and no scatter of ranks. Written for few, large
    tensor operations (the decoder calls it once per sketch step on small rows, where each operation's
    fixed cost dominates). Taking 1/Z rather than Z, an over-spent prefix (r_k ≤ 0) is never the maximum;
    a tight row (Σu ≤ 1) gets w = inf, which clamps every word.
    """
    if _exp_space_is_safe(z, u):
        u_wide = u.to(torch.float64)
        e = torch.exp(z.to(torch.float64))
        # decreasing q = log(exp(z)/u); u ≤ 0 gives +inf (NaN where z = −inf, which torch.sort puts first
        # as well): the unbudgeted words lead, clamped by every prefix that matters (their r is 1)
        order = torch.sort(e / u_wide.clamp_min(0), dim=-1, descending=True).indices
        left, tight = _budget_left(u_wide.gather(-1, order))
        tail = e.gather(-1, order).flip(-1).cumsum(-1).flip(-1)  # T_k = Σ_{j≥k} exp(z_j), from the small end
        share = e * torch.where(tight, torch.inf, (left / tail).amax(-1, keepdim=True))
        free = share < u_wide
        return torch.where(free, share, u_wide).to(z.dtype), free
    # log space, in z's dtype: shift by the budgeted maximum (α is shift-invariant), so that float32
    # keeps its precision at |z| ~ 1000
    positive = u > 0
    z = z - torch.where(positive, z, -torch.inf).amax(-1, keepdim=True)
    log_u = torch.log(u)
    order = torch.sort(z - log_u, dim=-1, descending=True).indices  # q = z − log u, u = 0 first as above
    left, tight = _budget_left(u.gather(-1, order))
    log_tail = torch.logcumsumexp(z.gather(-1, order).flip(-1), -1).flip(-1)
    log_left = torch.log(left.clamp_min(0))
    # a prefix whose tail mass is 0 (scores of −inf) cannot carry the budget left: never the maximum
    at = torch.where(log_tail > -torch.inf, log_left - log_tail, -torch.inf).argmax(-1, keepdim=True)
    # (z − log T) first: both are large when the free words sit far below the maximum, and their
    # difference is exact where it matters; adding log r to a large z − log T first would round it
    log_share = (z - log_tail.gather(-1, at)) + torch.where(tight, torch.inf, log_left.gather(-1, at))
    free = log_share < log_u
    return torch.where(free, torch.exp(log_share), u), free


def csoftmax_backward(
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
        alpha, free = csoftmax_forward(z.reshape(-1, shape[-1]), u.reshape(-1, shape[-1]).to(z.dtype))
        alpha, free = alpha.view(shape), free.view(shape)
        ctx.save_for_backward(alpha, free)
        return alpha

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        alpha, free = ctx.saved_tensors
        return csoftmax_backward(alpha, free, grad)


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
    z_i − u_i (word i reaches u_i), where its slope changes by one. g at every breakpoint is one sort of
    the 2L breakpoints and two cumulative sums; the first breakpoint (from the top) with g ≥ 1 brackets
    τ between it and the one before, which fixes A and C; τ is then solved exactly from them,
    τ = (Σ_A z + Σ_C u − 1) / |A|, rather than interpolated.
    """
    length = z.shape[-1]
    positive = u > 0
    z = z - torch.where(positive, z, -torch.inf).amax(-1, keepdim=True).clamp_min(torch.finfo(z.dtype).min)
    bottom = z - u  # breakpoints where a word reaches its bound
    # words with no budget play no part: park them below every breakpoint that can bracket τ
    low = torch.where(positive, bottom, torch.inf).amin(-1, keepdim=True).clamp_max(0) - 1
    top = torch.where(positive, z, low)  # breakpoints where a word leaves 0
    bottom = torch.where(positive, bottom, low)
    # every breakpoint in one sort, with the change of slope there: s = +1 at a top (a word leaves 0),
    # s = −1 at a bottom (a word reaches its bound)
    points, order = torch.cat([top, bottom], -1).sort(-1, descending=True)  # (R, 2L)
    slope = (order < length).to(z.dtype).mul_(2).sub_(1)
    # g(p_k) = Σ_{j≤k} s_j (p_j − p_k), summed from the top (points tied with p_k add 0 in any order);
    # non-decreasing along the row, so the first k with g ≥ 1 is the count of g < 1 (2L − 1 if none: Σu < 1)
    g = (slope * points).cumsum(-1) - slope.cumsum(-1) * points
    k = (g < 1).sum(-1, keepdim=True).clamp_(1, 2 * length - 1)
    upper = points.gather(-1, k - 1)  # τ lies in [points_k, points_{k−1})
    clamped = positive & (bottom >= upper)
    free = positive & (top >= upper) & ~clamped
    size = free.sum(-1, keepdim=True).clamp_min(1).to(z.dtype)
    tau = (torch.where(clamped, u, torch.where(free, z, 0)).sum(-1, keepdim=True) - 1) / size  # A, C disjoint
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
