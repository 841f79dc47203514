"""The Fenchel–Young losses against independent computations: the definition Ω*(z) + Ω(q) − zᵀq with a
slow entmax solver, the entmax package's losses, torch's cross-entropy, Prop. 1 of the smoothing paper,
the gradient π(z) − q, and gradcheck in float64."""

from __future__ import annotations

import math

import pytest
import torch
from entmax import entmax15_loss, entmax_bisect_loss, sparsemax_loss

from easyfirst.losses import fenchel_young_loss, output_distribution
from reference import slow_entmax, tsallis

ALPHAS = [1.0, 1.5, 2.0, 1.25, 3.0]


def mapping(z: list[float], alpha: float) -> list[float]:
    if alpha == 1:
        top = max(z)
        e = [math.exp(x - top) for x in z]
        return [x / math.fsum(e) for x in e]
    return slow_entmax(z, alpha)


def by_definition(z: list[float], q: list[float], alpha: float) -> float:
    """Ω*(z) + Ω(q) − zᵀq with Ω*(z) = zᵀp − Ω(p) at the slow solver's p = π(z)."""
    p = mapping(z, alpha)
    conjugate = math.fsum(a * b for a, b in zip(z, p, strict=True)) - tsallis(p, alpha)
    return conjugate + tsallis(q, alpha) - math.fsum(a * b for a, b in zip(z, q, strict=True))


def smoothed(y: int, k: int, epsilon: float) -> list[float]:
    return [(1 - epsilon) * (i == y) + epsilon / k for i in range(k)]


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("epsilon", [0.0, 0.1])
def test_loss_is_the_fenchel_young_definition(alpha, epsilon):
    torch.manual_seed(0)
    z = torch.randn(6, 5, dtype=torch.float64) * 2
    y = torch.randint(0, 5, (6,))
    losses = fenchel_young_loss(z, y, alpha=alpha, label_smoothing=epsilon, reduction="none")
    for row in range(6):
        expected = by_definition(z[row].tolist(), smoothed(int(y[row]), 5, epsilon), alpha)
        assert losses[row].item() == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_conjugate_is_a_maximum_over_the_simplex(alpha):
    """Ω*(z) ≥ zᵀr − Ω(r) for every r on the simplex: the loss against any target r is ≥ 0."""
    torch.manual_seed(1)
    z = torch.randn(200, 4, dtype=torch.float64) * 3
    r = torch.distributions.Dirichlet(torch.full((4,), 0.5)).sample((200,)).double()
    from easyfirst.losses import fenchel_young

    assert (fenchel_young(z, r, alpha) >= -1e-12).all()


@pytest.mark.parametrize("alpha", ALPHAS)
def test_mapping_matches_the_slow_solver_and_gives_exact_zeros(alpha):
    z = torch.tensor([[3.0, 1.0, -2.0, 0.5, 2.5]], dtype=torch.float64)
    p = output_distribution(z, alpha)[0]
    assert torch.allclose(p, torch.tensor(mapping(z[0].tolist(), alpha), dtype=torch.float64), atol=1e-9)
    assert p.sum().item() == pytest.approx(1.0, abs=1e-12)
    if alpha > 1:
        assert p[2].item() == 0.0  # far below the threshold: exactly zero, not merely small
    else:
        assert (p > 0).all()


def test_agrees_with_the_entmax_package_losses_and_torch_cross_entropy():
    torch.manual_seed(2)
    z = torch.randn(7, 6, dtype=torch.float64) * 2
    y = torch.randint(0, 6, (7,))
    fy = lambda a: fenchel_young_loss(z, y, alpha=a, reduction="none")  # noqa: E731
    torch.testing.assert_close(fy(2.0), sparsemax_loss(z, y))
    torch.testing.assert_close(fy(1.5), entmax15_loss(z, y))
    torch.testing.assert_close(fy(1.25), entmax_bisect_loss(z, y, alpha=1.25))
    torch.testing.assert_close(fy(1.0), torch.nn.functional.cross_entropy(z, y, reduction="none"))


def test_smoothed_softmax_loss_is_torch_label_smoothing_minus_the_target_entropy():
    """torch's smoothed cross-entropy is H(q, p) = KL(q ‖ p) + H(q); the FY loss is KL(q ‖ p)."""
    torch.manual_seed(3)
    k, epsilon = 6, 0.1
    z = torch.randn(8, k, dtype=torch.float64) * 3
    y = torch.randint(0, k, (8,))
    high, low = 1 - epsilon + epsilon / k, epsilon / k
    entropy = -(high * math.log(high) + (k - 1) * low * math.log(low))
    torch_loss = torch.nn.functional.cross_entropy(z, y, label_smoothing=epsilon, reduction="none")
    ours = fenchel_young_loss(z, y, label_smoothing=epsilon, reduction="none")
    torch.testing.assert_close(ours, torch_loss - entropy)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_proposition_1_of_the_smoothing_paper(alpha):
    """L_ε(z, e_y) = L(z, e_y) + ε(z_y − z̄) + C with C = −Ω(e_y) + Ω((1 − ε)e_y + εu)  (Eq. 11)."""
    torch.manual_seed(4)
    k, epsilon = 5, 0.2
    z = torch.randn(6, k, dtype=torch.float64) * 2
    y = torch.randint(0, k, (6,))
    plain = fenchel_young_loss(z, y, alpha=alpha, reduction="none")
    smooth = fenchel_young_loss(z, y, alpha=alpha, label_smoothing=epsilon, reduction="none")
    for row in range(6):
        gold = int(y[row])
        c = -tsallis([float(i == gold) for i in range(k)], alpha) + tsallis(smoothed(gold, k, epsilon), alpha)
        linear = epsilon * (z[row, gold].item() - z[row].mean().item())
        assert smooth[row].item() == pytest.approx(plain[row].item() + linear + c, abs=1e-10)
        assert smooth[row].item() >= 0


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_gradient_is_mapping_minus_target(alpha, temperature):
    """∇_z T·L(z/T; q) = π(z/T) − q (Eq. 9 and 13), with π from the slow solver."""
    torch.manual_seed(5)
    k, epsilon = 5, 0.1
    z = (torch.randn(4, k, dtype=torch.float64) * 2).requires_grad_()
    y = torch.randint(0, k, (4,))
    loss = fenchel_young_loss(
        z, y, alpha=alpha, label_smoothing=epsilon, temperature=temperature, reduction="sum"
    )
    loss.backward()
    for row in range(4):
        p = mapping((z[row] / temperature).tolist(), alpha)
        expected = [pi - qi for pi, qi in zip(p, smoothed(int(y[row]), k, epsilon), strict=True)]
        assert z.grad[row].tolist() == pytest.approx(expected, abs=1e-8)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_gradcheck_float64(alpha):
    torch.manual_seed(6)
    z = (torch.randn(3, 4, dtype=torch.float64) * 2).requires_grad_()
    y = torch.tensor([0, 3, 1])
    weight = torch.tensor([1.0, 2.0, 0.5, 1.0], dtype=torch.float64)
    torch.autograd.gradcheck(
        lambda x: fenchel_young_loss(x, y, alpha=alpha, label_smoothing=0.05, temperature=1.5, weight=weight),
        (z,),
    )


@pytest.mark.parametrize("alpha", ALPHAS)
def test_loss_is_zero_exactly_when_the_mapping_hits_the_target(alpha):
    """z = ∇Ω(q) (log q for α = 1, q^{α−1}/(α−1) otherwise) gives π(z) = q and loss 0."""
    k, epsilon = 4, 0.2
    q = torch.tensor(smoothed(2, k, epsilon), dtype=torch.float64)
    z = q.log() if alpha == 1 else q.pow(alpha - 1) / (alpha - 1)
    y = torch.tensor([2])
    at_target = fenchel_young_loss(z[None], y, alpha=alpha, label_smoothing=epsilon)
    assert at_target.item() == pytest.approx(0.0, abs=1e-9)
    nudged = fenchel_young_loss(
        (z + torch.tensor([0.3, 0, 0, 0]))[None], y, alpha=alpha, label_smoothing=epsilon
    )
    assert nudged.item() > 1e-6
    if alpha > 1:  # sparse mappings reach a one-hot target with a finite margin: loss exactly 0
        assert fenchel_young_loss(torch.tensor([[0.0, 0.0, 5.0, 0.0]]), y, alpha=alpha).item() == 0.0


def test_temperature_one_and_no_smoothing_is_the_plain_loss_and_tempering_matches_dabre_fujita():
    torch.manual_seed(7)
    z = torch.randn(5, 6, dtype=torch.float64)
    y = torch.randint(0, 6, (5,))
    for alpha in ALPHAS:
        plain = fenchel_young_loss(z, y, alpha=alpha)
        same = fenchel_young_loss(z, y, alpha=alpha, temperature=1.0, label_smoothing=0.0)
        assert plain.item() == same.item()
    # Eqs. 1–2: −⟨log softmax(z/T), gold⟩ · T
    tempered = fenchel_young_loss(z, y, temperature=2.0, reduction="none")
    torch.testing.assert_close(
        tempered, 2.0 * torch.nn.functional.cross_entropy(z / 2.0, y, reduction="none")
    )


def test_class_weights_and_padding_follow_torch_cross_entropy():
    torch.manual_seed(8)
    z = torch.randn(2, 5, 4, dtype=torch.float64)
    y = torch.randint(0, 4, (2, 5))
    y[0, 3:] = -100
    weight = torch.tensor([1.0, 3.0, 0.5, 2.0], dtype=torch.float64)
    ours = fenchel_young_loss(z, y, weight=weight)
    theirs = torch.nn.functional.cross_entropy(z.flatten(0, 1), y.flatten(), weight=weight)
    torch.testing.assert_close(ours, theirs)
    none = fenchel_young_loss(z, y, weight=weight, alpha=2.0, reduction="none")
    assert none.shape == (2, 5) and (none[0, 3:] == 0).all()
    manual = sparsemax_loss(z.flatten(0, 1)[y.flatten() >= 0], y.flatten()[y.flatten() >= 0])
    w = weight[y.flatten()[y.flatten() >= 0]]
    assert fenchel_young_loss(z, y, weight=weight, alpha=2.0).item() == pytest.approx(
        ((manual * w).sum() / w.sum()).item()
    )
    assert fenchel_young_loss(z, y, alpha=2.0, reduction="sum").item() == pytest.approx(manual.sum().item())
