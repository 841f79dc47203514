"""The attention family in the decoder: prescribed orders, evenness of the budgeted transforms with N = L,
N > L without NaN, the vanilla easy-first decoder's gradients, the --no-concat ablation, the config, and
the command line end to end for the variants with their own plumbing."""

from __future__ import annotations

import json

import pytest
import torch
from test_model import SENTENCES, TAGS, output_layer, padded_states, small_model

from conftest import SAMPLE, run_cli, train_on_sample
from easyfirst.config import Config
from easyfirst.data.batching import encode, iterate_batches
from easyfirst.errors import InputError
from easyfirst.model.sketch import SketchDecoder
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.ops.attention import ATTENTIONS

LENGTHS = [12, 3, 40, 1]


def decode(attention: str, steps=None, dtype=torch.float32, scale=5.0, seed=3):
    torch.manual_seed(1)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5, attention=attention).to(dtype)
    states, mask = padded_states(LENGTHS, seed=seed)
    states = states.to(dtype) * scale
    output = torch.randn(5, 6 + 4, dtype=dtype)
    _, history = decoder(states, mask, steps, output_layer(states, output))
    return history, mask


@pytest.mark.parametrize("name", ["left-to-right", "right-to-left"])
def test_prescribed_orders_put_step_n_on_word_n_or_l_minus_n_plus_1(name):
    history, mask = decode(name, steps=None)
    for b, L in enumerate(LENGTHS):
        expected = torch.eye(L) if name == "left-to-right" else torch.eye(L).flip(1)
        assert torch.equal(history[b, :L, :L], expected)
    history, _ = decode(name, steps=7)  # more steps than the 3-word sentence: the order starts over
    expected = [0, 1, 2, 0, 1, 2, 0] if name == "left-to-right" else [2, 1, 0, 2, 1, 0, 2]
    assert history[1, :, :3].argmax(-1).tolist() == expected and torch.all(history[1].sum(-1) == 1)


def test_uniform_attention_is_one_over_l():
    history, mask = decode("uniform", steps=5)
    for b, L in enumerate(LENGTHS):
        torch.testing.assert_close(history[b, :, :L], torch.full((5, L), 1 / L), atol=0, rtol=0)
        assert torch.all(history[b, :, L:] == 0)


@pytest.mark.parametrize("name", ["csoftmax", "csparsemax", "hard"])
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_budgeted_attention_with_n_equal_l_ends_at_beta_one(name, dtype, tol):
    history, mask = decode(name, dtype=dtype)
    beta = history.sum(1)
    torch.testing.assert_close(
        beta[mask], torch.ones_like(beta[mask]), atol=tol if name != "hard" else 0, rtol=0
    )
    assert torch.all(beta[~mask] == 0) and torch.all(history >= 0)
    if name == "hard":  # one word per step, each exactly once: a permutation of the sentence
        for b, L in enumerate(LENGTHS):
            assert sorted(history[b, :L, :L].argmax(-1).tolist()) == list(range(L))
            assert torch.all(history[b, :L].amax(-1) == 1)
    if name == "csparsemax":
        assert (history[mask.unsqueeze(1).expand_as(history)] == 0).any(), "csparsemax should be sparse"


@pytest.mark.parametrize("name", ["csoftmax", "csparsemax", "hard"])
@pytest.mark.parametrize("scale", [1.0, 300.0])
def test_more_steps_than_words_stay_finite_and_refresh_the_budget(name, scale):
    torch.manual_seed(4)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5, attention=name)
    states, mask = padded_states(LENGTHS, seed=5)
    states = (states.float() * scale).requires_grad_()
    output = torch.randn(5, 10)
    steps = 2 * max(LENGTHS) + 3
    sketch, history = decoder(states, mask, steps, output_layer(states, output))
    assert torch.isfinite(sketch).all() and torch.isfinite(history).all()
    sketch.sum().backward()
    assert torch.isfinite(states.grad).all()
    torch.testing.assert_close(history.sum(-1), torch.ones(len(LENGTHS), steps), atol=1e-5, rtol=0)
    for b, L in enumerate(LENGTHS):  # every complete block of L steps covers each word exactly once
        for start in range(0, steps - L + 1, L):
            block = history[b, start : start + L, :L].sum(0)
            torch.testing.assert_close(block, torch.ones(L), atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", sorted(ATTENTIONS))
@pytest.mark.parametrize("steps", [None, 3])
def test_an_empty_sentence_in_a_batch_gets_no_attention_and_no_nan(name, steps):
    """softmax over a row of padding alone was 0/0: the empty sentence's NaN reached the whole batch's
    gradient. Every attention leaves an empty row at α = 0 and the others as they are without it."""
    torch.manual_seed(4)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5, attention=name).double()
    output = torch.randn(5, 10, dtype=torch.float64)
    states, mask = padded_states([4, 0, 2], seed=5)
    states.requires_grad_()
    sketch, history = decoder(states, mask, steps, output_layer(states, output))
    sketch.sum().backward()
    assert torch.isfinite(sketch).all() and torch.isfinite(states.grad).all()
    assert (history[1] == 0).all() and (sketch[1] == 0).all()
    others = states[[0, 2]].detach()
    alone, alone_history = decoder(others, mask[[0, 2]], steps, output_layer(others, output))
    torch.testing.assert_close(sketch[[0, 2]], alone)
    torch.testing.assert_close(history[[0, 2]], alone_history)


def test_hard_attention_passes_no_gradient_through_the_choice_but_trains_the_sketches():
    net, vocabs = small_model("nef-f", None, "hard")
    batch = next(iterate_batches([encode(vocabs, s, t) for s, t in zip(SENTENCES, TAGS, strict=True)], 8))
    scores, attention = net(batch)
    assert torch.all((attention == 0) | (attention == 1))
    net.loss(scores, batch.tags).backward()
    assert net.decoder.v.weight.grad is None, "the Eq. 2 scorer is unused by vanilla easy-first"
    for name in ("sketch_half.weight", "input_half.weight"):
        assert getattr(net.decoder, name.split(".")[0]).weight.grad.abs().sum() > 0, name


def test_hard_attention_follows_the_output_layer():
    """Alg. 1 with the same weights: the first focus is the word whose best tag score is highest."""
    net, vocabs = small_model("nef-f", None, "hard")
    net.eval()
    batch = next(iterate_batches([encode(vocabs, SENTENCES[3])], 1))
    with torch.no_grad():
        net.output.bias.zero_()
        net.output.weight[:, net.encoder.output_dim :] = 0  # scores from h alone: independent of sketches
        states = net.encoder(net.embedder(batch.words, batch.prefixes, batch.suffixes), batch.mask)
        h_part = net.output.weight[:, : net.encoder.output_dim]
        order = (states[0] @ h_part.T).amax(-1).argsort(descending=True, stable=True).tolist()
        _, attention = net(batch)
    assert attention[0].argmax(-1).tolist() == order


def test_no_concat_predicts_from_the_sketch_alone():
    config = Config()
    config.model.output.concat = False
    _, vocabs = small_model()
    torch.manual_seed(0)
    net = EasyFirstTagger(config.model, config.loss, vocabs)
    assert net.output.in_features == config.model.decoder.sketch_dim
    batch = next(iterate_batches([encode(vocabs, s, t) for s, t in zip(SENTENCES, TAGS, strict=True)], 8))
    scores, _ = net(batch)
    net.loss(scores, batch.tags).backward()
    assert net.encoder.lstm.weight_ih_l0.grad.abs().sum() > 0, (
        "h still reaches the output through the sketches"
    )


@pytest.mark.parametrize(
    "model,message",
    [
        ({"attention_temperature": 0.0}, "attention_temperature"),
        ({"attention_temperature": float("inf")}, "attention_temperature"),
        ({"coverage_penalty": -1.0}, "coverage_penalty"),
        ({"v_init": -1.0}, "v_init"),
        ({"v_init": float("nan")}, "v_init"),
        ({"attention": "left-to-right", "v_init": 3.0}, "has none"),
        ({"attention": "hard", "coverage_penalty": 1.0}, "has none"),
        ({"attention": "uniform", "attention_temperature": 2.0}, "has none"),
        ({"model": "bilstm", "concat": False}, "needs sketch steps"),
        ({"sketch_steps": 0, "concat": False}, "needs sketch steps"),
        ({"attention": "sparsemax2"}, "csparsemax"),
    ],
)
def test_config_rejects_meaningless_attention_settings(model, message):
    with pytest.raises(InputError, match=message):
        Config.from_dict({"model": model}, "x.toml")


def test_v_init_scales_the_initial_score_vector_only():
    from easyfirst.data.vocab import Vocabularies
    from easyfirst.model.tagger import EasyFirstTagger

    vocabs = Vocabularies.build([(["a", "b"], ["X", "Y"])])
    models = []
    for scale in (1.0, 4.0):
        config = Config.from_dict({"model": {"v_init": scale}})
        torch.manual_seed(3)
        models.append(dict(EasyFirstTagger(config.model, config.loss, vocabs).named_parameters()))
    plain, scaled = models
    for name in plain:
        expected = plain[name] * 4 if name == "decoder.v.weight" else plain[name]
        torch.testing.assert_close(scaled[name], expected, msg=name)


def test_config_accepts_every_attention_with_its_options():
    for name in ("softmax", "sparsemax", "entmax15", "csoftmax", "csparsemax"):
        Config.from_dict({"model": {"attention": name, "attention_temperature": 0.5, "coverage_penalty": 2}})
    for name in ("uniform", "left-to-right", "right-to-left", "hard"):
        Config.from_dict({"model": {"attention": name, "concat": False, "sketch_steps": 5}})


@pytest.mark.parametrize(
    "flags",
    [
        ["--attention", "hard"],
        ["--attention", "csparsemax", "--no-concat", "--sketch-steps", "3"],
        ["--attention", "softmax", "--attention-temperature", "0.5", "--coverage-penalty", "1"],
    ],
)
def test_cli_trains_tags_and_evaluates_each_kind_of_variant(flags, tmp_path):
    out = tmp_path / "run"
    result = train_on_sample(out, *flags, "--threads", "1", epochs=1)
    assert result.returncode == 0, result.stderr.decode()
    config = json.loads((out / "config.json").read_text())["model"]
    assert config["attention"] == flags[1]
    assert config["concat"] is ("--no-concat" not in flags)
    tagged = run_cli("tag", "--text", "She reads a book .", "-m", out)
    assert tagged.returncode == 0, tagged.stderr.decode()
    assert len(tagged.stdout.decode().splitlines()) == 5
    if flags[1] == "hard":
        report = run_cli("evaluate", SAMPLE, "-m", out, "--json")
        assert report.returncode == 0 and 0 <= json.loads(report.stdout)["accuracy"] <= 1


def test_cli_reports_a_bad_attention_option_without_a_traceback(tmp_path):
    result = run_cli("train", "--attention", "left-to-right", "--coverage-penalty", "1", "-o", tmp_path / "r")
    assert result.returncode == 2
    assert b"Traceback" not in result.stderr and b"coverage_penalty" in result.stderr
    assert not (tmp_path / "r").exists()
