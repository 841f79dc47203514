"""The reference BiLSTM (easyfirst.model.encoder): without gradients on the CPU it runs each direction over
the padded batch (the backward one with each sentence reversed in place), with gradients over packed
sequences; both give the same states, and the bundled en-ner model (200 units, wider than the compiled
path takes) the same tags either way."""

from __future__ import annotations

import pytest
import torch

from conftest import NER_SAMPLE
from easyfirst.model import encoder as encoder_module
from easyfirst.model.encoder import BiLSTMEncoder


def batch(lengths: list[int], dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Random float64 inputs, the padding large: a direction that read it would differ."""
    mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    x = torch.randn(len(lengths), max(lengths), dim, dtype=torch.float64)
    x[~mask] = 100.0
    return x, mask


@pytest.fixture
def packs(monkeypatch) -> list[int]:
    """Counts the calls of pack_padded_sequence (one per layer on the packed path)."""
    calls = []
    packing = encoder_module.pack_padded_sequence
    monkeypatch.setattr(
        encoder_module, "pack_padded_sequence", lambda *a, **k: calls.append(1) or packing(*a, **k)
    )
    return calls


@pytest.mark.parametrize("layers", [1, 2])
def test_without_gradients_the_padded_batch_gives_the_packed_states(layers, packs):
    torch.manual_seed(0)
    encoder = BiLSTMEncoder(4, 3, layers, torch.nn.Dropout(0.5)).double().eval()
    x, mask = batch([5, 1, 3, 7, 6], 4)
    expected = encoder(x, mask)  # gradients wanted: packed
    assert len(packs) == layers and expected.requires_grad
    for quiet in (torch.no_grad, torch.inference_mode):
        with quiet():
            found = encoder(x, mask)
        assert len(packs) == layers  # not packed
        torch.testing.assert_close(found, expected.detach(), atol=1e-12, rtol=0)
        assert found[~mask].abs().max() == 0 and expected[mask].abs().min() > 0


def test_the_padded_batch_is_taken_wherever_nothing_wants_a_gradient(packs):
    torch.manual_seed(0)
    encoder = BiLSTMEncoder(4, 3).double()
    x, mask = batch([2, 4], 4)
    encoder.requires_grad_(False)
    frozen = encoder(x, mask)  # gradients enabled, but nothing asks for them
    assert not packs and not frozen.requires_grad
    states = encoder(x.requires_grad_(), mask)  # a gradient for the input: packed
    assert len(packs) == 1 and states.requires_grad
    torch.testing.assert_close(frozen, states.detach(), atol=1e-12, rtol=0)


def test_the_bundled_ner_model_tags_the_same_with_the_packed_bilstm(monkeypatch):
    """en-ner (200 units per direction: its BiLSTM runs the reference) in float32: the same tags, and
    probabilities within float32 rounding, when tagging packs the batch as training does."""
    from easyfirst.api import Tagger
    from easyfirst.data.conll import read_conll

    tagger = Tagger.load("en-ner")
    tagger.processes = 1
    assert tagger.chosen_backend.startswith("reference (the model's torch modules: BiLSTM)")
    words = [s.words for s in read_conll(NER_SAMPLE)]
    found = tagger.tag(words, probabilities=True)
    monkeypatch.setattr(BiLSTMEncoder, "padded", BiLSTMEncoder.packed)
    expected = tagger.tag(words, probabilities=True)
    assert [t.tags for t in found] == [t.tags for t in expected]
    for a, b in zip(found, expected, strict=True):
        torch.testing.assert_close(a.probabilities, b.probabilities, atol=1e-5, rtol=0)


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:.*quantize_per_tensor")
def test_layers_that_are_not_nn_lstm_take_the_packed_path(packs):
    """Dynamically quantized layers (torch.ao) keep no float weights for torch.lstm: packed, as before."""
    from torch.ao.quantization import quantize_dynamic

    torch.manual_seed(0)
    encoder = BiLSTMEncoder(4, 3, 2).eval()
    quantized = quantize_dynamic(encoder, {torch.nn.LSTM}, dtype=torch.qint8)
    x, mask = batch([5, 2, 4], 4)
    with torch.inference_mode():
        found = quantized(x.float(), mask)
        plain = encoder(x.float(), mask)
    assert len(packs) == 2 and found.shape == plain.shape == (3, 5, 6)
    assert found[~mask].abs().max() == 0
    torch.testing.assert_close(found, plain, atol=0.05, rtol=0)  # int8 weights: close, not equal
