"""The linear-chain CRF against brute-force enumeration of every tag sequence (as pytorch-crf tests)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from easyfirst.model.crf import CRF, FORBIDDEN, bio_allowed, entity_scheme, is_bio

BIO = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def sequence_score(crf: CRF, emissions: list[list[float]], tags: tuple[int, ...]) -> float:
    """s(y) of one sentence by its definition, in plain Python floats, from the raw parameters."""
    start, end, trans = crf.start.tolist(), crf.end.tolist(), crf.transitions.tolist()
    total = start[tags[0]] + end[tags[-1]] + sum(emissions[t][y] for t, y in enumerate(tags))
    total += sum(trans[a][b] for a, b in itertools.pairwise(tags))
    return total


def allowed_by_bio(tags: tuple[int, ...], names: list[str]) -> bool:
    """Independent statement of the constraint: I-X only after B-X or I-X, never first."""
    previous = None
    for y in tags:
        name = names[y]
        if name.startswith("I-") and (previous is None or previous[2:] != name[2:]):
            return False
        previous = name
    return True


def brute_force(crf: CRF, emissions: list[list[float]], names: list[str] | None):
    """log Z, best sequence and marginals of one sentence by enumerating all K^n sequences."""
    n, k = len(emissions), len(emissions[0])
    scores = {}
    for tags in itertools.product(range(k), repeat=n):
        if names is not None and not allowed_by_bio(tags, names):
            continue
        scores[tags] = sequence_score(crf, emissions, tags)
    top = max(scores.values())
    log_z = top + math.log(math.fsum(math.exp(s - top) for s in scores.values()))
    best = max(scores, key=scores.get)
    marginals = [[0.0] * k for _ in range(n)]
    for tags, s in scores.items():
        for t, y in enumerate(tags):
            marginals[t][y] += math.exp(s - log_z)
    return log_z, list(best), marginals


@pytest.mark.parametrize("constrained", [False, True])
def test_partition_viterbi_and_marginals_match_enumeration_with_masks(constrained):
    torch.manual_seed(0)
    k = len(BIO)
    crf = CRF(k, BIO if constrained else None).double()
    with torch.no_grad():  # larger than the initial ±0.1, so transitions matter
        for p in crf.parameters():
            p.uniform_(-2, 2)
    lengths = [4, 1, 3, 2]
    emissions = torch.randn(len(lengths), max(lengths), k, dtype=torch.float64) * 2
    mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    log_z = crf.log_partition(emissions, mask)
    best = crf.viterbi(emissions, mask)
    marginals = crf.marginals(emissions, mask)
    tags = torch.randint(0, k, (len(lengths), max(lengths)))
    for b, n in enumerate(lengths):
        rows = emissions[b, :n].tolist()
        expected_z, expected_best, expected_marginals = brute_force(crf, rows, BIO if constrained else None)
        assert log_z[b].item() == pytest.approx(expected_z, abs=1e-9)
        assert best[b, :n].tolist() == expected_best
        assert (best[b, n:] == 0).all()
        assert torch.allclose(
            marginals[b, :n], torch.tensor(expected_marginals, dtype=torch.float64), atol=1e-9
        )
        assert (marginals[b, n:] == 0).all()
        gold = tuple(tags[b, :n].tolist())
        raw = sequence_score(crf, rows, gold)
        if constrained and not allowed_by_bio(gold, BIO):
            assert crf.score(emissions, tags, mask)[b].item() < raw + FORBIDDEN / 2
        else:
            assert crf.score(emissions, tags, mask)[b].item() == pytest.approx(raw, abs=1e-9)


def test_padding_values_do_not_matter():
    torch.manual_seed(1)
    crf = CRF(3)
    emissions = torch.randn(2, 5, 3)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    noisy = emissions.clone()
    noisy[0, 3:] = 1000.0
    tags = torch.randint(0, 3, (2, 5))
    other = tags.clone()
    other[0, 3:] = -100  # what the batches put at padding
    assert torch.allclose(crf.nll(emissions, tags, mask), crf.nll(noisy, other, mask))
    assert torch.equal(crf.viterbi(emissions, mask), crf.viterbi(noisy, mask))
    assert torch.allclose(crf.marginals(emissions, mask), crf.marginals(noisy, mask))


def test_nll_gradient_is_marginals_minus_gold_indicators():
    """∂(−log p(y))/∂e_t[k] = p(y_t = k) − 1[y_t = k]: forward–backward agrees with autograd."""
    torch.manual_seed(2)
    crf = CRF(4).double()
    emissions = torch.randn(2, 4, 4, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.bool)
    tags = torch.tensor([[0, 1, 2, 3], [3, 3, 0, 0]])
    crf.nll(emissions, tags, mask).sum().backward()
    gold = torch.nn.functional.one_hot(tags, 4).double() * mask.unsqueeze(-1)
    assert torch.allclose(emissions.grad, crf.marginals(emissions.detach(), mask) - gold, atol=1e-10)
    torch.autograd.gradcheck(lambda e: crf.nll(e, tags, mask), (emissions,))


def test_bio_tag_sets_and_constraints():
    assert is_bio(["O", "B-PER", "I-PER"]) and not is_bio(["NOUN", "VERB"]) and not is_bio(["O", "B-X"])
    start, allowed = bio_allowed(BIO)
    assert start.tolist() == [True, True, False, True, False]
    assert allowed[BIO.index("B-PER"), BIO.index("I-PER")] and allowed[BIO.index("I-PER"), BIO.index("I-PER")]
    assert not allowed[BIO.index("O"), BIO.index("I-PER")]
    assert not allowed[BIO.index("B-LOC"), BIO.index("I-PER")]
    assert allowed[BIO.index("I-PER"), BIO.index("B-LOC")] and allowed[BIO.index("I-LOC"), BIO.index("O")]


@pytest.mark.parametrize("model", ["nef-f", "nef-s", "bilstm"])
def test_crf_output_layer_trains_and_decodes_on_every_model(model):
    from easyfirst.config import Config
    from easyfirst.data.batching import encode, iterate_batches
    from easyfirst.data.vocab import Vocabularies
    from easyfirst.model.tagger import EasyFirstTagger

    sentences = [["John", "lives", "in", "New", "York"], ["Mary", "left"]]
    tags = [["B-PER", "O", "O", "B-LOC", "I-LOC"], ["B-PER", "O"]]
    config = Config()
    config.model.model, config.model.output.crf = model, True
    if model == "bilstm":
        config.model.decoder.sketch_steps = 0
    vocabs = Vocabularies.build(zip(sentences, tags, strict=True), word_min_freq=1)
    torch.manual_seed(0)
    net = EasyFirstTagger(config.model, config.loss, vocabs)
    assert net.crf is not None and (net.crf.start_penalty < 0).any()  # BIO tag set: constraints on
    assert "crf.transitions" in net.state_dict() and "crf.start_penalty" not in net.state_dict()
    batch = next(iterate_batches([encode(vocabs, s, t) for s, t in zip(sentences, tags, strict=True)], 8))
    optimizer = torch.optim.Adam(net.parameters(), lr=0.05)
    first = None
    for _ in range(30):
        loss = net.loss(net(batch)[0], batch.tags, batch.mask)
        first = first if first is not None else loss.item()
        optimizer.zero_grad()
        loss.backward()
        assert net.crf.transitions.grad.abs().sum() > 0
        optimizer.step()
    assert loss.item() < first / 4
    net.eval()
    best, marginals = net.predict(net(batch)[0], batch.mask)
    assert torch.equal(best[batch.mask], batch.tags[batch.mask])
    assert torch.allclose(marginals.sum(-1), batch.mask.float())
    # tagging without probabilities skips the forward-backward pass: the same Viterbi tags, no marginals
    calls = []
    net.crf.marginals = lambda *args: calls.append(args)
    alone, none = net.predict(net(batch)[0], batch.mask, distribution=False)
    assert torch.equal(alone, best) and none is None and not calls


BIOES = ["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "E-LOC", "S-LOC"]


def valid_bioes(names: list[str]) -> bool:
    """Independent statement of BIOES: an automaton over the tags, inside or outside an entity of a type."""
    inside = None  # the type of the open entity
    for name in names:
        prefix, kind = name[0], name[2:]
        if inside is None and prefix in ("I", "E"):
            return False
        if inside is not None and (prefix not in ("I", "E") or kind != inside):
            return False
        inside = kind if prefix in ("B", "I") else None
    return inside is None


def test_bioes_constraints_match_enumeration():
    """With BIOES constraints, log Z and Viterbi equal enumeration over the valid sequences only, and no
    sentence ends inside an entity (the end constraint, which BIO has not)."""
    torch.manual_seed(4)
    crf = CRF(len(BIOES), BIOES, scheme="bioes").double()
    assert crf.scheme == "bioes"
    with torch.no_grad():
        for p in crf.parameters():
            p.uniform_(-2, 2)
    for n in (1, 2, 3):
        emissions = torch.randn(1, n, len(BIOES), dtype=torch.float64) * 2
        rows = emissions[0].tolist()
        scores = {
            tags: sequence_score(crf, rows, tags)
            for tags in itertools.product(range(len(BIOES)), repeat=n)
            if valid_bioes([BIOES[y] for y in tags])
        }
        top = max(scores.values())
        log_z = top + math.log(math.fsum(math.exp(s - top) for s in scores.values()))
        mask = torch.ones(1, n, dtype=torch.bool)
        assert crf.log_partition(emissions, mask).item() == pytest.approx(log_z, abs=1e-9)
        assert tuple(crf.viterbi(emissions, mask)[0].tolist()) == max(scores, key=scores.get)


def test_entity_schemes_of_tag_sets():
    assert entity_scheme(BIOES) == "bioes" and entity_scheme(BIO) == "bio"
    assert entity_scheme(["NOUN", "VERB"]) is None and entity_scheme(["O", "B-X"]) is None
    crf = CRF(len(BIO), BIO)  # the default scheme is BIO's: no end constraint
    assert crf.scheme == "bio" and not (crf.end_penalty < 0).any()
