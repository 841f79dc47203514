"""The fused csoftmax sketch loop (easyfirst.backends.fused) against the generic autograd step loop of
SketchDecoder, which is itself checked against a literal implementation of Eqs. 1–7 in test_model.py:
same sketches, attention history and gradients, in float64, on padded batches of mixed lengths."""

from __future__ import annotations

import pytest
import torch
from test_model import output_layer

from easyfirst.backends.chooser import REFERENCE, choose_backend
from easyfirst.backends.declaration import Backend
from easyfirst.backends.fused import (
    FUSED,
    FusedSketchFunction,
    LoopPlan,
    _Running,
    fused_sketch_loop,
    run_loop,
)
from easyfirst.model.encoder import BiLSTMEncoder
from easyfirst.model.settings import DecoderSettings, ModelConfig
from easyfirst.model.sketch import SketchDecoder, WordScores
from easyfirst.ops.kinds import KINDS

LENGTHS = [5, 1, 3, 7, 0, 6]  # padding, a one-word and an empty sentence
# no empty sentence: the first 4 steps run in the loop's common region (every sentence active, round 1)
LONGER = [6, 4, 5, 6]


def padded_batch(lengths: list[int], dim: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    states = torch.randn(len(lengths), max(lengths), dim, generator=generator, dtype=torch.float64)
    return (states * 2 * mask[..., None]).requires_grad_(), mask


def random_output_layer(states: torch.Tensor, sketch_dim: int, seed: int) -> WordScores:
    """Tag scores from a random output layer (3 tags) on concat(h_i, s_i), for hard attention."""
    generator = torch.Generator().manual_seed(seed + 2)
    weight = torch.randn(3, states.shape[-1] + sketch_dim, generator=generator, dtype=states.dtype)
    return output_layer(states.detach(), weight)


def run_both(
    decoder: SketchDecoder, steps: int | None, lengths: list[int], seed: int = 0, backend: Backend = FUSED
) -> list[dict[str, torch.Tensor]]:
    """Outputs and gradients (of a random linear function of both outputs) of ``backend``'s decoder and the
    reference (for hard attention, with a random output layer of 3 tags)."""
    states, mask = padded_batch(lengths, decoder.input_half.in_channels, seed)
    score_words = random_output_layer(states, decoder.sketch_dim, seed)
    generator = torch.Generator().manual_seed(seed + 1)
    results = []
    for run in (backend.decoder, REFERENCE.decoder):
        decoder.zero_grad(set_to_none=True)
        states.grad = None
        sketch, history = run(decoder, states, mask, steps, score_words, True)
        d_sketch = torch.randn(sketch.shape, generator=generator, dtype=sketch.dtype)
        d_history = torch.randn(history.shape, generator=generator, dtype=history.dtype)
        ((sketch * d_sketch).sum() + (history * d_history).sum()).backward()
        found = {"sketch": sketch.detach(), "history": history.detach(), "states": states.grad.clone()}
        # a prescribed order never reads v: neither loop gives it a gradient
        found.update({name: p.grad.clone() for name, p in decoder.named_parameters() if p.grad is not None})
        results.append(found)
        generator = torch.Generator().manual_seed(seed + 1)  # the same upstream gradients for both
    return results


@pytest.mark.parametrize("full_state", [True, False], ids=["NEF-F", "NEF-S"])
@pytest.mark.parametrize("steps", [None, 5, 16], ids=["N=L", "N=5", "N>L"])
@pytest.mark.parametrize(
    "options", [{}, {"temperature": 0.4, "coverage_penalty": 1.5}], ids=["plain", "temperature+coverage"]
)
@pytest.mark.parametrize("lengths", [LENGTHS, LONGER], ids=["with-empty", "no-empty"])
def test_fused_loop_matches_the_generic_loop(full_state, steps, options, lengths):
    torch.manual_seed(0)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5, full_state=full_state, **options).double()
    fused, generic = run_both(decoder, steps, lengths)
    assert fused.keys() == generic.keys()
    assert set(fused) >= {"input_half.weight", "input_half.bias", "sketch_half.weight", "v.weight"}
    for name in fused:
        torch.testing.assert_close(fused[name], generic[name], atol=1e-11, rtol=1e-9, msg=name)
    # the history is a real attention history: rows sum to one while a sentence runs, zero afterwards
    words = torch.tensor(lengths, dtype=torch.float64)
    own = words if steps is None else torch.where(words > 0, float(steps), 0.0)
    expected = (torch.arange(1, fused["history"].shape[1] + 1)[None] <= own[:, None]).double()
    torch.testing.assert_close(fused["history"].sum(-1), expected)


def test_fused_loop_matches_in_float32():
    """float32 (the training dtype): tanh is computed as 2σ(2x) − 1 there; the loops agree to ~1e-6."""
    torch.manual_seed(1)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5)
    states, mask = padded_batch(LENGTHS, 6, seed=3)
    states = states.detach().float()
    outputs = []
    for run in (FUSED.decoder, REFERENCE.decoder):
        outputs.append(run(decoder, states, mask, None, None, True))
    for a, b in zip(outputs[0], outputs[1], strict=True):
        torch.testing.assert_close(a, b, atol=2e-6, rtol=1e-5)


@pytest.mark.parametrize("full_state", [True, False], ids=["NEF-F", "NEF-S"])
@pytest.mark.parametrize("steps", [None, 6], ids=["N=L", "N>L"])
def test_fused_function_passes_gradcheck(full_state, steps):
    """Finite differences in float64 on the Function's own inputs: the encoder half, W and v."""
    generator = torch.Generator().manual_seed(7)
    lengths = torch.tensor([4, 2, 3])
    mask = torch.arange(4)[None, :] < lengths[:, None]
    fixed = (
        torch.randn(3, 4, 5, generator=generator, dtype=torch.float64) * mask[..., None]
    ).requires_grad_()
    weight = (torch.randn(5, 2, 3, generator=generator, dtype=torch.float64) * 0.7).requires_grad_()
    v = torch.randn(1, 3, generator=generator, dtype=torch.float64, requires_grad=True)
    n_steps = lengths if steps is None else torch.full_like(lengths, steps)
    total = int(n_steps.max())
    common = int(torch.minimum(n_steps, lengths).min())
    plan = LoopPlan(full_state, 0.7, 0.5, total, common)

    def function(fixed, weight, v):
        return FusedSketchFunction.apply(fixed, weight, v, mask, n_steps, plan)

    assert torch.autograd.gradcheck(function, (fixed, weight, v))


def test_without_gradients_nothing_is_stored_and_the_outputs_agree():
    torch.manual_seed(2)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5).double()
    states, mask = padded_batch(LENGTHS, 6, seed=4)
    sketch, history = decoder(states, mask)
    with torch.inference_mode():
        quiet_sketch, quiet_history = decoder(states, mask)
    assert not quiet_sketch.requires_grad and not quiet_history.requires_grad
    torch.testing.assert_close(quiet_sketch, sketch.detach(), atol=0, rtol=0)
    torch.testing.assert_close(quiet_history, history.detach(), atol=0, rtol=0)
    # the records: one slot, no per-step lists (what the backward would have kept)
    fixed = decoder.input_half(states.detach().transpose(1, 2)).transpose(1, 2).contiguous()
    lengths = mask.sum(1)
    plan = LoopPlan(True, 1.0, 0.0, int(lengths.max()), 0)
    with torch.no_grad():
        _, _, saved = run_loop(
            fixed, decoder.sketch_half.weight, decoder.v.weight, mask, lengths, plan, store=False
        )
    assert saved.alphas == [] and saved.free == [] and saved.cols == []
    assert saved.tanhs.shape[0] == 1 and saved.betas.shape[0] == 2
    # and sketch_steps takes that path under no_grad
    with torch.no_grad():
        again, _ = fused_sketch_loop(fixed, decoder.sketch_half.weight, decoder.v.weight, mask, lengths, plan)
    assert again.grad_fn is None


def test_only_csoftmax_batches_take_the_fused_loop_and_model_files_do_not_change():
    """On the GPU (where the compiled path does not run) the chooser gives a batch's decoder to ``fused``
    for csoftmax only (every other attention runs the reference), for NEF-F and NEF-S, and the model's
    saved parameters are the same whichever runs."""
    for model in ("nef-f", "nef-s"):
        for name in KINDS:
            config = ModelConfig(model=model, decoder=DecoderSettings(attention=name))
            plan = choose_backend(config, "many", "cuda", "float32", training=True)
            assert plan.decoder.name == ("fused" if name == "csoftmax" else "reference"), (model, name)
            assert plan.encoder.name == "reference"
    keys = set(SketchDecoder(6).state_dict())
    assert keys == {"input_half.weight", "input_half.bias", "sketch_half.weight", "v.weight"}


@pytest.mark.parametrize("full_state", [True, False], ids=["NEF-F", "NEF-S"])
@pytest.mark.parametrize("steps", [None, 9], ids=["N=L", "N>L"])
@pytest.mark.parametrize("coverage_penalty", [0.0, 0.5], ids=["in-range", "coverage"])
def test_tagging_runs_each_step_over_the_sentences_still_running_with_the_same_outputs(
    full_state, steps, coverage_penalty
):
    """Without gradients (tagging), a batch of mixed lengths runs sorted by decreasing N_b, each step over
    the sentences that still run; the sketches and the history are those of the loop that keeps every
    sentence to the end (training's), zeros past each sentence's N_b. A coverage penalty leaves the
    scores' range unknown before the loop: every sentence runs every step, as before."""
    generator = torch.Generator().manual_seed(11)
    lengths = torch.tensor([3, 7, 0, 1, 5, 7, 2])  # unsorted, an empty and a one-word sentence
    mask = torch.arange(7)[None, :] < lengths[:, None]
    fixed = torch.randn(7, 7, 9, generator=generator, dtype=torch.float64) * mask[..., None]
    weight = torch.randn(9, 4, 3, generator=generator, dtype=torch.float64) * 0.7
    v = torch.randn(1, 5, generator=generator, dtype=torch.float64)
    n_steps = torch.where(lengths > 0, lengths if steps is None else torch.full_like(lengths, steps), 0)
    plan = LoopPlan(full_state, 0.7, coverage_penalty, int(n_steps.max()), 0)
    kept, kept_history, _ = run_loop(fixed, weight, v, mask, n_steps, plan, store=True)
    with torch.inference_mode():
        sketch, history, _ = run_loop(fixed, weight, v, mask, n_steps, plan, store=False)
    torch.testing.assert_close(sketch, kept, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(history, kept_history, atol=1e-12, rtol=1e-12)
    own = n_steps.tolist()  # no attention past N_b (the empty sentence has none)
    assert all(history[b, own[b] :].abs().sum() == 0 for b in range(7)) and own[2] == 0


def test_the_sentences_running_each_step_are_counted_from_the_longest():
    running = _Running(torch.tensor([3, 7, 0, 1, 5]), shrink=True)
    assert running.sorted(torch.tensor([30, 70, 0, 10, 50])).tolist() == [70, 50, 30, 10, 0]
    assert [running.count(n) for n in range(1, 8)] == [4, 3, 3, 2, 2, 1, 1]
    assert running.restored(torch.tensor([70, 50, 30, 10, 0])).tolist() == [30, 70, 0, 10, 50]
    everyone = _Running(torch.tensor([3, 7, 0]), shrink=False)
    assert [everyone.count(n) for n in range(1, 8)] == [3] * 7
    assert everyone.sorted(torch.tensor([1, 2, 3])).tolist() == [1, 2, 3]


@pytest.mark.parametrize("layers", [1, 2])
def test_the_padded_bilstm_of_tagging_matches_the_packed_reference(layers):
    """Backend fused's BiLSTM (tagging, no gradients): each direction over the padded batch, the backward
    one with each sentence reversed in place, against the reference's packed sequences, in float64. The
    padding holds large values: a direction that read it would differ."""
    torch.manual_seed(0)
    encoder = BiLSTMEncoder(4, 3, layers, torch.nn.Dropout(0.5)).double().eval()
    lengths = [5, 1, 3, 7, 6]
    mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    x = torch.randn(len(lengths), max(lengths), 4, dtype=torch.float64)
    x[~mask] = 100.0
    with torch.no_grad():
        expected = encoder(x, mask)
        found = FUSED.encoder(encoder, x, mask)
    torch.testing.assert_close(found, expected, atol=1e-12, rtol=0)
    assert found[~mask].abs().max() == 0 and expected[mask].abs().min() > 0
    refused = FUSED.refuses(
        "encoder",
        {
            "revision": 1,
            "encoder_layers": layers,
            "dropout_kind": "naive",
            "sentences": "many",
            "device": "cpu",
            "dtype": "float32",
            "training": True,
        },
    )
    assert refused == "training = True (False only)"
