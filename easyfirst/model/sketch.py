"""The sketch-refinement decoder of the neural easy-first tagger (Alg. 2, Eqs. 1–7).

At step n = 1..N, for every word i:

    c_iⁿ = concat(h_{i−w..i+w}, s_{i−w..i+w}ⁿ⁻¹)                     (Eq. 1, zeros past the edges)
    z_iⁿ = vᵀ tanh(affine(c_iⁿ))                                    (Eq. 2)
    αⁿ   = ρ(zⁿ; βⁿ⁻¹)                                              (Eq. 3; csoftmax(zⁿ; 1 − βⁿ⁻¹), Eq. 11)
    s_iⁿ = s_iⁿ⁻¹ + α_iⁿ tanh(affine(Σ_j α_jⁿ c_jⁿ))                (Eq. 4, single-state NEF-S)
    s_iⁿ = s_iⁿ⁻¹ + α_iⁿ tanh(affine(c_iⁿ))                         (Eq. 7, full-state NEF-F)
    βⁿ   = βⁿ⁻¹ + αⁿ

Both affine maps act on the window c_iⁿ, so each splits into an encoder half, a 1-D convolution over H
that does not change across steps and is computed once, and a sketch half, a convolution over the
sketches recomputed at each step. The two maps (scores and sketch update) share one convolution per half.
For NEF-S, affine(Σ_j α_j c_j) = Σ_j α_j affine(c_j) because Σ_j α_j = 1, so the same per-word
projections serve both variants.

Batching: every sentence b runs its own N_b steps (N_b = L_b by default, a fixed N, or min(N, L_b)
when N is read as a maximum, ``steps_beyond_length = false``) and stops changing afterwards (α = 0).
Padding has budget 0 and score −∞, so it never receives attention.

More steps than words: with a budgeted ρ (csoftmax, csparsemax, hard), N = L steps exhaust every word's
unit of budget (β^L = 1). When N > L, each word gets a fresh unit of budget every L steps: at step n the
budget is u = ⌈n / L⌉ − βⁿ⁻¹, so the problem is always feasible (Σu ≥ 1, never NaN) and each block of L
steps is again even; ``hard`` covers every word once more per block, and left-to-right and right-to-left
start over.

Scores (see easyfirst.ops.attention): Eq. 2, optionally z/T (``temperature``) and z − λβⁿ⁻¹
(``coverage_penalty``, §4); for ``hard``, the output layer's best tag score on concat(h_i, s_iⁿ⁻¹)
(``score_words``), taken without gradient; none for the prescribed orders.

This loop is the reference for every setting, dtype and device (the GPU runs it). Backend ``numba``
(compiled CPU loops) computes the same function faster where it declares the settings
(easyfirst.backends); the model never calls it itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from easyfirst.model.settings import DecoderSettings
from easyfirst.ops.attention import ATTENTIONS
from easyfirst.ops.window import WindowConv1d


@dataclass
class WordScores:
    """The output layer of Eq. 6 as vanilla easy-first reads it (Alg. 1, line 4): the tag scores
    f(i, ·; x, S) = W [h_i; s_i] + b = ``fixed`` + W_s s_i of every word for the sketches S, split into
    the part that does not change across steps, ``fixed`` ``(B, L, K)`` (W_h h_i + b; b alone without
    the concatenation), and the sketch's columns ``weight`` ``(K, D_s)``."""

    fixed: torch.Tensor
    weight: torch.Tensor

    def __call__(self, sketch: torch.Tensor) -> torch.Tensor:
        """Tag scores ``(B, L, K)`` for sketches ``(B, L, D_s)``."""
        return self.fixed + sketch @ self.weight.T


def sentence_steps(lengths: torch.Tensor, steps: int | None, beyond_length: bool = True) -> torch.Tensor:
    """N_b, the sketch steps each sentence runs ``(B,)``, from its length L_b: L_b when ``steps`` is None;
    else N, or min(N, L_b) when not ``beyond_length`` (N as a maximum number of steps)."""
    if steps is None:
        return lengths
    return torch.full_like(lengths, steps) if beyond_length else lengths.clamp_max(steps)


class SketchDecoder(nn.Module):
    """Refines a sketch ``S`` over N steps of attention; NEF-F when ``full_state`` else NEF-S."""

    def __init__(
        self,
        input_dim: int,
        sketch_dim: int = 50,
        attention_dim: int = 50,
        window: int = 2,
        full_state: bool = True,
        attention: str = "csoftmax",
        temperature: float = 1.0,
        coverage_penalty: float = 0.0,
    ):
        super().__init__()
        width = 2 * window + 1
        self.sketch_dim, self.attention_dim, self.full_state = sketch_dim, attention_dim, full_state
        self.attention = ATTENTIONS[attention]
        self.temperature, self.coverage_penalty = temperature, coverage_penalty
        # affine(c_i) for [scores | sketch update], split into the input and the sketch halves of Eq. 1
        self.input_half = WindowConv1d(input_dim, attention_dim + sketch_dim, width)  # nn.Conv1d, faster here
        self.sketch_half = WindowConv1d(sketch_dim, attention_dim + sketch_dim, width, bias=False)
        self.v = nn.Linear(attention_dim, 1, bias=False)

    @classmethod
    def from_settings(cls, input_dim: int, d: DecoderSettings, full_state: bool) -> SketchDecoder:
        """The decoder of the ``[model]`` settings ``d`` (its part ``decoder``) over states of ``input_dim``."""
        return cls(
            input_dim,
            d.sketch_dim,
            d.attention_dim,
            d.window,
            full_state,
            d.attention,
            d.attention_temperature,
            d.coverage_penalty,
        )

    def forward(
        self,
        states: torch.Tensor,
        mask: torch.Tensor,
        steps: int | None = None,
        score_words: WordScores | None = None,
        beyond_length: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Run the sketch steps.

        Args:
            states: encoder states ``H`` ``(B, L, D_h)``, zero on padding.
            mask: ``(B, L)`` bool, true on real words.
            steps: N, or None for N = L_b for each sentence b.
            score_words: for ``hard`` attention, the output layer of Eq. 6 (tag scores of the
                sketches), taken without gradient.
            beyond_length: with N fixed, whether a sentence shorter than N runs all N steps (true) or
                stops after its L_b (N_b = min(N, L_b): N as a maximum number of steps).

        Returns:
            the final sketches ``Sᴺ`` ``(B, L, D_s)`` and the attention history ``(B, N_max, L)``,
            whose rows past a sentence's own N_b are zero.
        """
        size, length = mask.shape
        if self.attention.scores == "output" and score_words is None:
            raise ValueError("hard attention needs score_words (the output layer)")
        lengths, n_steps, total, common = self.step_counts(mask, steps, beyond_length)
        maskf = mask.to(states.dtype)
        fixed = self.input_half(states.transpose(1, 2))  # (B, Dz + Ds, L), the part of Eq. 1 from H
        sketch = states.new_zeros(size, self.sketch_dim, length)
        beta = states.new_zeros(size, length)
        history = []
        for n in range(1, total + 1):
            affine = fixed if n == 1 else fixed + self.sketch_half(sketch)  # S⁰ = 0
            scores = self.scores(affine, sketch, beta, score_words)
            if self.attention.budgeted:
                rounds = (
                    1 if n <= common else torch.ceil(n / lengths.clamp_min(1).to(states.dtype)).unsqueeze(1)
                )
                budget = (rounds - beta).clamp_min(0) * maskf
            else:
                budget = maskf
            alpha = self.attention.apply(scores, mask, budget, n)  # Eq. 3
            if n > common:  # sentences past their own N_b stop changing
                alpha = alpha * (n <= n_steps).to(states.dtype).unsqueeze(1)  # (B, 1)
            update = affine[:, self.attention_dim :]
            if self.full_state:  # Eq. 7
                sketch = sketch + alpha.unsqueeze(1) * torch.tanh(update)
            else:  # Eq. 4
                pooled = torch.tanh((update * alpha.unsqueeze(1)).sum(-1, keepdim=True))
                sketch = sketch + alpha.unsqueeze(1) * pooled
            beta = beta + alpha
            history.append(alpha)
        attention = torch.stack(history, 1) if history else states.new_zeros(size, 0, length)
        return sketch.transpose(1, 2), attention

    def step_counts(
        self, mask: torch.Tensor, steps: int | None, beyond_length: bool
    ) -> tuple[torch.Tensor, torch.Tensor, int, int]:
        """The lengths L_b and steps N_b of the sentences ``(B,)``, N_max (``total``), and ``common``:
        up to this step every sentence is active and has budget round 1 (n ≤ L_b), so the per-step masks
        would be all ones there and are skipped (one host read per batch, none per step)."""
        size = mask.shape[0]
        lengths = mask.sum(1)
        n_steps = sentence_steps(lengths, steps, beyond_length)
        total = int(n_steps.max()) if size else 0
        common = int(torch.minimum(n_steps, lengths).min()) if size else 0
        return lengths, n_steps, total, common

    def scores(
        self,
        affine: torch.Tensor,
        sketch: torch.Tensor,
        beta: torch.Tensor,
        score_words: WordScores | None,
    ) -> torch.Tensor:
        """The scores zⁿ ``(B, L)`` that ρ reads at this step (zeros for the prescribed orders).

        ``affine`` ``(B, D_z + D_s, L)``: the affine map of Eq. 1's windows; ``sketch`` ``(B, D_s, L)``:
        Sⁿ⁻¹; ``beta`` ``(B, L)``: βⁿ⁻¹.
        """
        source = self.attention.scores
        if source == "output":  # vanilla easy-first: f(i, y_i; x, S) maximised over y_i (Alg. 1, line 4)
            with torch.no_grad():
                return score_words(sketch.transpose(1, 2)).amax(-1)
        if source is None:
            return beta.new_zeros(beta.shape)
        z = self.v(torch.tanh(affine[:, : self.attention_dim]).transpose(1, 2)).squeeze(-1)  # Eq. 2
        if self.temperature != 1.0:
            z = z / self.temperature
        if self.coverage_penalty:
            z = z - self.coverage_penalty * beta
        return z
