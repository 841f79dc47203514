"""Padded batches for the decoder's equivalence tests (tests/backends/test_compiled.py): random states
of mixed lengths, a random output layer for hard attention, and one backend's decoder run beside the
reference's with the same upstream gradients."""

from __future__ import annotations

import torch
from test_model import output_layer

from easyfirst.backends.chooser import REFERENCE
from easyfirst.backends.declaration import Backend
from easyfirst.model.sketch import SketchDecoder, WordScores


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
    decoder: SketchDecoder, steps: int | None, lengths: list[int], seed: int = 0, *, backend: Backend
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
