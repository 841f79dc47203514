"""The single-sentence NumPy path (easyfirst.model.fast.lean) against the batched torch paths it replaces for a
batch of one: the decoder's step loop against SketchDecoder's generic autograd loop, the BiLSTM against
``nn.LSTM``, csoftmax on one row against the batched function, and the whole model's clipped gradients
both ways, all in float64. Each runs with the step loops compiled by Numba (easyfirst.model.fast.kernels)
and with the NumPy loops."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import entmax
import numpy as np
import pytest
import torch
from rich.console import Console
from test_fused_sketch import random_output_layer, run_both

from conftest import SAMPLE
from easyfirst.config import Config
from easyfirst.data.batching import collate, encode
from easyfirst.model.encoder import LSTM_WEIGHTS, BiLSTMEncoder
from easyfirst.model.fast import lean
from easyfirst.model.fast import rows as lean_rows
from easyfirst.model.sketch import SketchDecoder
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.ops.constrained import _EXP_RANGE, csoftmax_forward
from easyfirst.training.epochs import backward_step
from easyfirst.training.loop import build_vocabularies, train
from easyfirst.training.optim import make_optimizer

REFERENCE = Path(__file__).parent.parent / "configs" / "pos-reference.toml"  # the paper's regime


@pytest.fixture(params=["compiled", "numpy"])
def loops(request, monkeypatch):
    """Runs a test with the Numba kernels and with the NumPy loops of easyfirst.model.fast.lean."""
    if request.param == "compiled" and lean.kernels() is None:
        if os.environ.get("CI"):  # the dev extra installs Numba: under CI the compiled loops must be tested
            pytest.fail("numba is not installed under CI (pip install -e '.[dev]' brings it)")
        pytest.skip("numba is not installed (pip install 'easyfirst[fast]')")
    monkeypatch.setattr(lean, "compiled", request.param == "compiled")
    return request.param


@pytest.fixture
def counted(monkeypatch):
    """Counts the calls that took the lean decoder loop."""
    calls = []
    original = lean.lean_loop
    monkeypatch.setattr(lean, "lean_loop", lambda *a, **k: calls.append(1) or original(*a, **k))
    return calls


# the prescribed orders (α independent of the model) at one length, the others at three
SHAPES = [
    (a, n)
    for a in lean_rows.ATTENTIONS
    for n in (
        (7,) if lean_rows.UNIFORM <= lean_rows.ATTENTIONS.index(a) <= lean_rows.RIGHT_TO_LEFT else (7, 3, 2)
    )
]


@pytest.mark.parametrize("full_state", [True, False], ids=["NEF-F", "NEF-S"])
@pytest.mark.parametrize("steps", [None, 2, 5, 16], ids=["N=L", "N=2", "N=5", "N>L"])
@pytest.mark.parametrize(
    "options", [{}, {"temperature": 0.4, "coverage_penalty": 1.5}], ids=["plain", "temperature+coverage"]
)
@pytest.mark.parametrize(("attention", "length"), SHAPES)
def test_lean_decoder_matches_the_generic_loop(full_state, steps, options, length, attention, counted, loops):
    torch.manual_seed(0)
    decoder = SketchDecoder(
        6, sketch_dim=4, attention_dim=5, full_state=full_state, attention=attention, **options
    ).double()
    if attention == "sparsemax":  # scores large enough for sparse steps, where the support matters
        with torch.no_grad():
            decoder.v.weight.mul_(4)
    found, generic = run_both(decoder, steps, [length])
    assert counted, "a single sentence on the CPU should take the lean loop"
    assert found.keys() == generic.keys()  # the same parameters get gradients (v none, for a fixed order)
    for name in found:
        torch.testing.assert_close(found[name], generic[name], atol=1e-11, rtol=1e-9, msg=name)


@pytest.mark.parametrize("full_state", [True, False], ids=["NEF-F", "NEF-S"])
@pytest.mark.parametrize("steps", [None, 3, 9], ids=["N=L", "N=3", "N>L"])
@pytest.mark.parametrize("attention", lean_rows.ATTENTIONS)
def test_lean_decoder_without_gradients_matches_the_generic_loop(full_state, steps, attention, counted):
    """Tagging (no gradients) keeps one step's records only, on the NumPy loops."""
    torch.manual_seed(0)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5, full_state=full_state, attention=attention)
    decoder = decoder.double()
    states, mask = torch.randn(1, 7, 6, dtype=torch.float64), torch.ones(1, 7, dtype=torch.bool)
    score_words = random_output_layer(states, 4, 0)
    with torch.no_grad():
        found = decoder(states, mask, steps, score_words)
        lean.enabled = False
        try:
            generic = decoder(states, mask, steps, score_words)
        finally:
            lean.enabled = True
    assert counted
    for a, b in zip(found, generic, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("full_state", [True, False], ids=["NEF-F", "NEF-S"])
def test_scores_beyond_the_exp_range_take_the_log_space_csoftmax(full_state, counted, loops, monkeypatch):
    """At temperature 1e-3 the scores reach thousands of nats: the compiled loop gives the sentence back
    to the NumPy loop, whose csoftmax takes the batched function's log-space path there."""
    given_back = []
    if loops == "compiled":
        kernel = lean.kernels().decoder_forward
        monkeypatch.setattr(
            lean.kernels(),
            "decoder_forward",
            lambda *a: given_back.append(not kernel(*a)) or not given_back[-1],
        )
    torch.manual_seed(0)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5, full_state=full_state, temperature=1e-3)
    decoder = decoder.double()
    found, generic = run_both(decoder, None, [6])
    assert counted
    assert given_back == ([True] if loops == "compiled" else [])
    assert found["history"].abs().max() > 0.99  # one word takes a whole step: the scores are that far apart
    for name in found:
        torch.testing.assert_close(found[name], generic[name], atol=1e-11, rtol=1e-9, msg=name)


def test_batches_and_gpu_sized_inputs_do_not_take_the_lean_path(counted):
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5).double()
    run_both(decoder, None, [4, 3])
    assert not counted


def test_lean_bilstm_matches_nn_lstm(loops):
    torch.manual_seed(0)
    encoder = BiLSTMEncoder(7, 5).double()
    for length in (1, 2, 9):
        x = torch.randn(1, length, 7, dtype=torch.float64, requires_grad=True)
        upstream = torch.randn(1, length, 10, dtype=torch.float64)
        found = []
        for use_lean in (True, False):
            encoder.zero_grad()
            x.grad = None
            lean.enabled = use_lean
            try:
                out = encoder(x, torch.ones(1, length, dtype=torch.bool))
            finally:
                lean.enabled = True
            (out * upstream).sum().backward()
            found.append([out.detach(), x.grad.clone()] + [p.grad.clone() for p in encoder.parameters()])
        for a, b in zip(*found, strict=True):
            torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-10)


def test_lean_bilstm_gradcheck(loops):
    torch.manual_seed(0)
    lstm = BiLSTMEncoder(4, 3).double().lstm
    weights = [getattr(lstm, name).detach().clone().requires_grad_() for name in LSTM_WEIGHTS]
    x = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lean.LeanBiLSTMFunction.apply, (x, *weights))


def test_csoftmax_row_matches_the_batched_function(loops):
    generator = torch.Generator().manual_seed(3)
    for trial in range(200):
        length = 1 + trial % 12
        z = torch.randn(length, generator=generator, dtype=torch.float64) * (3 if trial % 3 else 300)
        u = torch.rand(length, generator=generator, dtype=torch.float64)
        u[torch.rand(length, generator=generator) < 0.3] = 0.0  # spent words
        if trial % 7 == 0:
            u = u * 0.5 / max(u.sum().item(), 1e-9)  # Σu ≤ 1: tight
        if loops == "compiled":
            alpha, free = np.empty(length), np.empty(length, bool)
            if not lean.kernels().csoftmax_row(z.numpy(), u.numpy(), _EXP_RANGE, alpha, free):
                assert z.abs().max() > _EXP_RANGE  # given back: the caller takes the log-space path
                continue
        else:
            alpha, free = lean_rows.csoftmax_row(z.numpy(), u.numpy())
        expected, expected_free = csoftmax_forward(z[None], u[None])
        np.testing.assert_allclose(alpha, expected[0].numpy(), atol=1e-12, rtol=1e-10)
        assert (free == expected_free[0].numpy()).all()


def test_sparsemax_row_matches_entmax(loops):
    generator = torch.Generator().manual_seed(5)
    sparse_rows = 0
    for trial in range(200):
        length = 1 + trial % 12
        z = torch.randn(length, generator=generator, dtype=torch.float64) * (0.3, 1, 5)[trial % 3]
        if loops == "compiled":
            alpha, support = np.empty(length), np.empty(length, bool)
            lean.kernels().sparsemax_row(z.numpy(), alpha, support)
        else:
            alpha, support = lean_rows.sparsemax_row(z.numpy())
        expected = entmax.sparsemax(z, dim=-1).numpy()
        np.testing.assert_allclose(alpha, expected, atol=1e-12, rtol=1e-10)
        assert (support == (expected > 0)).all()
        sparse_rows += bool((expected == 0).any())
    assert sparse_rows > 50  # the rows exercised zeros, not only full supports


def test_softmax_row_matches_torch(loops):
    generator = torch.Generator().manual_seed(6)
    for trial in range(50):
        z = torch.randn(1 + trial % 12, generator=generator, dtype=torch.float64) * (1, 30, 300)[trial % 3]
        if loops == "compiled":
            alpha, free = np.empty(len(z)), np.empty(len(z), bool)
            lean.kernels().softmax_row(z.numpy(), alpha, free)
        else:
            alpha, free = lean_rows.softmax_row(z.numpy())
        np.testing.assert_allclose(alpha, torch.softmax(z, -1).numpy(), atol=1e-12, rtol=1e-10)
        assert free.all()


@pytest.mark.parametrize("attention", lean_rows.ATTENTIONS)
def test_the_models_clipped_gradients_are_the_same_both_ways(tmp_path, loops, attention):
    """The whole tagger at one sentence per update, with dropout, sparse embedding gradients and a clip
    that acts: gradients after clipping are equal whichever path computed them (this caught two biases
    sharing one gradient array, which clipping then scaled twice, and dropout masks that depended on
    the memory layout of the generic loop's sketch)."""
    from easyfirst.data.conllu import read_conllu

    sample = tmp_path / "sample.conllu"
    words = "The old man saw a dog near the river bank today .".split()
    tags = "DET ADJ NOUN VERB DET NOUN ADP DET NOUN NOUN NOUN PUNCT".split()
    sample.write_text(
        "".join(
            f"{i}\t{w}\t_\t{t}\t_\t_\t0\t_\t_\t_\n"
            for i, (w, t) in enumerate(zip(words, tags, strict=True), 1)
        )
        + "\n"
    )
    sentence = read_conllu(sample)[0]
    config = Config()
    config.train.batch_size, config.train.reduction, config.train.clip = 1, "sum", 0.5
    config.model.attention = attention
    vocabs = build_vocabularies(config, [sentence])
    torch.manual_seed(1)
    model = EasyFirstTagger(config.model, config.loss, vocabs).double()
    model.train()
    optimizer = make_optimizer("adagrad", 0.1, model)
    parameters = list(model.parameters())
    batch = collate([encode(vocabs, sentence.words, sentence.tags)], [0])
    found = []
    for use_lean in (True, False):
        lean.enabled = use_lean
        torch.manual_seed(7)
        try:
            _, norm = backward_step(model, model, optimizer, parameters, batch, config.train)
        finally:
            lean.enabled = True
        assert norm > config.train.clip  # the clip acts
        found.append([None if p.grad is None else p.grad.to_dense().clone() for p in parameters])
    for a, b in zip(*found, strict=True):
        assert (a is None) == (b is None)  # a prescribed order's v gets no gradient either way
        if a is not None:
            torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-9)


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "numpy"])
def test_the_training_log_says_which_loops_run_a_sentence(tmp_path, monkeypatch, compiled):
    """At one sentence per update on the CPU the log names the loops, and how to get the compiled ones."""
    if compiled and lean.kernels() is None:
        pytest.skip("numba is not installed")
    monkeypatch.setattr(lean, "compiled", compiled)
    config = Config.load(REFERENCE)
    config.data.train = config.data.dev = str(SAMPLE)
    config.train.epochs, config.model.sketch_steps = 1, 2
    log = io.StringIO()
    train(config, tmp_path / "run", console=Console(file=log, width=1000))
    for text in (log.getvalue(), (tmp_path / "run" / "train.log").read_text()):  # the screen and the file
        line = next(line for line in text.splitlines() if line.startswith("updates"))
        if compiled:
            assert line.endswith("one sentence on the CPU: time loops compiled (Numba)")
        else:
            assert "NumPy loops (pip install 'easyfirst[fast]'" in line


def test_without_numba_the_numpy_loops_train(tmp_path):
    """An install without the extra ``fast``: the import falls back to the NumPy loops, and training at
    one sentence per update runs on them."""
    script = f"""
import sys
sys.modules["numba"] = None  # as if it were not installed
from easyfirst.model.fast import lean, rows as lean_rows
assert lean.kernels() is None
from easyfirst.config import Config
from easyfirst.training.loop import train
config = Config.load({str(REFERENCE)!r})
config.data.train = config.data.dev = {str(SAMPLE)!r}
config.train.epochs, config.model.sketch_steps = 1, 2
train(config, {str(tmp_path / "run")!r})
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "NumPy loops" in (tmp_path / "run" / "train.log").read_text()
    assert (tmp_path / "run" / "metrics.json").exists()


def test_tagging_one_sentence_leaves_numba_unloaded(tmp_path):
    """A newcomer's first ``easyfirst tag --text`` or ``plot`` of one sentence (the bundled NEF-F model)
    runs the NumPy loops: the compiled kernels, which Numba compiles on first use after an install
    (about 30 s), are for training only. Training one sentence per update then loads them."""
    script = f"""
import sys
from easyfirst.cli import main
sys.argv = ["easyfirst", "tag", "--text", "She reads a book ."]
try:
    main()
except SystemExit as done:
    assert not done.code, done.code
assert "numba" not in sys.modules, "tagging loaded numba"
from easyfirst.model.fast import lean, rows as lean_rows
if lean.kernels() is not None:  # with the extra fast: training takes the kernels
    from easyfirst.config import Config
    from easyfirst.training.loop import train
    config = Config.load({str(REFERENCE)!r})
    config.data.train = config.data.dev = {str(SAMPLE)!r}
    config.train.epochs, config.model.sketch_steps = 1, 2
    train(config, {str(tmp_path / "run")!r})
    assert "time loops compiled" in open({str(tmp_path / "run" / "train.log")!r}).read()
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "reads" in done.stdout and "VERB" in done.stdout  # it tagged


def test_stacked_layers_take_the_lean_path_layer_by_layer(loops):
    """Two BiLSTM layers: one sentence through the NumPy path, layer by layer, equals nn.LSTM's, forward
    and every gradient (the second layer's weights included), in float64."""
    torch.manual_seed(0)
    encoder = BiLSTMEncoder(7, 5, layers=2).double()
    assert len(encoder.layers) == 2
    x = torch.randn(1, 6, 7, dtype=torch.float64, requires_grad=True)
    upstream = torch.randn(1, 6, 10, dtype=torch.float64)
    calls, original = [], lean.lean_bilstm
    found = []
    for use_lean in (True, False):
        encoder.zero_grad()
        x.grad = None
        lean.enabled = use_lean
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(
                    "easyfirst.model.encoder.lean_bilstm",
                    lambda *a, used=use_lean: calls.append(used) or original(*a),
                )
                out = encoder(x, torch.ones(1, 6, dtype=torch.bool))
        finally:
            lean.enabled = True
        (out * upstream).sum().backward()
        found.append([out.detach(), x.grad.clone()] + [p.grad.clone() for p in encoder.parameters()])
    assert calls == [True, True]  # both layers took it, and only when enabled
    for a, b in zip(*found, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-10)
