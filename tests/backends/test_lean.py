"""The single-sentence backends ``numba`` and ``numpy`` (easyfirst.backends.single, on the loops of
easyfirst.backends.lean) against the reference for a batch of one: the decoder's step loop against
SketchDecoder's generic autograd loop, the BiLSTM against ``nn.LSTM``, csoftmax on one row against the
batched function, and the whole model's clipped gradients both ways, all in float64. Each runs with the
step loops compiled by Numba (easyfirst.backends.kernels, backend ``numba``) and with the NumPy loops
(backend ``numpy``)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import entmax
import numpy as np
import pytest
import torch
from rich.console import Console
from test_fused_sketch import random_output_layer, run_both

from conftest import SAMPLE
from easyfirst.backends import lean
from easyfirst.backends import rows as lean_rows
from easyfirst.backends.chooser import REFERENCE as REFERENCE_BACKEND
from easyfirst.backends.chooser import choose_backend, plan_for
from easyfirst.backends.fused import FUSED
from easyfirst.backends.rows import PRESCRIBED, ROW_ATTENTIONS
from easyfirst.backends.single import LSTM_WEIGHTS, NUMBA, NUMPY
from easyfirst.config import Config
from easyfirst.data.batching import collate, encode
from easyfirst.model.encoder import BiLSTMEncoder
from easyfirst.model.settings import ModelConfig
from easyfirst.model.sketch import SketchDecoder
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.ops.constrained import _EXP_RANGE, csoftmax_forward
from easyfirst.ops.kinds import KINDS
from easyfirst.training.epochs import backward_step
from easyfirst.training.loop import build_vocabularies, train
from easyfirst.training.optim import make_optimizer

REFERENCE = Path(__file__).parents[2] / "configs" / "pos-reference.toml"  # the paper's regime


def need_numba() -> None:
    """Skips a test of the compiled loops where Numba is missing, except under CI, where it fails."""
    if lean.kernels() is None:
        if os.environ.get("CI"):  # the dev extra installs Numba: under CI the compiled loops must be tested
            pytest.fail("numba is not installed under CI (pip install -e '.[dev]' brings it)")
        pytest.skip("numba is not installed (pip install 'easyfirst[fast]')")


@pytest.fixture(params=["compiled", "numpy"])
def loops(request):
    """The backend a test runs: ``numba`` (the Numba kernels) and ``numpy`` (the NumPy loops of
    easyfirst.backends.lean)."""
    if request.param == "compiled":
        need_numba()
        return NUMBA
    return NUMPY


def kernels_of(backend):
    """The ``loops`` argument that ``backend`` passes to easyfirst.backends.lean's functions."""
    return lean.kernels() if backend is NUMBA else None


@pytest.fixture
def counted(monkeypatch):
    """The calls that took the lean decoder loop: the ``loops`` each passed (None: the NumPy loop)."""
    calls = []
    original = lean.lean_loop
    monkeypatch.setattr(lean, "lean_loop", lambda *a, **k: calls.append(k.get("loops")) or original(*a, **k))
    return calls


# the prescribed orders (α independent of the model) at one length, the others at three
ATTENTIONS = sorted(ROW_ATTENTIONS)  # sorted: stable test ids
SHAPES = [(a, n) for a in ATTENTIONS for n in ((7,) if KINDS[a].code in PRESCRIBED else (7, 3, 2))]


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
    found, generic = run_both(decoder, steps, [length], backend=loops)
    assert counted == [kernels_of(loops)], "the backend should take the lean loop, with its loops"
    assert found.keys() == generic.keys()  # the same parameters get gradients (v none, for a fixed order)
    for name in found:
        torch.testing.assert_close(found[name], generic[name], atol=1e-11, rtol=1e-9, msg=name)


@pytest.mark.parametrize("full_state", [True, False], ids=["NEF-F", "NEF-S"])
@pytest.mark.parametrize("steps", [None, 3, 9], ids=["N=L", "N=3", "N>L"])
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_lean_decoder_without_gradients_matches_the_generic_loop(full_state, steps, attention, counted):
    """Tagging (no gradients) keeps one step's records only, on the NumPy loops (backend ``numpy``)."""
    torch.manual_seed(0)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5, full_state=full_state, attention=attention)
    decoder = decoder.double()
    states, mask = torch.randn(1, 7, 6, dtype=torch.float64), torch.ones(1, 7, dtype=torch.bool)
    score_words = random_output_layer(states, 4, 0)
    with torch.no_grad():
        found = NUMPY.decoder(decoder, states, mask, steps, score_words, True)
        assert counted
        generic = REFERENCE_BACKEND.decoder(decoder, states, mask, steps, score_words, True)
    assert len(counted) == 1  # the reference did not take it
    for a, b in zip(found, generic, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("full_state", [True, False], ids=["NEF-F", "NEF-S"])
def test_scores_beyond_the_exp_range_take_the_log_space_csoftmax(full_state, counted, loops, monkeypatch):
    """At temperature 1e-3 the scores reach thousands of nats: the compiled loop gives the sentence back
    to the NumPy loop, whose csoftmax takes the batched function's log-space path there."""
    given_back = []
    if loops is NUMBA:
        kernel = lean.kernels().decoder_forward
        monkeypatch.setattr(
            lean.kernels(),
            "decoder_forward",
            lambda *a: given_back.append(not kernel(*a)) or not given_back[-1],
        )
    torch.manual_seed(0)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5, full_state=full_state, temperature=1e-3)
    decoder = decoder.double()
    found, generic = run_both(decoder, None, [6], backend=loops)
    assert counted
    assert given_back == ([True] if loops is NUMBA else [])
    assert found["history"].abs().max() > 0.99  # one word takes a whole step: the scores are that far apart
    for name in found:
        torch.testing.assert_close(found[name], generic[name], atol=1e-11, rtol=1e-9, msg=name)


def test_batches_and_gpu_sized_inputs_do_not_take_the_lean_path(counted):
    """The chooser gives ``numpy`` one unpadded sentence on the CPU only: a batch of two sentences and a
    padded single sentence run the reference's nn.LSTM (fused's in tagging) and the fused (or generic) decoder, even with
    ``numpy`` forced, and so does a sentence on the GPU."""
    model = SimpleNamespace(settings=ModelConfig(), backend="numpy", output=torch.nn.Linear(2, 2).double())
    one = torch.ones(1, 4, dtype=torch.bool)
    plan = plan_for(model, one, training=True)
    assert (plan.encoder, plan.decoder) == (NUMPY, NUMPY)  # the control: one unpadded sentence takes it
    two = torch.tensor([[True] * 4, [True] * 3 + [False]])
    padded = torch.tensor([[True] * 3 + [False]])
    for mask in (two, padded):
        for training in (True, False):
            model.backend = "numpy"
            plan = plan_for(model, mask, training)
            assert (plan.encoder, plan.decoder) == (REFERENCE_BACKEND, REFERENCE_BACKEND)
            assert ("numpy", "sentences = many (one only)") in plan.passed_over
            model.backend = "auto"
            plan = plan_for(model, mask, training)
            # in tagging, fused's padded BiLSTM (tests/backends/test_fused_sketch.py)
            assert (plan.encoder, plan.decoder) == (REFERENCE_BACKEND if training else FUSED, FUSED)
    for name in ("auto", "numpy", "numba"):
        plan = choose_backend(ModelConfig(), "one", "cuda", "float32", True, force=name)
        assert plan.encoder is REFERENCE_BACKEND and plan.decoder in (FUSED, REFERENCE_BACKEND), name
    assert NUMPY.refuses("encoder", {"sentences": "one", "device": "cuda"}) == "device = cuda (cpu only)"
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5).double()
    model.backend = "auto"
    run_both(decoder, None, [4, 3], backend=plan_for(model, two, training=True).decoder)
    assert not counted


def test_lean_bilstm_matches_nn_lstm(loops):
    torch.manual_seed(0)
    encoder = BiLSTMEncoder(7, 5).double()
    for length in (1, 2, 9):
        x = torch.randn(1, length, 7, dtype=torch.float64, requires_grad=True)
        upstream = torch.randn(1, length, 10, dtype=torch.float64)
        found = []
        for backend in (loops, REFERENCE_BACKEND):
            encoder.zero_grad()
            x.grad = None
            out = backend.encoder(encoder, x, torch.ones(1, length, dtype=torch.bool))
            (out * upstream).sum().backward()
            found.append([out.detach(), x.grad.clone()] + [p.grad.clone() for p in encoder.parameters()])
        for a, b in zip(*found, strict=True):
            torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-10)


def test_lean_bilstm_gradcheck(loops):
    torch.manual_seed(0)
    lstm = BiLSTMEncoder(4, 3).double().lstm
    weights = [getattr(lstm, name).detach().clone().requires_grad_() for name in LSTM_WEIGHTS]
    x = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    kernels = kernels_of(loops)

    def function(x, *weights):
        return lean.LeanBiLSTMFunction.apply(x, kernels, *weights)

    assert torch.autograd.gradcheck(function, (x, *weights))


def test_csoftmax_row_matches_the_batched_function(loops):
    generator = torch.Generator().manual_seed(3)
    for trial in range(200):
        length = 1 + trial % 12
        z = torch.randn(length, generator=generator, dtype=torch.float64) * (3 if trial % 3 else 300)
        u = torch.rand(length, generator=generator, dtype=torch.float64)
        u[torch.rand(length, generator=generator) < 0.3] = 0.0  # spent words
        if trial % 7 == 0:
            u = u * 0.5 / max(u.sum().item(), 1e-9)  # Σu ≤ 1: tight
        if loops is NUMBA:
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
        if loops is NUMBA:
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
        if loops is NUMBA:
            alpha, free = np.empty(len(z)), np.empty(len(z), bool)
            lean.kernels().softmax_row(z.numpy(), alpha, free)
        else:
            alpha, free = lean_rows.softmax_row(z.numpy())
        np.testing.assert_allclose(alpha, torch.softmax(z, -1).numpy(), atol=1e-12, rtol=1e-10)
        assert free.all()


@pytest.mark.parametrize("attention", ATTENTIONS)
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
    config.model.decoder.attention = attention
    vocabs = build_vocabularies(config, [sentence])
    torch.manual_seed(1)
    model = EasyFirstTagger(config.model, config.loss, vocabs).double()
    model.train()
    optimizer = make_optimizer("adagrad", 0.1, model)
    parameters = list(model.parameters())
    batch = collate([encode(vocabs, sentence.words, sentence.tags)], [0])
    found = []
    for backend in (loops, REFERENCE_BACKEND):
        model.backend = backend.name  # forced: backward_step runs plan_for's plan
        plan = plan_for(model, batch.mask, training=True)
        assert (plan.encoder, plan.decoder) == (backend, backend)
        torch.manual_seed(7)
        _, norm = backward_step(model, model, optimizer, parameters, batch, config.train)
        assert norm > config.train.clip  # the clip acts
        found.append([None if p.grad is None else p.grad.to_dense().clone() for p in parameters])
    for a, b in zip(*found, strict=True):
        assert (a is None) == (b is None)  # a prescribed order's v gets no gradient either way
        if a is not None:
            torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-9)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_the_training_log_says_which_loops_run_a_sentence(tmp_path, backend, counted):
    """At one sentence per update on the CPU the log names the backend that runs the updates (here
    forced by ``train.backend``), and the updates take its loops."""
    if backend == "numba":
        need_numba()
    config = Config.load(REFERENCE)
    config.data.train = config.data.dev = str(SAMPLE)
    config.train.epochs, config.model.decoder.sketch_steps = 1, 2
    config.train.backend = backend
    log = io.StringIO()
    train(config, tmp_path / "run", console=Console(file=log, width=1000))
    assert counted  # the updates took the lean loop
    for text in (log.getvalue(), (tmp_path / "run" / "train.log").read_text()):  # the screen and the file
        line = next(line for line in text.splitlines() if line.startswith("backend updates: "))
        assert line == f"backend updates: {backend} (BiLSTM and decoder)"


def test_without_numba_the_numpy_loops_train(tmp_path):
    """An install without the extra ``fast``: the import falls back to the NumPy loops, and training at
    one sentence per update runs on them."""
    script = f"""
import sys
sys.modules["numba"] = None  # as if it were not installed
from easyfirst.backends import lean, rows as lean_rows
assert lean.kernels() is None
from easyfirst.config import Config
from easyfirst.training.loop import train
config = Config.load({str(REFERENCE)!r})
config.data.train = config.data.dev = {str(SAMPLE)!r}
config.train.epochs, config.model.decoder.sketch_steps = 1, 2
train(config, {str(tmp_path / "run")!r})
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "run" / "train.log").read_text()
    line = next(line for line in log.splitlines() if line.startswith("backend updates: "))
    assert line.startswith("backend updates: numpy (BiLSTM and decoder); passed over")
    assert "numba: Numba is not installed (pip install 'easyfirst[fast]')" in line  # how to get it
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
from easyfirst.backends import lean, rows as lean_rows
if lean.kernels() is not None:  # with the extra fast: training takes the kernels
    from easyfirst.config import Config
    from easyfirst.training.loop import train
    config = Config.load({str(REFERENCE)!r})
    config.data.train = config.data.dev = {str(SAMPLE)!r}
    config.train.epochs, config.model.decoder.sketch_steps = 1, 2
    train(config, {str(tmp_path / "run")!r})
    assert "backend updates: numba (BiLSTM and decoder)" in open({str(tmp_path / "run" / "train.log")!r}).read()
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
    for backend in (loops, REFERENCE_BACKEND):
        encoder.zero_grad()
        x.grad = None
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(
                "easyfirst.backends.lean.lean_bilstm",
                lambda *a, used=backend.name, **k: calls.append((used, k.get("loops"))) or original(*a, **k),
            )
            out = backend.encoder(encoder, x, torch.ones(1, 6, dtype=torch.bool))
        (out * upstream).sum().backward()
        found.append([out.detach(), x.grad.clone()] + [p.grad.clone() for p in encoder.parameters()])
    assert calls == [(loops.name, kernels_of(loops))] * 2  # both layers took it, only on the backend
    for a, b in zip(*found, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-10)
