"""The sketch decoder and the tagger: shapes, padding, evenness, and agreement with a slow, literal
implementation of Eqs. 1–7 written from the paper one sentence and one word at a time."""

from __future__ import annotations

import entmax
import pytest
import torch

from easyfirst.config import Config
from easyfirst.data.batching import encode, iterate_batches
from easyfirst.data.vocab import Vocabularies
from easyfirst.model.sketch import SketchDecoder, WordScores
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.ops import csoftmax
from easyfirst.ops.attention import ATTENTIONS
from reference import slow_csparsemax

SENTENCES = [
    "The dog barks .".split(),
    "A cat sat on the warm mat today .".split(),
    "Hi".split(),
    "Colourless green ideas sleep furiously , said Chomsky in 1957 .".split(),
]
TAGS = [
    ["DET", "NOUN", "VERB", "PUNCT"],
    ["DET", "NOUN", "VERB", "ADP", "DET", "ADJ", "NOUN", "NOUN", "PUNCT"],
    ["INTJ"],
    ["ADJ", "ADJ", "NOUN", "VERB", "ADV", "PUNCT", "VERB", "PROPN", "ADP", "NUM", "PUNCT"],
]


def padded_states(lengths: list[int], dim: int = 6, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    states = (
        torch.randn(len(lengths), max(lengths), dim, generator=generator, dtype=torch.float64)
        * mask[..., None]
    )
    return states, mask


def output_layer(states: torch.Tensor, output: torch.Tensor) -> WordScores:
    """A bias-free output layer with weight ``output`` ``(K, D_h + D_s)`` on concat(h_i, s_i), as hard
    attention reads it."""
    held = states.shape[-1]
    return WordScores(states @ output[:, :held].T, output[:, held:])


def slow_rho(name: str, z: torch.Tensor, beta: torch.Tensor, n: int, scores) -> torch.Tensor:
    """ρ of Eq. 3 for one sentence at step n, each variant written out; ``scores()``: (L, K) tag scores."""
    L = z.shape[0]
    budget = (torch.ceil(torch.tensor(n / L, dtype=z.dtype)) - beta).clamp_min(
        0
    )  # a fresh unit every L steps
    if name == "csoftmax":
        return csoftmax(z, budget)  # Eq. 11
    if name == "csparsemax":
        return torch.tensor(slow_csparsemax(z.tolist(), budget.tolist()), dtype=z.dtype)
    if name in ("softmax", "sparsemax", "entmax15"):
        return {"softmax": torch.softmax, "sparsemax": entmax.sparsemax, "entmax15": entmax.entmax15}[name](
            z, 0
        )
    if name == "uniform":
        return torch.full((L,), 1 / L, dtype=z.dtype)
    order = list(range(L)) if name == "left-to-right" else list(reversed(range(L)))
    if name == "hard":  # Alg. 1: the best (position, tag) pair among the positions not yet covered
        f = scores()
        order = [max((i for i in range(L) if budget[i] > 0), key=lambda i: (f[i].max().item(), -i))]
    alpha = torch.zeros(L, dtype=z.dtype)
    alpha[order[(n - 1) % L] if name != "hard" else order[0]] = 1
    return alpha


def slow_decoder(
    decoder: SketchDecoder, h: torch.Tensor, steps: int, output: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eqs. 1–7 for ONE sentence (h: (L, D_h)), word by word, with explicit windows and concatenations.

    ``output``: the weight (K, D_h + D_s) of a bias-free output layer, for hard attention's scores."""
    L, w = h.shape[0], (decoder.input_half.kernel_size[0] - 1) // 2
    dz, ds = decoder.attention_dim, decoder.sketch_dim
    # affine(c) = W c + b with c = concat(h_{i-w}, …, h_{i+w}, s_{i-w}, …, s_{i+w})
    W = torch.cat(
        [decoder.input_half.weight[:, :, k] for k in range(2 * w + 1)]
        + [decoder.sketch_half.weight[:, :, k] for k in range(2 * w + 1)],
        dim=1,
    )
    b = decoder.input_half.bias
    S = torch.zeros(L, ds, dtype=h.dtype)
    beta = torch.zeros(L, dtype=h.dtype)
    history = []
    for n in range(1, steps + 1):

        def window(M, i):
            return [
                M[j] if 0 <= j < L else torch.zeros(M.shape[1], dtype=h.dtype)
                for j in range(i - w, i + w + 1)
            ]

        c = torch.stack([torch.cat(window(h, i) + window(S, i)) for i in range(L)])  # Eq. 1
        affine = c @ W.T + b
        z = torch.stack([decoder.v.weight[0] @ torch.tanh(affine[i, :dz]) for i in range(L)])  # Eq. 2
        z = z / decoder.temperature - decoder.coverage_penalty * beta

        def scores(S=S):
            return torch.stack([output @ torch.cat([h[i], S[i]]) for i in range(L)])  # Eq. 6's argument

        alpha = slow_rho(decoder.attention.name, z, beta, n, scores)
        if decoder.full_state:  # Eq. 7
            S = S + alpha[:, None] * torch.tanh(affine[:, dz:])
        else:  # Eq. 4: affine of the attention-weighted average of the c_i
            c_bar = (alpha[:, None] * c).sum(0)
            S = S + alpha[:, None] * torch.tanh(c_bar @ W[dz:].T + b[dz:])[None, :]
        beta = beta + alpha
        history.append(alpha)
    return S, torch.stack(history)


@pytest.mark.parametrize("full_state", [True, False])
@pytest.mark.parametrize("attention", sorted(ATTENTIONS) + ["softmax-T", "softmax-coverage"])
@pytest.mark.parametrize("fixed_steps,beyond_length", [(None, True), (3, True), (9, True), (3, False)])
def test_batched_decoder_matches_slow_literal_implementation(
    full_state, attention, fixed_steps, beyond_length
):
    torch.manual_seed(0)
    options = {"softmax-T": {"temperature": 0.3}, "softmax-coverage": {"coverage_penalty": 2.0}}
    decoder = SketchDecoder(
        6,
        sketch_dim=4,
        attention_dim=5,
        window=2,
        full_state=full_state,
        attention=attention.split("-")[0] if attention in options else attention,
        **options.get(attention, {}),
    ).double()
    lengths = [5, 1, 3, 7]
    states, mask = padded_states(lengths)
    output = torch.randn(3, 6 + 4, dtype=torch.float64)
    sketch, history = decoder(
        states * 3,
        mask,
        fixed_steps,
        output_layer(states * 3, output),
        beyond_length=beyond_length,
    )
    assert sketch.shape == (4, 7, 4)
    assert history.shape == (4, max(lengths) if fixed_steps is None else fixed_steps, 7)
    for b, L in enumerate(lengths):
        # N = L; N fixed; or N as a maximum: min(N, L) steps (the 1- and 3-word sentences run 1 and 3)
        steps = L if fixed_steps is None else fixed_steps if beyond_length else min(fixed_steps, L)
        S, alphas = slow_decoder(decoder, states[b, :L] * 3, steps, output)
        torch.testing.assert_close(sketch[b, :L], S, atol=1e-10, rtol=1e-10)
        torch.testing.assert_close(history[b, :steps, :L], alphas, atol=1e-10, rtol=1e-10)
        assert torch.all(history[b, steps:] == 0), "a sentence must stop changing after its own N steps"
        assert torch.all(history[b, :, L:] == 0) and torch.all(sketch[b, L:] == 0), "padding gets nothing"


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_csoftmax_with_n_equal_l_is_even(dtype, tol):
    torch.manual_seed(1)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5).to(dtype)
    lengths = [12, 3, 40, 1]
    states, mask = padded_states(lengths, seed=3)
    _, history = decoder(states.to(dtype) * 5, mask)
    beta = history.sum(1)
    assert torch.allclose(beta[mask], torch.ones_like(beta[mask]), atol=tol), "β^L must be 1 for every word"
    assert torch.all(beta[~mask] == 0)
    assert torch.all(history >= 0)


def test_more_steps_than_words_refreshes_the_budget_every_l_steps():
    torch.manual_seed(2)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5)
    lengths = [4, 2]
    states, mask = padded_states(lengths, seed=4)
    sketch, history = decoder(states.float(), mask, steps=8)
    assert torch.isfinite(sketch).all() and torch.isfinite(history).all()
    # sentence of 4 words: two full rounds of budget; sentence of 2 words: four rounds
    torch.testing.assert_close(history[0, :4].sum(0), torch.ones(4), atol=1e-5, rtol=0)
    torch.testing.assert_close(history[0, 4:].sum(0), torch.ones(4), atol=1e-5, rtol=0)
    torch.testing.assert_close(history[1, :, :2].sum(0), torch.full((2,), 4.0), atol=1e-5, rtol=0)
    torch.testing.assert_close(history.sum(-1)[:, :8], torch.ones(2, 8), atol=1e-5, rtol=0)


def small_model(model="nef-f", steps=None, attention="csoftmax") -> tuple[EasyFirstTagger, Vocabularies]:
    config = Config()
    config.model.model = model
    config.model.decoder.sketch_steps, config.model.decoder.attention = steps, attention
    if model == "bilstm":
        config.model.decoder.sketch_steps = 0
    vocabs = Vocabularies.build(zip(SENTENCES, TAGS, strict=True), word_min_freq=1)
    torch.manual_seed(0)
    return EasyFirstTagger(config.model, config.loss, vocabs), vocabs


@pytest.mark.parametrize("model", ["nef-f", "nef-s", "bilstm"])
def test_scores_of_a_sentence_do_not_depend_on_its_batch(model):
    net, vocabs = small_model(model)
    net.eval()
    items = [encode(vocabs, s) for s in SENTENCES]
    together = {}
    for batch in iterate_batches(items, 8):
        scores, _ = net(batch)
        for row, index in enumerate(batch.order):
            together[index] = scores[row, : len(items[index])]
    for index, item in enumerate(items):
        alone, _ = net(next(iterate_batches([item], 1)))
        torch.testing.assert_close(alone[0], together[index], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("model", ["nef-f", "nef-s"])
def test_gradients_reach_every_parameter(model):
    net, vocabs = small_model(model)
    batch = next(iterate_batches([encode(vocabs, s, t) for s, t in zip(SENTENCES, TAGS, strict=True)], 8))
    scores, attention = net(batch)
    assert attention.shape == (4, 11, 11)
    net.loss(scores, batch.tags).backward()
    for name, parameter in net.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_bilstm_baseline_has_no_decoder_and_predicts_from_h():
    net, vocabs = small_model("bilstm")
    assert net.decoder is None
    assert net.output.in_features == net.encoder.output_dim
    batch = next(iterate_batches([encode(vocabs, s) for s in SENTENCES], 8))
    scores, attention = net(batch)
    assert attention is None and scores.shape == (4, 11, len(vocabs.tags))


@pytest.mark.parametrize("full_state", [True, False])
def test_decoder_gradients_match_the_slow_literal_implementation(full_state):
    torch.manual_seed(3)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5, window=2, full_state=full_state).double()
    lengths = [5, 3]
    states, mask = padded_states(lengths, seed=9)
    states.requires_grad_()
    weights = torch.randn(2, 5, 4, dtype=torch.float64)
    sketch, history = decoder(states, mask)
    (sketch * weights).sum().backward()
    # gradient reaching padded states is discarded by the packed LSTM, so compare real words only
    fast = [p.grad.clone() for p in decoder.parameters()] + [states.grad[mask].clone()]
    decoder.zero_grad()
    states.grad = None
    total = 0
    for b, L in enumerate(lengths):
        S, _ = slow_decoder(decoder, states[b, :L], L)
        total = total + (S * weights[b, :L]).sum()
    total.backward()
    slow = [p.grad for p in decoder.parameters()] + [states.grad[mask]]
    for a, b in zip(fast, slow, strict=True):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-8)
