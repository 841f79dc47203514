"""The sketch loop of Alg. 2 with csoftmax attention (Eqs. 1–7, 11) as ONE autograd Function.

Backend ``fused`` (:data:`FUSED`): the same mathematics as :class:`easyfirst.model.sketch.SketchDecoder`'s
step loop, which stays the reference (and serves every other attention), for ``attention = "csoftmax"``,
the default: NEF-F and NEF-S, N fixed or N = L, N > L with a fresh unit of budget every L steps,
temperature and coverage penalty, any batch, device and dtype: what runs on the GPU, where the
compiled CPU path (easyfirst.backends.compiled) does not. In tagging on
the CPU it also computes a BiLSTM wider than the compiled one takes (:func:`encode`: the padded batch
through oneDNN's LSTM, where the reference packs it; no copy of the LSTM's equations).

Why: at the sizes the decoder runs at (16 sentences × ~20 words), a sketch step of the generic loop is
about a hundred small tensor operations, each with an autograd node, around three matrix products, and
their fixed cost dominated the decoder's time. Here the forward keeps only what the backward needs, in
preallocated buffers, and the backward runs by hand through the steps:

- forward, step n: cols = windows(Sⁿ⁻¹) (one copy), a = fixed + cols·Wᵀ (one GEMM, computed as 2a, see
  :func:`_tanh_of_half`), t = tanh(a), zⁿ = t_z·v (/T, −λβ), u = (⌈n/L⌉ − βⁿ⁻¹)₊ on words,
  (αⁿ, A) = csoftmax(zⁿ; u) by :func:`csoftmax_forward`, Sⁿ = Sⁿ⁻¹ + αⁿ ⊙ t_s (NEF-F) or
  αⁿ tanh(Σ_j α_jⁿ a_s,j) (NEF-S), βⁿ = βⁿ⁻¹ + αⁿ. Stored per step: cols, t, βⁿ⁻¹, αⁿ and A (and, for
  NEF-S, 2a and the pooled tanh); S itself is updated in place;
- backward, step n (from N down to 1): dα from the outputs and from Sⁿ, βⁿ; Prop. 1's Jacobian
  :func:`csoftmax_backward` gives dz and du; da = tanh'(t) ⊙ [dz v, dt_s]; dSⁿ⁻¹ += the transposed window
  map of da, one GEMM against the flipped weight: dS_j = Σ_k W_{K−1−k}ᵀ da_{j+k−w}; d fixed += da and
  dW += daᵀ cols (one GEMM);
- at the end: dv = Σ_n dzⁿ t_zⁿ, one matrix-vector product over all steps.

Layout ``(B, L, C)`` throughout (the input half's output is that, transposed). Under ``no_grad`` or
``inference_mode`` nothing is stored (:func:`fused_sketch_loop` runs the loop in one slot of each buffer),
and, where Σ|v|/T bounds every score within csoftmax's exp range (checked once per batch, not at every
step), the batch is sorted by decreasing N_b and each step runs over the sentences still running only:
a batch of mixed lengths (a server's group) ran most of its N = L steps for its longest sentence, over
every row. The tags are those of the loop over every row (EWT dev and test, batch sizes 1, 16 and 256);
a probability may differ in its last bit (a matrix-vector product's rounding depends on the rows' count).
No host synchronisation inside the step loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from easyfirst.backends.declaration import ANY, Backend
from easyfirst.ops.constrained import _EXP_RANGE, csoftmax_backward, csoftmax_forward
from easyfirst.ops.window import flat_weight, window_view


@dataclass(frozen=True)
class LoopPlan:
    """What the step loop needs besides tensors: the decoder's settings and the batch's step counts.

    ``steps``: N_max, the number of steps of the longest-running sentence; ``common``: up to this step
    every sentence is active and in budget round 1, so the per-sentence masks are skipped.
    """

    full_state: bool
    temperature: float
    coverage_penalty: float
    steps: int
    common: int


class _Saved:
    """The forward's per-step records, in preallocated ``(N, …)`` buffers (one slot when not ``store``).

    Sⁿ itself is updated in place: the backward reads it only through the windows, which step n + 1
    copies anyway (into ``cols``, kept for the weight gradient).
    """

    def __init__(self, fixed: torch.Tensor, sketch_dim: int, width: int, plan: LoopPlan, store: bool):
        size, length, out = fixed.shape
        slots = plan.steps if store else 1
        pad = width // 2
        # Sⁿ with w zero words on each side, so that the windows of Eq. 1 are a view
        self.sketch = fixed.new_zeros(size, length + 2 * pad, sketch_dim)
        self.cols: list[torch.Tensor] = []  # windows(Sⁿ⁻¹) of steps n ≥ 2, (B, L, K, D_s) each
        self.betas = fixed.new_zeros(slots + 1, size, length)  # β⁰..βᴺ
        self.tanhs = fixed.new_empty(slots, size, length, out)  # tanh(aⁿ)
        self.affines = None if plan.full_state else fixed.new_empty(slots, size, length, out)  # 2aⁿ
        self.pooled = None if plan.full_state else fixed.new_empty(slots, size, 1, sketch_dim)
        self.alphas: list[torch.Tensor] = []  # csoftmax's αⁿ, before sentences past N_b are zeroed
        self.free: list[torch.Tensor] = []  # its free set A
        self.store = store

    def slot(self, n: int) -> int:
        """Index of step n's records (n from 1); β before step n is at ``slot(n)``, its windows at
        ``slot(n) - 1``."""
        return n - 1 if self.store else 0


def _tanh_of_half(x2: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """tanh(x2 / 2) = 2σ(x2) − 1, into ``out``.

    The loop keeps 2a, the affine map times 2 (scaled for free inside its matrix product): on this
    project's CPU, float32 ``torch.tanh`` took 71 µs on a (16, 17, 100) tensor, ``torch.sigmoid`` 12 µs.
    Absolute error ~1 ulp of 1 near 0.
    """
    torch.sigmoid(x2, out=out)
    return out.mul_(2).sub_(1)  # (torch.lerp(−1, 1, σ), one operation, took twice as long)


def run_loop(
    fixed: torch.Tensor,
    weight: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor,
    n_steps: torch.Tensor,
    plan: LoopPlan,
    store: bool,
) -> tuple[torch.Tensor, torch.Tensor, _Saved]:
    """The forward loop. ``fixed`` ``(B, L, D_z + D_s)`` contiguous (the encoder half of affine(c));
    ``weight`` ``(D_z + D_s, D_s, K)`` (the sketch half); ``v`` ``(1, D_z)``; ``mask`` ``(B, L)``;
    ``n_steps`` ``(B,)`` long. Returns Sᴺ ``(B, L, D_s)``, the history ``(B, N, L)`` and the records.

    Without ``store`` (tagging) and with every score known to be in csoftmax's exp range
    (:func:`_scores_in_range`), the batch runs sorted by decreasing N_b and each step only over the
    sentences that still run (:class:`_Running`): a sentence past its N_b would only have its α
    multiplied by zero, and the steps of a batch of mixed lengths (a server's group) ran mostly for
    its longest sentence. The rows that run are computed as before, bit for bit."""
    size, length, out = fixed.shape
    _, sketch_dim, width = weight.shape
    score_dim, pad = out - sketch_dim, width // 2
    doubled = (flat_weight(weight).t() * 2).contiguous()  # 2W (K·D_s, O), the column order of `cols`
    in_range = not store and _scores_in_range(fixed, doubled, v, plan)
    running = _Running(n_steps, in_range)
    fixed, mask = running.sorted(fixed), running.sorted(mask)
    saved = _Saved(fixed, sketch_dim, width, plan, store)
    maskf = mask.to(fixed.dtype)
    lengths = mask.sum(1).clamp_min(1).to(fixed.dtype).unsqueeze(1)  # (B, 1)
    fixed = fixed * 2  # 2·(encoder half): the loop computes 2a (see _tanh_of_half)
    scratch = fixed.new_empty(size, length, out)
    history = fixed.new_zeros(size, plan.steps, length)
    words, round_one = mask.sum(1).tolist() if in_range else [], plan.common
    for n in range(1, plan.steps + 1):
        k = saved.slot(n)
        if (rows := running.count(n)) != running.rows:  # views of the sentences that run (each costs a call)
            running.rows, b = rows, slice(0, rows)
            windows, fixed_b, v_row = window_view(saved.sketch[b], width), fixed[b], v[0]
            sketch, word_mask, word_lengths = saved.sketch[b, pad : pad + length], maskf[b], lengths[b]
            tanhs, betas = saved.tanhs[:, b].unbind(0), saved.betas[:, b].unbind(0)
            t_scores = saved.tanhs[:, b, :, :score_dim].flatten(1, 2).unbind(0)  # (B·L, D_z) each
            t_sketch = saved.tanhs[:, b, :, score_dim:].unbind(0)
            targets = (scratch[b],) if plan.full_state else saved.affines[:, b].unbind(0)
            # every sentence that runs is within its first L_b steps: its budget is (1 − β)₊ up to there
            round_one = min(words[:rows], default=0) if in_range else plan.common
        beta = betas[k]
        if n == 1:  # S⁰ = 0
            affine = fixed_b  # 2a, as every `affine` below
            if not plan.full_state:
                targets[k].copy_(affine)  # NEF-S's backward reads a_s of every step
        else:
            cols = windows.contiguous()  # the windows of Eq. 1 on Sⁿ⁻¹
            if store:
                saved.cols.append(cols)
            target = targets[0 if plan.full_state else k]
            affine = torch.addmm(
                fixed_b.view(-1, out), cols.view(-1, width * sketch_dim), doubled, out=target.view(-1, out)
            ).view(rows, length, out)
        _tanh_of_half(affine, tanhs[k])
        z = torch.mv(t_scores[k], v_row).view(rows, length)  # Eq. 2
        if plan.temperature != 1.0:
            z = z / plan.temperature
        if plan.coverage_penalty:
            z = z - plan.coverage_penalty * beta
        if n <= round_one:  # u = (1 − β)₊ on words; β is exactly 0 on padding (α = 0 where u = 0)
            budget = torch.sub(word_mask, beta).clamp_min_(0)
        else:  # a fresh unit every L_b steps
            budget = (torch.ceil(n / word_lengths) - beta).clamp_min_(0).mul_(word_mask)
        alpha, free = csoftmax_forward(z, budget, exp_space=in_range or None)  # Eq. 3, ρ = csoftmax(z; u)
        if store:
            saved.alphas.append(alpha)
            saved.free.append(free)
        shown = alpha
        if n > plan.common and not in_range:  # sentences past their N_b (when they still run) add nothing
            shown = alpha * (n <= n_steps).to(alpha.dtype).unsqueeze(1)
        history[:rows, n - 1] = shown
        if plan.full_state:  # Eq. 7
            update = t_sketch[k]
        else:  # Eq. 4: affine(Σ_j α_j c_j) = Σ_j α_j affine(c_j)
            pooled = torch.bmm(shown.unsqueeze(1), affine[..., score_dim:])
            update = _tanh_of_half(pooled, saved.pooled[k, :rows])
        sketch.addcmul_(shown.unsqueeze(-1), update)
        if store:
            torch.add(beta, shown, out=betas[k + 1])
        else:
            beta.add_(shown)
    return running.restored(saved.sketch[:, pad : pad + length]), running.restored(history), saved


def _scores_in_range(fixed: torch.Tensor, doubled: torch.Tensor, v: torch.Tensor, plan: LoopPlan) -> bool:
    """Whether every score of the loop is known, before it runs, to lie within csoftmax's exp range
    (easyfirst.ops.constrained._EXP_RANGE, checked there at every step otherwise): on the CPU, without
    a coverage penalty, |zⁿ_i| = |tanh(aⁿ_i)_z · v| / T ≤ Σ|v| / T, as 2σ − 1 lies in [−1, 1] wherever
    the affine map is not NaN, which it is not with finite inputs and weights."""
    if fixed.device.type != "cpu" or plan.coverage_penalty or not fixed.numel():
        return False
    bound = float(v.abs().sum()) / plan.temperature
    return bound * 1.001 + 1 <= _EXP_RANGE and bool(fixed.isfinite().all() and doubled.isfinite().all())


class _Running:
    """The sentences that run each step: with ``shrink`` (tagging), the batch is sorted by decreasing
    N_b and they are its first :meth:`count`; without, all of it, in its own order."""

    def __init__(self, n_steps: torch.Tensor, shrink: bool):
        self.size = self.running = len(n_steps)
        self.rows = -1  # the sentences the loop's views were made for
        self.order = self.back = self.steps = None
        if shrink:
            steps = n_steps.tolist()
            order = sorted(range(self.size), key=lambda b: -steps[b])
            self.steps = [steps[b] for b in order]
            if order != list(range(self.size)):
                self.order = torch.tensor(order, device=n_steps.device)
                self.back = torch.argsort(self.order)

    def count(self, n: int) -> int:
        """How many sentences run step n (called for n = 1, 2, … in turn)."""
        while self.steps is not None and self.running and self.steps[self.running - 1] < n:
            self.running -= 1
        return self.running

    def sorted(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor if self.order is None else tensor[self.order]

    def restored(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor if self.back is None else tensor[self.back]


class FusedSketchFunction(torch.autograd.Function):
    """Sᴺ and the attention history from the encoder half, the sketch-half weight and v (see module)."""

    @staticmethod
    def forward(ctx, fixed, weight, v, mask, n_steps, plan: LoopPlan):
        sketch, history, saved = run_loop(fixed, weight, v, mask, n_steps, plan, store=True)
        ctx.save_for_backward(weight, v, mask, n_steps, history)
        ctx.saved, ctx.plan = saved, plan
        return sketch, history

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_sketch, grad_history):
        weight, v, mask, n_steps, history = ctx.saved_tensors
        saved, plan = ctx.saved, ctx.plan
        steps = plan.steps
        size, padded, sketch_dim = saved.sketch.shape
        out, _, width = weight.shape
        pad, length = width // 2, padded - 2 * (width // 2)
        score_dim = out - sketch_dim
        dtype = history.dtype
        lengths = mask.sum(1).clamp_min(1).to(dtype).unsqueeze(1)
        # the transposed window map: dS_j = Σ_k' W_{K−1−k'}ᵀ da_{j+k'−w}, rows (k', o) as in `d_cols`
        back = weight.flip(-1).permute(2, 0, 1).reshape(width * out, sketch_dim)
        g_sketch = history.new_zeros(size, length, sketch_dim)  # dSⁿ
        # the fold's product, (D_s, B, L): MKL writes this orientation faster (152 against 180 µs at
        # B·L = 272 here), and the strided reads of dS stay out of the step's element-wise operations
        g_store = history.new_empty(sketch_dim, size, length)
        if grad_sketch is not None:
            g_sketch.copy_(grad_sketch)
        g_beta = history.new_zeros(size, length)
        d_a = history.new_empty(size, length, out)  # daⁿ
        d_fixed = history.new_zeros(size, length, out)  # Σ_n daⁿ: the encoder half is the same at every step
        d_padded = history.new_zeros(size, padded, out)  # daⁿ with w zero words on each side
        d_flat = flat_weight(weight).new_zeros(out, width * sketch_dim) if ctx.needs_input_grad[1] else None
        upstream = history.new_empty(size, length, out)  # d tanh(aⁿ)
        d_cols = history.new_empty(size, length, width, out)
        # per-step views, made once (each indexing is a call with its own fixed cost)
        tanhs, shown_words = saved.tanhs.unbind(0), history.unsqueeze(-1).unbind(1)
        t_scores, t_sketch = saved.tanhs[..., :score_dim].unbind(0), saved.tanhs[..., score_dim:].unbind(0)
        d_windows, d_middle = window_view(d_padded, width), d_padded[:, pad : pad + length]
        grads = grad_history.unbind(1) if grad_history is not None else None
        betas, v_row = saved.betas.unbind(0), v[0]
        up_scores, up_sketch = upstream[..., :score_dim], upstream[..., score_dim:]
        flat_sketch, flat_cols = g_store.view(sketch_dim, -1), d_cols.view(-1, width * out).t()
        back = back.t()
        d_scores = []  # dzⁿ of Eq. 2 before T, from step N down
        # u = (rounds − β)₊ · mask: clamp_min passes the gradient where rounds − β ≥ 0, as autograd does;
        # with rounds = 1 (steps up to `common`) these gates are one operation for all those steps
        common = min(plan.common, steps)
        gates = ((saved.betas[:common] <= 1) & mask).to(dtype).unbind(0)
        for n in range(steps, 0, -1):
            k = n - 1
            d_shown = g_beta if grads is None else grads[k] + g_beta
            if plan.full_state:  # Sⁿ = Sⁿ⁻¹ + α ⊙ t_s
                d_shown = d_shown + torch.linalg.vecdot(g_sketch, t_sketch[k])
                torch.mul(shown_words[k], g_sketch, out=up_sketch)
            else:  # Sⁿ = Sⁿ⁻¹ + α pᵀ, p = tanh(αᵀ a_s)
                pooled, a_sketch = saved.pooled[k], saved.affines[k][..., score_dim:]  # p and 2a_s
                shown = shown_words[k].transpose(1, 2)  # (B, 1, L)
                d_pooled = torch.ops.aten.tanh_backward(torch.bmm(shown, g_sketch), pooled)
                d_shown = d_shown + torch.baddbmm(
                    torch.bmm(g_sketch, pooled.transpose(1, 2)), a_sketch, d_pooled.transpose(1, 2), alpha=0.5
                ).squeeze(-1)
                torch.mul(shown_words[k], d_pooled, out=up_sketch)
            if n > plan.common:  # sentences past their own N_b were zeroed
                d_shown = d_shown * (n <= n_steps).to(dtype).unsqueeze(1)
            d_z, d_budget = csoftmax_backward(saved.alphas[k], saved.free[k], d_shown)  # Prop. 1
            gate = gates[k] if n <= common else ((betas[k] <= torch.ceil(n / lengths)) & mask).to(dtype)
            g_beta.addcmul_(gate, d_budget, value=-1)  # βⁿ⁻¹ → βⁿ is the identity, plus u's and z's terms
            if plan.coverage_penalty:
                g_beta.sub_(d_z, alpha=plan.coverage_penalty)
            if plan.temperature != 1.0:
                d_z = d_z / plan.temperature
            d_scores.append(d_z)
            torch.mul(d_z.unsqueeze(-1), v_row, out=up_scores)
            if plan.full_state:
                torch.ops.aten.tanh_backward.grad_input(upstream, tanhs[k], grad_input=d_a)
            else:  # a_s enters through the pooled sum only: its gradient goes in directly (no tanh')
                torch.ops.aten.tanh_backward.grad_input(
                    up_scores, t_scores[k], grad_input=d_a[..., :score_dim]
                )
                d_a[..., score_dim:] = up_sketch
            d_fixed.add_(d_a)
            if n > 1:  # the sketch half read Sⁿ⁻¹'s windows (S⁰ = 0 was skipped)
                d_middle.copy_(d_a)
                d_cols.copy_(d_windows)
                torch.mm(back, flat_cols, out=flat_sketch)
                g_sketch.add_(g_store.permute(1, 2, 0))
                if d_flat is not None:
                    d_flat.addmm_(d_a.view(-1, out).t(), saved.cols[k - 1].view(-1, width * sketch_dim))
        d_weight = d_v = None
        if ctx.needs_input_grad[1]:
            d_weight = d_flat.view(out, width, sketch_dim).transpose(1, 2)
        if ctx.needs_input_grad[2]:
            d_scores = torch.stack(d_scores[::-1]).view(1, -1)
            d_v = (d_scores @ saved.tanhs[..., :score_dim].reshape(-1, score_dim)).view_as(v)
        return d_fixed if ctx.needs_input_grad[0] else None, d_weight, d_v, None, None, None


def fused_sketch_loop(
    fixed: torch.Tensor,
    weight: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor,
    n_steps: torch.Tensor,
    plan: LoopPlan,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the csoftmax sketch loop: Sᴺ ``(B, L, D_s)`` and the attention history ``(B, N, L)``.

    Args:
        fixed: the encoder half of affine(c_iⁿ) ``(B, L, D_z + D_s)`` (bias included).
        weight: the sketch half's weight ``(D_z + D_s, D_s, K)`` (``nn.Conv1d`` layout).
        v: the score vector of Eq. 2 ``(1, D_z)``.
        mask: ``(B, L)`` bool, true on real words.
        n_steps: ``(B,)`` long, each sentence's own N_b.
        plan: settings and step counts.
    """
    fixed = fixed.contiguous()
    if torch.is_grad_enabled() and (fixed.requires_grad or weight.requires_grad or v.requires_grad):
        return FusedSketchFunction.apply(fixed, weight, v, mask, n_steps, plan)
    sketch, history, _ = run_loop(fixed, weight, v, mask, n_steps, plan, store=False)
    return sketch, history


def decode(decoder, states: torch.Tensor, mask: torch.Tensor, steps, score_words, beyond_length):
    """easyfirst.model.sketch.SketchDecoder.forward by the fused loop, for csoftmax attention."""
    lengths, n_steps, total, common = decoder.step_counts(mask, steps, beyond_length)
    if not total or not mask.shape[1]:  # no step to run: the reference's empty result
        return decoder(states, mask, steps, score_words, beyond_length)
    fixed = decoder.input_half(states.transpose(1, 2))  # (B, Dz + Ds, L), the part of Eq. 1 from H
    plan = LoopPlan(decoder.full_state, decoder.temperature, decoder.coverage_penalty, total, common)
    return fused_sketch_loop(
        fixed.transpose(1, 2), decoder.sketch_half.weight, decoder.v.weight, mask, n_steps, plan
    )


# one direction's weights of an nn.LSTM layer, in torch.lstm's order (with "_reverse": the backward's)
LSTM_WEIGHTS = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")


def encode(encoder, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """easyfirst.model.encoder.BiLSTMEncoder.forward without gradients, on padded batches: ``(B, L, 2H)``,
    zeros on padding.

    The reference packs the batch (``pack_padded_sequence``), and torch's CPU LSTM runs packed input
    through its generic time loop; padded input goes to oneDNN's, 1.1-1.4x faster for the BiLSTM alone
    at the sizes tagging runs (docs/studies/speed.md). Each direction runs on its own: the forward one
    reads the padded batch as it is (a word's state does not depend on the padding after it), the
    backward one the batch with each sentence's words reversed in place (its padding still last), its
    states then put back in order."""
    size, length = mask.shape
    steps = torch.arange(length, device=mask.device)
    lengths = mask.sum(1, keepdim=True)
    # position t of sentence b ↔ position n_b − 1 − t (padding stays): its own inverse
    reverse = torch.where(steps < lengths, lengths - 1 - steps, steps).unsqueeze(-1)
    keep = mask.unsqueeze(-1).to(x.dtype)
    for k, lstm in enumerate(encoder.layers):
        if k:
            x = encoder.between(x)
        start = x.new_zeros(1, size, lstm.hidden_size)
        states = []
        for direction in ("", "_reverse"):
            weights = [getattr(lstm, name + direction) for name in LSTM_WEIGHTS]
            read = x if not direction else x.gather(1, reverse.expand(-1, -1, x.shape[2]))
            # (input, (h₀, c₀), weights, biases, layers, dropout, training, bidirectional, batch_first)
            out = torch.lstm(read, (start, start), weights, True, 1, 0.0, False, False, True)[0]
            states.append(out if not direction else out.gather(1, reverse.expand(-1, -1, out.shape[2])))
        x = torch.cat(states, dim=-1).mul_(keep)
    return x


FUSED = Backend(  # a batch's csoftmax step loop as one autograd Function; in tagging, the BiLSTM padded
    "fused",
    encoder=encode,
    encoder_supports={
        "revision": {1},
        "encoder_layers": ANY,
        "hidden_dim": ANY,
        "dropout_kind": ANY,
        "sentences": ANY,
        "device": {"cpu"},
        "dtype": ANY,
        "training": {False},
        "transformer": {None},
    },
    decoder=decode,
    decoder_supports={
        "revision": {1},
        "model": {"nef-f", "nef-s"},
        "attention": {"csoftmax"},
        "sketch_steps": ANY,
        "steps_beyond_length": ANY,
        "attention_temperature": ANY,
        "coverage_penalty": ANY,
        "sentences": ANY,
        "device": ANY,
        "dtype": ANY,
        "training": ANY,
    },
)
