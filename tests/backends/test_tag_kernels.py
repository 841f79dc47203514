"""Backend ``numba`` in tagging (easyfirst.backends.sentencewise, tag_kernels): every sentence of a padded
batch on its own rows in compiled loops. In float64 it computes what the reference computes (the
BiLSTM's states, the sketches and the attention history) for every attention, NEF-F and NEF-S and every
way of counting steps; in float32 (the rational tanh) it stays within float32 rounding of it and tags the
same. The chooser takes it for tagging only once its loops are loaded, and never for gradients through a
batch; without Numba nothing changes."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from test_fused_sketch import padded_batch, random_output_layer
from test_lean import need_numba

from conftest import SAMPLE
from easyfirst.backends import chooser, sentencewise
from easyfirst.backends.chooser import REFERENCE, choose_backend, load_tagging_loops
from easyfirst.backends.rows import ROW_ATTENTIONS
from easyfirst.backends.single import NUMBA
from easyfirst.data.conllu import read_conllu
from easyfirst.model.encoder import BiLSTMEncoder
from easyfirst.model.settings import ModelConfig
from easyfirst.model.sketch import SketchDecoder

LENGTHS = [5, 1, 3, 7, 0, 6]  # padding, a one-word and an empty sentence


@pytest.fixture
def loops(monkeypatch):
    """The tagging loops loaded for one test; afterwards the process is as before (not loaded, the
    chooser's answers forgotten), so that the other tests see the chooser they expect."""
    need_numba()
    monkeypatch.setattr(sentencewise, "_module", sentencewise._module)
    assert load_tagging_loops()
    yield
    monkeypatch.undo()
    chooser.forget_choices()


@pytest.mark.parametrize("full_state", [True, False], ids=["NEF-F", "NEF-S"])
@pytest.mark.parametrize(
    ("steps", "beyond"), [(None, True), (2, True), (9, True), (4, False)], ids=["N=L", "N=2", "N>L", "N<=4"]
)
@pytest.mark.parametrize(
    "options", [{}, {"temperature": 0.4, "coverage_penalty": 1.5}], ids=["plain", "temperature+coverage"]
)
@pytest.mark.parametrize("attention", sorted(ROW_ATTENTIONS))
def test_the_tagging_decoder_matches_the_reference_in_float64(
    full_state, steps, beyond, options, attention, loops
):
    torch.manual_seed(0)
    decoder = SketchDecoder(
        6, sketch_dim=4, attention_dim=5, full_state=full_state, attention=attention, **options
    )
    decoder = decoder.double()
    if attention == "sparsemax":  # scores large enough for sparse steps
        with torch.no_grad():
            decoder.v.weight.mul_(4)
    states, mask = padded_batch(LENGTHS, 6, 0)
    score_words = random_output_layer(states, 4, 0)
    with torch.no_grad():
        found = NUMBA.decoder(decoder, states, mask, steps, score_words, beyond)
        expected = REFERENCE.decoder(decoder, states, mask, steps, score_words, beyond)
    assert found[1].shape == expected[1].shape
    words = mask.any(1)  # the empty sentence: zeros here (the reference's softmax steps give it NaN)
    for a, b in zip(found, expected, strict=True):
        torch.testing.assert_close(a[words], b[words], atol=1e-11, rtol=1e-9)
        assert not a[~words].any()


@pytest.mark.parametrize("layers", [1, 2])
def test_the_tagging_bilstm_matches_nn_lstm_in_float64(layers, loops):
    torch.manual_seed(0)
    encoder = BiLSTMEncoder(7, 5, layers).double()
    x, mask = padded_batch([5, 1, 3, 7, 6], 7, 1)  # nn.LSTM takes no empty sentence
    with torch.no_grad():
        found = NUMBA.encoder(encoder, x, mask)
        expected = REFERENCE.encoder(encoder, x, mask)
    torch.testing.assert_close(found, expected, atol=1e-12, rtol=1e-10)
    assert not found[~mask].any()  # zeros on padding, as pad_packed_sequence gives


def test_scores_beyond_the_exp_range_give_the_sentence_to_the_log_space_loop(loops, monkeypatch):
    """At temperature 1e-3 the scores reach thousands of nats: the compiled loop marks those sentences,
    and the NumPy loop, whose csoftmax takes the log-space path, computes them."""
    kernel, marked = sentencewise.tag_kernels().decoder_tag, []

    def spied(*arguments):
        kernel(*arguments)
        marked.append(int((~arguments[-1]).sum()))

    monkeypatch.setattr(sentencewise.tag_kernels(), "decoder_tag", spied)
    torch.manual_seed(0)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5, temperature=1e-3).double()
    states, mask = padded_batch(LENGTHS, 6, 0)
    with torch.no_grad():
        found = NUMBA.decoder(decoder, states, mask, None, None, True)
        expected = REFERENCE.decoder(decoder, states, mask, None, None, True)
    assert marked and 1 <= marked[0] < 5  # some sentences given back, the others computed here
    for a, b in zip(found, expected, strict=True):
        torch.testing.assert_close(a, b, atol=1e-11, rtol=1e-9)


def test_the_bundled_model_tags_the_same_in_float32(loops):
    """en-upos (NEF-F, csoftmax, N = L) on the sample, in one batch and one sentence at a time: the tags
    of the fused path, the probabilities within float32 rounding (docs/serve.md: at most 1.6e-5 on EWT
    dev and test)."""
    from easyfirst.api import Tagger

    tagger = Tagger.load()
    tagger.processes = 1
    words = [s.words for s in read_conllu(SAMPLE)]
    tagger.backend = "fused"
    expected = tagger.tag(words, probabilities=True, attention=True)
    tagger.backend = "auto"
    calls = []
    kernel = sentencewise.tag_kernels().decoder_tag
    sentencewise.tag_kernels().decoder_tag = lambda *a: calls.append(1) or kernel(*a)
    try:
        for batch_size in (256, 1):
            found = tagger.tag(words, probabilities=True, attention=True, batch_size=batch_size)
            assert [t.tags for t in found] == [t.tags for t in expected]
            for a, b in zip(found, expected, strict=True):
                torch.testing.assert_close(a.probabilities, b.probabilities, atol=3e-5, rtol=0)
                torch.testing.assert_close(a.attention, b.attention, atol=3e-5, rtol=0)
    finally:
        sentencewise.tag_kernels().decoder_tag = kernel
    assert len(calls) == 1 + len(words), "auto took the compiled loops for every batch"


def test_the_chooser_takes_numba_for_tagging_once_its_loops_are_loaded(monkeypatch):
    need_numba()
    monkeypatch.setattr(sentencewise, "_module", None)
    chooser.forget_choices()
    config = ModelConfig()
    for sentences in ("one", "many"):
        plan = choose_backend(config, sentences, "cpu", "float32", False)
        assert plan.decoder.name != "numba"
        assert (
            "numba",
            "its tagging loops are not loaded (easyfirst serve and --backend numba load them)",
        ) in (plan.passed_over)
    assert load_tagging_loops()
    try:
        for sentences in ("one", "many"):
            for dtype in ("float32", "float64"):
                plan = choose_backend(config, sentences, "cpu", dtype, False)
                assert (plan.encoder.name, plan.decoder.name) == ("numba", "numba")
        training = choose_backend(config, "many", "cpu", "float32", True)  # gradients through a batch: not it
        assert (training.encoder.name, training.decoder.name) == ("reference", "fused")
        assert ("numba", "sentences = many only with training = false") in training.passed_over
        assert (
            choose_backend(config, "one", "cpu", "float32", True).decoder.name == "numba"
        )  # training kernels
        assert choose_backend(config, "many", "cuda", "float32", False).decoder.name == "fused"
        assert choose_backend(config, "many", "cpu", "float32", False, force="fused").decoder.name == "fused"
    finally:
        monkeypatch.undo()
        chooser.forget_choices()


def test_gradients_through_a_batch_run_the_reference(loops):
    """Called with gradients on a batch (the chooser never does), the backend runs the reference rather
    than loops that would give none."""
    torch.manual_seed(0)
    decoder = SketchDecoder(6, sketch_dim=4, attention_dim=5).double()
    states, mask = padded_batch(LENGTHS, 6, 0)
    sketch, _ = NUMBA.decoder(decoder, states, mask, None, None, True)
    sketch.sum().backward()
    assert states.grad is not None and decoder.v.weight.grad is not None


def test_without_numba_loading_the_loops_says_so_and_tagging_runs_as_before():
    script = f"""
import sys
sys.modules["numba"] = None  # as if it were not installed
from easyfirst import Tagger
from easyfirst.backends.chooser import load_tagging_loops
from easyfirst.backends.chooser import choose_backend
from easyfirst.data.conllu import read_conllu
assert load_tagging_loops() is False
tagger = Tagger.load()
tagger.backend = "numba"  # forced: runs the reference where it cannot
words = [s.words for s in read_conllu({str(SAMPLE)!r})]
assert tagger.tag(words)[0].tags
plan = choose_backend(tagger.model.settings, "many", "cpu", "float32", False)
print(plan.decoder.name)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["fused"]


def test_load_runs_each_loop_once_so_that_no_request_waits_for_the_compiler(loops):
    from easyfirst.backends import tag_kernels

    module = sentencewise.tag_kernels()
    assert module is tag_kernels
    assert all(kernel.signatures for kernel in module.KERNELS)  # compiled, or read from Numba's cache
