"""Backend ``numba``, the compiled CPU path (easyfirst.backends.compiled on the loops of kernels.py and
rows.py), against the reference in float64: the decoder's step loop against SketchDecoder's autograd
loop (outputs and every gradient, one sentence and padded batches), the BiLSTM against ``nn.LSTM``, each
attention row against the batched functions and slow solvers, and the whole model's clipped gradients;
in float32, the bundled model's tags; and the process around it left as it was."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import entmax
import numpy as np
import pytest
import torch
from rich.console import Console
from sketch_batches import padded_batch, random_output_layer, run_both

from conftest import SAMPLE
from easyfirst.backends import chooser, compiled, kernels
from easyfirst.backends import rows as compiled_rows
from easyfirst.backends.chooser import REFERENCE, choose_backend, plan_for
from easyfirst.backends.compiled import NUMBA, BiLSTMFunction
from easyfirst.backends.declaration import PRESCRIBED, ROW_ATTENTIONS
from easyfirst.config import Config
from easyfirst.data.batching import collate, encode
from easyfirst.data.conllu import read_conllu
from easyfirst.model.encoder import BiLSTMEncoder
from easyfirst.model.settings import EncoderSettings, ModelConfig
from easyfirst.model.sketch import SketchDecoder
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.ops.constrained import _EXP_RANGE, csoftmax_forward
from easyfirst.ops.kinds import KINDS
from easyfirst.training.epochs import backward_step
from easyfirst.training.loop import build_vocabularies, train
from easyfirst.training.optim import make_optimizer
from reference import slow_csoftmax
from tiny_transformer import tiny_bert

CONFIG = Path(__file__).parents[2] / "configs" / "pos-reference.toml"  # the paper's regime
LENGTHS = [5, 1, 3, 7, 0, 6]  # padding, a one-word and an empty sentence
ATTENTIONS = sorted(ROW_ATTENTIONS)  # sorted: stable test ids
# the prescribed orders (α independent of the model) at one length, the others at three
SHAPES = [(a, n) for a in ATTENTIONS for n in ((7,) if KINDS[a].code in PRESCRIBED else (7, 3, 2))]
CLOSE = {"atol": 1e-11, "rtol": 1e-9}


def decoder_for(attention: str, full_state: bool, **options) -> SketchDecoder:
    torch.manual_seed(0)
    decoder = SketchDecoder(
        6, sketch_dim=4, attention_dim=5, full_state=full_state, attention=attention, **options
    )
    decoder = decoder.double()
    if attention == "sparsemax":  # scores large enough for sparse steps, where the support matters
        with torch.no_grad():
            decoder.v.weight.mul_(4)
    return decoder


@pytest.mark.parametrize("full_state", [True, False], ids=["NEF-F", "NEF-S"])
@pytest.mark.parametrize("steps", [None, 2, 5, 16], ids=["N=L", "N=2", "N=5", "N>L"])
@pytest.mark.parametrize(
    "options", [{}, {"temperature": 0.4, "coverage_penalty": 1.5}], ids=["plain", "temperature+coverage"]
)
@pytest.mark.parametrize(("attention", "length"), SHAPES)
def test_one_sentence_with_gradients_matches_the_reference(full_state, steps, options, length, attention):
    found, expected = run_both(decoder_for(attention, full_state, **options), steps, [length], backend=NUMBA)
    assert found.keys() == expected.keys()  # the same parameters get gradients (v none, for a fixed order)
    for name in found:
        torch.testing.assert_close(found[name], expected[name], **CLOSE, msg=name)


@pytest.mark.parametrize("full_state", [True, False], ids=["NEF-F", "NEF-S"])
@pytest.mark.parametrize("attention", ["csoftmax", "sparsemax", "hard"])
def test_a_padded_batch_with_gradients_matches_the_reference(full_state, attention):
    """Each sentence's backward on its own rows."""
    found, expected = run_both(decoder_for(attention, full_state), None, [5, 1, 3, 7, 6], backend=NUMBA)
    for name in found:
        torch.testing.assert_close(found[name], expected[name], **CLOSE, msg=name)


@pytest.mark.parametrize("full_state", [True, False], ids=["NEF-F", "NEF-S"])
@pytest.mark.parametrize(
    ("steps", "beyond"), [(None, True), (2, True), (9, True), (4, False)], ids=["N=L", "N=2", "N>L", "N<=4"]
)
@pytest.mark.parametrize(
    "options", [{}, {"temperature": 0.4, "coverage_penalty": 1.5}], ids=["plain", "temperature+coverage"]
)
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_tagging_a_padded_batch_matches_the_reference(full_state, steps, beyond, options, attention):
    decoder = decoder_for(attention, full_state, **options)
    states, mask = padded_batch(LENGTHS, 6, 0)
    score_words = random_output_layer(states, 4, 0)
    with torch.no_grad():
        found = NUMBA.decoder(decoder, states, mask, steps, score_words, beyond)
        expected = REFERENCE.decoder(decoder, states, mask, steps, score_words, beyond)
    assert found[1].shape == expected[1].shape
    words = mask.any(1)  # the empty sentence: zeros here (the reference's softmax steps give it NaN)
    for a, b in zip(found, expected, strict=True):
        torch.testing.assert_close(a[words], b[words], **CLOSE)
        assert not a[~words].any()


@pytest.mark.parametrize("steps", [None, 12], ids=["N=L", "N>L"])
@pytest.mark.parametrize("full_state", [True, False], ids=["NEF-F", "NEF-S"])
def test_tagging_skips_the_words_whose_budget_is_spent(full_state, steps):
    """With sharp csoftmax attention a word's budget is spent after a step or two (α = u = 1 − β): in
    tagging its row of Eq. 1 and its score are not computed, which changes nothing (csoftmax gives it
    0 whatever it scores), with N = L and with a fresh unit of budget every L steps."""
    decoder = decoder_for("csoftmax", full_state, temperature=0.05)
    states, mask = padded_batch(LENGTHS, 6, 3)
    with torch.no_grad():
        found = NUMBA.decoder(decoder, states, mask, steps, None, True)
        expected = REFERENCE.decoder(decoder, states, mask, steps, None, True)
    history = expected[1]
    lengths = mask.sum(1)
    n_steps = lengths if steps is None else torch.full_like(lengths, steps)  # N_b
    running = (torch.arange(history.shape[1])[None, :] < n_steps[:, None])[..., None] & mask[:, None, :]
    spent = (history == 0) & running  # words of steps that run, given nothing
    assert spent[:, 1:].sum() > 20  # words left out at later steps: the skipped rows are exercised
    words = mask.any(1)
    for a, b in zip(found, expected, strict=True):
        torch.testing.assert_close(a[words], b[words], **CLOSE)


@pytest.mark.parametrize("full_state", [True, False], ids=["NEF-F", "NEF-S"])
def test_scores_beyond_the_exp_range_take_the_log_space_csoftmax(full_state):
    """At temperature 1e-3 the scores reach thousands of nats: the compiled csoftmax works in log space
    there, with the reference's answer and gradients, in training and in tagging."""
    decoder = decoder_for("csoftmax", full_state, temperature=1e-3)
    found, expected = run_both(decoder, None, [6], backend=NUMBA)
    assert found["history"].abs().max() > 0.99  # one word takes a whole step: the scores are that far apart
    for name in found:
        torch.testing.assert_close(found[name], expected[name], **CLOSE, msg=name)
    states, mask = padded_batch(LENGTHS, 6, 0)
    with torch.no_grad():
        tagged = NUMBA.decoder(decoder, states, mask, None, None, True)
        reference = REFERENCE.decoder(decoder, states, mask, None, None, True)
    for a, b in zip(tagged, reference, strict=True):
        torch.testing.assert_close(a, b, **CLOSE)


@pytest.mark.parametrize("layers", [1, 2])
def test_the_bilstm_matches_nn_lstm_with_gradients(layers):
    torch.manual_seed(0)
    encoder = BiLSTMEncoder(7, 5, layers).double()
    for lengths in ([1], [9], [5, 1, 3, 7, 6]):
        x, mask = padded_batch(lengths, 7, 1)
        x.requires_grad_(True)
        upstream = torch.randn(*mask.shape, 10, dtype=torch.float64)
        found = []
        for backend in (NUMBA, REFERENCE):
            encoder.zero_grad()
            x.grad = None
            out = backend.encoder(encoder, x, mask)
            (out * upstream).sum().backward()
            found.append([out.detach(), x.grad.clone()] + [p.grad.clone() for p in encoder.parameters()])
        assert not found[0][0][~mask].any()  # zeros on padding, as pad_packed_sequence gives
        for a, b in zip(*found, strict=True):
            torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-10)


def test_the_bilstm_function_passes_gradcheck():
    generator = torch.Generator().manual_seed(0)
    # the input parts of 2 sentences (the second 2 words long), 2 directions, 4 gates of 2 units
    inputs = torch.randn(2, 4, 2, 8, dtype=torch.float64, generator=generator).requires_grad_()
    w_hh_t = torch.randn(2, 2, 8, dtype=torch.float64, generator=generator).requires_grad_()
    lengths = np.array([4, 2])
    assert torch.autograd.gradcheck(lambda x, w: BiLSTMFunction.apply(x, w, lengths), (inputs, w_hh_t))


def rows(function, *inputs):
    length = inputs[0].shape[0]
    alpha, free = np.empty(length), np.empty(length, dtype=np.bool_)
    function(*inputs, alpha, free)
    return alpha, free


def test_the_csoftmax_row_matches_the_batched_function_and_the_slow_solver():
    module = compiled_rows
    generator = torch.Generator().manual_seed(3)
    for trial in range(300):
        length = 1 + trial % 12
        z = torch.randn(length, generator=generator, dtype=torch.float64) * (3, 300, 3000)[trial % 3]
        u = torch.rand(length, generator=generator, dtype=torch.float64)
        u[torch.rand(length, generator=generator) < 0.3] = 0.0  # spent words
        if trial % 7 == 0:
            u = u * 0.5 / max(u.sum().item(), 1e-9)  # Σu ≤ 1: tight
        alpha, free = rows(module.csoftmax_row, z.numpy(), u.numpy(), _EXP_RANGE)
        expected, expected_free = csoftmax_forward(z[None], u[None])
        np.testing.assert_allclose(alpha, expected[0].numpy(), atol=1e-12, rtol=1e-10)
        assert (free == expected_free[0].numpy()).all()
    z, u = np.array([2.0, 0.5, -1.0, 1.0]), np.array([0.3, 1.0, 1.0, 0.9])
    alpha, free = rows(module.csoftmax_row, z, u, 700.0)
    np.testing.assert_allclose(alpha, slow_csoftmax(list(z), list(u)), rtol=1e-12)
    assert list(free) == [False, True, True, True]  # the first word is held at its bound 0.3
    # the same scores shifted 900 nats up take the log-space path, with the same answer
    np.testing.assert_allclose(rows(module.csoftmax_row, z + 900, u, 700.0)[0], alpha, rtol=1e-12)
    # a word 800 nats below the others, with budget: exp underflows, the log space gives it its share
    alpha, _ = rows(module.csoftmax_row, np.array([0.0, -800.0]), np.array([0.5, 1.0]), 700.0)
    np.testing.assert_allclose(alpha, [0.5, 0.5])


def test_the_sparsemax_and_softmax_rows():
    module = compiled_rows
    generator = torch.Generator().manual_seed(5)
    sparse_rows = 0
    for trial in range(200):
        z = torch.randn(1 + trial % 12, generator=generator, dtype=torch.float64) * (0.3, 1, 5)[trial % 3]
        alpha, support = rows(module.sparsemax_row, z.numpy())
        expected = entmax.sparsemax(z, dim=-1).numpy()
        np.testing.assert_allclose(alpha, expected, atol=1e-12, rtol=1e-10)
        assert (support == (expected > 0)).all()
        sparse_rows += bool((expected == 0).any())
        alpha, free = rows(module.softmax_row, z.numpy() * 60)
        np.testing.assert_allclose(alpha, torch.softmax(z * 60, -1).numpy(), atol=1e-12, rtol=1e-10)
        assert free.all()
    assert sparse_rows > 50  # the rows exercised zeros, not only full supports
    alpha, free = rows(module.sparsemax_row, np.array([1.0, 0.5, -1.0]))  # τ = 0.25 by hand
    np.testing.assert_allclose(alpha, [0.75, 0.25, 0.0])


@pytest.mark.parametrize("count", [1, 3], ids=["one-sentence", "batch-of-3"])
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_the_models_clipped_gradients_are_the_same_both_ways(tmp_path, attention, count):
    """The whole tagger at one sentence per update and on a padded batch, with dropout, sparse embedding
    gradients and a clip that acts: gradients after clipping are equal whichever path computed them."""
    sentences = read_conllu(SAMPLE)[:count]
    config = Config()
    config.train.batch_size, config.train.reduction, config.train.clip = count, "sum", 0.5
    config.model.decoder.attention = attention
    vocabs = build_vocabularies(config, sentences)
    torch.manual_seed(1)
    model = EasyFirstTagger(config.model, config.loss, vocabs).double()
    model.train()
    optimizer = make_optimizer("adagrad", 0.1, model)
    parameters = list(model.parameters())
    batch = collate([encode(vocabs, s.words, s.tags) for s in sentences], list(range(count)))
    found = []
    for backend in (NUMBA, REFERENCE):
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


def test_a_fine_tuned_transformer_under_the_compiled_bilstm_gets_the_references_gradients(tmp_path):
    """The compiled BiLSTM reads a transformer's word vectors as any other input: with a tiny random
    BERT fine-tuned under it, every gradient (the transformer's included) is the reference's."""
    bert = tiny_bert(tmp_path / "bert")
    sentences = read_conllu(SAMPLE)[:2]
    config = Config()
    config.train.batch_size, config.train.reduction = 2, "sum"
    config.model.embedder.transformer, config.model.embedder.transformer_finetune = str(bert), True
    vocabs = build_vocabularies(config, sentences)
    torch.manual_seed(1)
    model = EasyFirstTagger(config.model, config.loss, vocabs).double()
    model.eval()  # no dropout: BERT's own would draw differently around the two paths
    optimizer = make_optimizer("adagrad", 0.1, model)
    parameters = list(model.parameters())
    batch = collate([encode(vocabs, s.words, s.tags) for s in sentences], [0, 1])
    found = []
    for backend in (NUMBA, REFERENCE):
        model.backend = backend.name
        assert plan_for(model, batch.mask, training=True).encoder is backend
        backward_step(model, model, optimizer, parameters, batch, config.train)
        found.append(
            {n: p.grad.to_dense().clone() for n, p in model.named_parameters() if p.grad is not None}
        )
    assert any("transformer" in name for name in found[0])  # the transformer's weights got gradients
    assert found[0].keys() == found[1].keys()
    for name in found[0]:
        torch.testing.assert_close(found[0][name], found[1][name], atol=1e-12, rtol=1e-9, msg=name)


def test_the_training_log_says_in_one_line_which_backend_runs(tmp_path):
    config = Config.load(CONFIG)
    config.data.train = config.data.dev = str(SAMPLE)
    config.train.epochs, config.model.decoder.sketch_steps = 1, 2
    log = io.StringIO()
    train(config, tmp_path / "run", console=Console(file=log, width=1000))
    for text in (log.getvalue(), (tmp_path / "run" / "train.log").read_text()):  # the screen and the file
        lines = [line for line in text.splitlines() if line.startswith("backend ")]
        assert lines == [
            "backend numba (compiled CPU loops: BiLSTM and decoder)"
        ]  # updates, dev scores alike


def test_the_bundled_model_tags_as_the_reference_does_in_float32():
    """en-upos (NEF-F, csoftmax, N = L) on the sample, in one batch and one sentence at a time: the tags
    of the reference, the probabilities within float32 rounding."""
    from easyfirst.api import Tagger

    tagger = Tagger.load()
    tagger.processes = 1
    words = [s.words for s in read_conllu(SAMPLE)]
    tagger.backend = "reference"
    expected = tagger.tag(words, probabilities=True, attention=True)
    tagger.backend = "auto"
    assert chooser.backend_line(tagger.model) == "numba (compiled CPU loops: BiLSTM and decoder)"
    for batch_size in (256, 1):
        found = tagger.tag(words, probabilities=True, attention=True, batch_size=batch_size)
        assert [t.tags for t in found] == [t.tags for t in expected]
        for a, b in zip(found, expected, strict=True):
            torch.testing.assert_close(a.probabilities, b.probabilities, atol=3e-5, rtol=0)
            torch.testing.assert_close(a.attention, b.attention, atol=3e-5, rtol=0)


def test_the_chooser_takes_the_compiled_path_wherever_it_runs():
    config = ModelConfig()
    for sentences in ("one", "many"):
        for dtype in ("float32", "float64"):
            plan = choose_backend(config, sentences, "cpu", dtype, False)
            assert (plan.encoder, plan.decoder) == (NUMBA, NUMBA)
    for sentences in ("one", "many"):  # training: one sentence per update, and batches
        plan = choose_backend(config, sentences, "cpu", "float32", True)
        assert (plan.encoder, plan.decoder) == (NUMBA, NUMBA)
    on_the_gpu = choose_backend(config, "many", "cuda", "float32", True)
    assert (on_the_gpu.encoder.name, on_the_gpu.decoder.name) == ("reference", "reference")
    assert on_the_gpu.describe() == (
        "reference (the model's torch modules: BiLSTM and decoder) — numba: device = cuda (cpu only)"
    )
    assert choose_backend(config, "many", "cuda", "float32", False).decoder.name == "reference"
    # a wide BiLSTM runs faster in torch's LSTM: the compiled path keeps the decoder
    wide = choose_backend(
        ModelConfig(encoder=EncoderSettings(hidden_dim=200)), "many", "cpu", "float32", False
    )
    assert (wide.encoder.name, wide.decoder.name) == ("reference", "numba")  # torch's LSTM, padded
    assert wide.describe().endswith("— numba: hidden_dim = 200 (at most 64)")


def test_a_call_leaves_the_callers_blas_threads_as_they_were():
    from threadpoolctl import threadpool_info, threadpool_limits

    def threads():
        return sorted((i["filepath"], i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas")

    decoder = decoder_for("csoftmax", True)
    states, mask = padded_batch(LENGTHS, 6, 0)
    with threadpool_limits(2, user_api="blas"):  # what a caller set (not 1, which the calls use)
        before = threads()
        run_both(decoder, None, [5, 3], backend=NUMBA)  # forward and backward
        with torch.no_grad():
            NUMBA.decoder(decoder, states, mask, None, None, True)
        assert threads() == before


def test_the_first_compile_is_announced_once(monkeypatch, caplog):
    module = compiled.kernels()
    monkeypatch.setattr(module, "cold", lambda: True)
    monkeypatch.setattr(compiled, "_module", None)
    compiled_all = []
    monkeypatch.setattr(compiled, "_compile_every_loop", lambda: compiled_all.append(1))
    with caplog.at_level(logging.WARNING, logger="easyfirst"):
        assert compiled.kernels() is module
        assert compiled.kernels() is module
    assert compiled_all == [1]  # every loop, so that no later process finds one missing from the cache
    assert [r.getMessage() for r in caplog.records if "compiling" in r.getMessage()] == [
        "easyfirst: compiling the CPU loops (once after an install, about 30 s of one core); later runs read "
        "them from Numba's cache"
    ]


def test_compiling_every_loop_runs_each_once():
    module = compiled.kernels()
    with torch.inference_mode():  # as when a Tagger's first batch finds the cache cold
        compiled._compile_every_loop()
    for kernel in (module.bilstm, module.lstm_backward, module.decoder_forward, module.decoder_backward):
        assert kernel.signatures, kernel


def test_warming_up_compiles_every_loop_and_changes_no_choice():
    before = choose_backend(ModelConfig(), "many", "cpu", "float32", False)
    assert chooser.load_tagging_loops()
    assert choose_backend(ModelConfig(), "many", "cpu", "float32", False) == before
    module = compiled.kernels()
    assert module is kernels
    assert module.bilstm.signatures and module.decoder_forward.signatures  # compiled, or read from the cache


def test_a_tagger_loads_the_compiled_loops_only_where_its_batches_take_them():
    from easyfirst.api import Tagger

    tagger = Tagger.load()
    assert chooser.load_tagging_loops(tagger.model)  # auto: numba, on the CPU
    tagger.backend = "reference"
    assert not chooser.load_tagging_loops(tagger.model)
    assert chooser.backend_line(tagger.model) == "reference (the model's torch modules: BiLSTM and decoder)"
