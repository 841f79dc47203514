"""The output layer's objectives: the Fenchel–Young loss family with label smoothing and tempering.

For a regularizer Ω on the simplex, the Fenchel–Young loss of scores ``z`` against a target
distribution ``q`` is (Blondel et al. 2020; Eq. 7 of the label-smoothing paper, papers/fenchel-young-label-smoothing-entmax.txt)

    L_Ω(z; q) = Ω*(z) + Ω(q) − zᵀq,      Ω*(z) = max_p zᵀp − Ω(p) = zᵀπ(z) − Ω(π(z)),

with π(z) = argmax_p zᵀp − Ω(p) the output mapping and gradient ∇_z L = π(z) − q (its Eq. 9). With Ω the
negative Tsallis α-entropy (its Eq. 6)

    Ω_α(p) = (Σ_y p_y^α − 1) / (α(α − 1))  for α > 1,      Ω_1(p) = Σ_y p_y log p_y,

α = 1 gives softmax and the cross-entropy (KL(q ‖ softmax(z)) for a general q), α = 2 sparsemax and the
sparsemax loss, α = 1.5 the 1.5-entmax loss; α-entmax for other α > 1 is found by bisection. Every
α > 1 can give exact zeros. The mappings come from the ``entmax`` package.

**Label smoothing** (label-smoothing paper, Eq. 10 and Prop. 1): the target is q = (1 − ε)·e_y + ε·u with u the
uniform distribution over the K tags, for every α. This differs from the cross-entropy with label
smoothing of ``torch.nn.functional.cross_entropy`` only by the constant Shannon entropy H(q) (that
one is the cross-entropy H(q, p) = KL(q ‖ p) + H(q)); here the loss is 0 exactly when π(z) = q.

**Tempering** (Dabre & Fujita, Eqs. 1–2 of papers/softmax-tempering.txt): with temperature T the loss is T · L_Ω(z / T; q). Since
T · Ω*(z / T) = (TΩ)*(z), this is the Fenchel–Young loss of the regularizer T·Ω:

    T · L_Ω(z / T; q) = L_{TΩ}(z; q),     π_{TΩ}(z) = π_Ω(z / T),     gradient π_Ω(z / T) − q.

For every α, T > 1 makes the training-time distribution flatter (for α > 1 also of larger support),
so the model must spread its scores T times further to reach the same target; at test time the
mapping is applied to z itself (T = 1), so predictions come out sharper (sparser for α > 1).
"""

from __future__ import annotations

import torch
from entmax import entmax15, entmax_bisect, sparsemax

from easyfirst.errors import InputError


def output_distribution(scores: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    """π_α(scores) over the last dimension: softmax (α = 1), 1.5-entmax, sparsemax (α = 2), or α-entmax.

    ``scores`` ``(..., K)`` → probabilities ``(..., K)``, each row on the simplex; for α > 1 rows may hold
    exact zeros.
    """
    if alpha == 1.0:
        return torch.softmax(scores, dim=-1)
    if alpha == 2.0:
        return sparsemax(scores, dim=-1)
    if alpha == 1.5:
        return entmax15(scores, dim=-1)
    if alpha <= 1.0:
        raise ValueError(f"alpha must be >= 1, not {alpha}")
    return entmax_bisect(scores, alpha=alpha, dim=-1)


def tsallis_negentropy(p: torch.Tensor, alpha: float) -> torch.Tensor:
    """Ω_α(p) (Eq. 6 of the label-smoothing paper), summed over the last dimension: ``(..., K)`` → ``(...)``."""
    if alpha == 1.0:
        return torch.special.xlogy(p, p).sum(-1)
    return (p.pow(alpha).sum(-1) - 1) / (alpha * (alpha - 1))


def fenchel_young(scores: torch.Tensor, q: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    """L_Ω_α(z; q) for each row: ``scores`` and ``q`` ``(N, K)`` → ``(N,)``; ``q`` rows on the simplex.

    The gradient with respect to ``scores`` is π(z) − q (no gradient flows into ``q``).
    """
    if alpha == 1.0:  # Ω*(z) = logsumexp(z) in closed form
        conjugate = torch.logsumexp(scores, dim=-1)
    else:  # Ω*(z) = zᵀp − Ω(p) at p = π(z); by Danskin's theorem p needs no gradient
        with torch.no_grad():
            p = output_distribution(scores, alpha)
        conjugate = (scores * p).sum(-1) - tsallis_negentropy(p, alpha)
    return conjugate + tsallis_negentropy(q, alpha) - (scores * q).sum(-1)


def fenchel_young_loss(
    logits: torch.Tensor,
    target: torch.Tensor,
    *,
    alpha: float = 1.0,
    label_smoothing: float = 0.0,
    temperature: float = 1.0,
    weight: torch.Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> torch.Tensor:
    """The α-entmax Fenchel–Young loss with label smoothing ε, temperature T and class weights.

    ``logits`` ``(..., K)``, ``target`` ``(...)`` class ids (``ignore_index`` for padding), ``weight``
    ``(K,)`` per-class weights applied by the gold class. Per position the loss is
    ``weight[y] · T · L_Ω_α(z / T; (1 − ε)e_y + εu)``; ``reduction`` ``"mean"`` divides the sum by the
    sum of the weights of the counted positions (as ``torch.nn.functional.cross_entropy`` does),
    ``"sum"`` sums, ``"none"`` returns the ``(...)`` tensor with 0 at ignored positions.
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"reduction must be mean, sum or none, not {reduction!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1], not {label_smoothing}")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, not {temperature}")
    k = logits.shape[-1]
    scores, gold = logits.reshape(-1, k), target.reshape(-1)
    if alpha == 1.0 and not label_smoothing:  # softmax cross-entropy: torch's kernel, a few operations
        losses = temperature * torch.nn.functional.cross_entropy(
            scores / temperature if temperature != 1.0 else scores,
            gold,
            weight=None if weight is None else weight.to(scores.dtype),
            ignore_index=ignore_index,
            reduction=reduction,
        )
        return losses.view(target.shape) if reduction == "none" else losses
    keep = gold != ignore_index
    scores, y = scores[keep], gold[keep]
    q = torch.nn.functional.one_hot(y, k).to(scores.dtype)
    if label_smoothing:
        q = (1 - label_smoothing) * q + label_smoothing / k
    losses = temperature * fenchel_young(scores / temperature, q, alpha)
    w = torch.ones_like(losses) if weight is None else weight.to(losses.dtype)[y]
    losses = losses * w
    if reduction == "mean":
        return losses.sum() / w.sum()  # nan when nothing is counted, as cross_entropy
    if reduction == "sum":
        return losses.sum()
    full = losses.new_zeros(gold.shape)
    full[keep] = losses
    return full.view(target.shape)


def class_weight_vector(weights: dict[str, float], tags: list[str]) -> torch.Tensor | None:
    """Per-tag weights ``(K,)`` in the order of ``tags`` (1 for tags not named); None when none is given."""
    unknown = sorted(set(weights) - set(tags))
    if unknown:
        raise InputError(
            f"class weight for a tag the training data does not have: {', '.join(unknown)} "
            f"(tags: {', '.join(tags)})"
        )
    if not weights:
        return None
    return torch.tensor([weights.get(tag, 1.0) for tag in tags])
