"""The one chooser of backends (easyfirst.backends.chooser): which backend computes each part of the
model for which settings and batches; a setting that no fast backend declares runs the reference, and
the log says so; a forced backend runs where it applies and the reference elsewhere; one attention table.
That backend numba computes what the reference computes is tests/backends/test_compiled.py's (float64,
outputs and gradients)."""

from __future__ import annotations

import ast
import hashlib
import io
import json
import os
from pathlib import Path

import pytest
from rich.console import Console

import easyfirst
from conftest import SAMPLE, run_cli, train_on_sample
from easyfirst.backends import NAMES, compiled, declaration
from easyfirst.backends import chooser as chooser_module
from easyfirst.backends.chooser import BACKENDS, choose_backend
from easyfirst.backends.declaration import DECODER_SETTINGS, REVISIONS
from easyfirst.config import Config
from easyfirst.model.settings import DecoderSettings, ModelConfig
from easyfirst.ops.attention import ATTENTIONS
from easyfirst.ops.kinds import KINDS
from easyfirst.training.loop import train


def test_one_table_of_attention_names_and_codes():
    codes = [kind.code for kind in KINDS.values()]
    assert len(set(codes)) == len(codes), "every attention has its own code"
    assert set(ATTENTIONS) == set(KINDS), "every name in the table has its function, and no other"
    assert declaration.ROW_ATTENTIONS <= set(KINDS)
    # the constants the compiled rows compare with are the table's, by name
    for name in declaration.ROW_ATTENTIONS:
        assert getattr(declaration, name.upper().replace("-", "_")) == KINDS[name].code
    assert set(declaration.LEARNED) == {KINDS[n].code for n in ("csoftmax", "sparsemax", "softmax")}


def test_backend_names_are_one_list():
    assert tuple(BACKENDS) == NAMES
    assert Config().train.backend == "auto"


@pytest.mark.parametrize(
    ("model", "attention", "sentences", "device", "dtype", "training", "expected"),
    [
        ("nef-f", "csoftmax", "one", "cpu", "float32", True, ("numba", "numba")),
        ("nef-s", "hard", "one", "cpu", "float64", True, ("numba", "numba")),
        ("nef-f", "csoftmax", "one", "cpu", "float32", False, ("numba", "numba")),
        ("nef-f", "entmax15", "one", "cpu", "float32", True, ("numba", "reference")),
        ("nef-f", "csoftmax", "many", "cpu", "float32", True, ("numba", "numba")),
        ("nef-s", "csoftmax", "many", "cpu", "float64", False, ("numba", "numba")),  # tagging: any batch
        ("nef-f", "csoftmax", "one", "cuda", "float32", True, ("reference", "reference")),  # the GPU
        ("nef-s", "sparsemax", "many", "cuda", "float32", False, ("reference", "reference")),
        ("nef-f", "csoftmax", "one", "cpu", "bfloat16", False, ("reference", "reference")),
        ("bilstm", "csoftmax", "many", "cpu", "float32", False, ("numba", None)),
        ("nef-f", "sparsemax", "many", "cpu", "float32", True, ("numba", "numba")),
        ("nef-f", "csparsemax", "one", "cpu", "float32", True, ("numba", "reference")),
        ("bilstm", "csoftmax", "one", "cpu", "float32", False, ("numba", None)),
    ],
)
def test_the_chooser_takes_the_first_backend_that_declares_the_batch(
    model, attention, sentences, device, dtype, training, expected
):
    config = ModelConfig(model=model, decoder=DecoderSettings(attention=attention))
    plan = choose_backend(config, sentences, device, dtype, training)
    assert (plan.encoder.name, plan.decoder and plan.decoder.name) == expected
    if expected[1] == "reference" and device == "cpu" and dtype != "bfloat16" and attention != "sparsemax":
        assert f"attention = {attention}" in plan.describe()  # why the faster ones were passed over


def test_a_forced_backend_runs_where_it_supports_the_batch_and_the_reference_elsewhere():
    config = ModelConfig(decoder=DecoderSettings(attention="sparsemax"))
    plan = choose_backend(config, "many", "cuda", "float32", True, force="numba")
    assert (plan.encoder.name, plan.decoder.name) == ("reference", "reference")
    assert plan.describe() == (
        "reference (the model's torch modules: BiLSTM and decoder) — numba: device = cuda (cpu only)"
    )
    plan = choose_backend(config, "many", "cpu", "float32", True, force="numba")
    assert (plan.encoder.name, plan.decoder.name) == ("numba", "numba")
    plan = choose_backend(ModelConfig(), "many", "cpu", "float32", True, force="reference")
    assert (plan.encoder.name, plan.decoder.name) == ("reference", "reference")
    for removed in ("fast", "fused"):  # fused: a backend since removed
        with pytest.raises(ValueError, match=f"unknown backend '{removed}': one of auto, numba, reference$"):
            choose_backend(ModelConfig(), "many", "cpu", "float32", True, force=removed)


def test_a_setting_no_fast_backend_declares_runs_the_reference_and_the_log_says_so(tmp_path, monkeypatch):
    """A new decoder setting (here a made-up one, ``sketch_novelty``) that no backend declares: training
    at one sentence per update, which would take the compiled decoder, runs the reference decoder
    (the fast loops are made to fail if called), and the log and metrics.json say why."""
    monkeypatch.setattr(chooser_module, "DECODER_SETTINGS", (*DECODER_SETTINGS, "sketch_novelty"))
    read = ModelConfig.get
    monkeypatch.setattr(
        ModelConfig, "get", lambda self, key: 1 if key == "sketch_novelty" else read(self, key)
    )
    monkeypatch.setattr(compiled, "_sketch", lambda *a, **k: pytest.fail("a fast decoder ran"))
    config = Config.load(os.path.join(os.path.dirname(__file__), "..", "..", "configs", "pos-reference.toml"))
    config.data.train = config.data.dev = str(SAMPLE)
    config.train.epochs, config.model.decoder.sketch_steps, config.train.workers = 1, 2, 1
    log = io.StringIO()
    train(config, tmp_path / "run", console=Console(file=log, width=1000))
    line = next(x for x in log.getvalue().splitlines() if x.startswith("backend "))
    updates = line.removeprefix("backend ").split(" for the updates; ")[0]
    assert updates == (
        "numba (compiled CPU loops: BiLSTM), reference (the model's torch modules: "
        "decoder) — numba: does not declare sketch_novelty"
    )
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["backend"] == updates


# The reference's code, per part, at the revisions of easyfirst.backends.declaration.REVISIONS: a digest
# of each module's source as Python's ast.unparse writes it, without docstrings (comments and layout do
# not count)
REFERENCE_CODE = {
    "encoder": ("model/encoder.py",),
    "decoder": ("model/sketch.py", "ops/window.py", "ops/attention.py", "ops/constrained.py"),
}
DIGESTS = {"encoder": "1917b25b7850437a", "decoder": "e648d4ae8cebcdf3"}


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def digest(part: str) -> str:
    package = Path(easyfirst.__file__).parent
    trees = [
        _without_docstrings(ast.parse((package / name).read_text(encoding="utf-8")))
        for name in REFERENCE_CODE[part]
    ]
    return hashlib.sha256("\n".join(ast.unparse(tree) for tree in trees).encode()).hexdigest()[:16]


@pytest.mark.parametrize("part", ["encoder", "decoder"])
def test_a_change_to_the_reference_asks_whether_its_revision_changes(part):
    """The reference's code is what the fast backends were checked against at its revision. Changed
    code fails here until a maintainer decides: what it computes changed (bump REVISIONS[part]; the fast
    backends then decline the part until ported), or not (a refactor: record the new digest)."""
    found = digest(part)
    assert found == DIGESTS[part], (
        f"the reference {part} changed ({', '.join(REFERENCE_CODE[part])}). If what it computes changed, "
        f"bump REVISIONS[{part!r}] in easyfirst/backends/declaration.py: every fast backend declines the "
        f"{part} until it is ported and declares the new revision. Either way, set DIGESTS[{part!r}] "
        f"here to {found!r}."
    )


def test_a_new_revision_of_the_reference_runs_the_reference_until_the_backends_are_ported(monkeypatch):
    """Revision 2 of the decoder's equations, which no fast backend declares: the decoder runs the
    reference on every batch, the encoder keeps its fast backend, and the plan says why."""
    monkeypatch.setitem(REVISIONS, "decoder", 2)
    for sentences, encoder in (("one", "numba"), ("many", "numba")):
        plan = choose_backend(ModelConfig(), sentences, "cpu", "float32", True)
        assert (plan.encoder.name, plan.decoder.name) == (encoder, "reference")
    assert "not ported to revision 2 of the reference's decoder (computes 1)" in plan.describe()
    monkeypatch.setitem(REVISIONS, "decoder", 1)
    assert (
        choose_backend(ModelConfig(), "many", "cpu", "float32", True).decoder.name == "numba"
    )  # the control


def test_the_tagger_gives_the_same_tags_on_every_backend(monkeypatch):
    from easyfirst.api import Tagger

    tagger = Tagger.load()  # the bundled en-upos: NEF-F, csoftmax
    tagger.processes = 1
    words = "She reads a book about the old city .".split()
    calls = []
    original = compiled._sketch
    monkeypatch.setattr(compiled, "_sketch", lambda *a, **k: calls.append(1) or original(*a, **k))
    found = {}
    for name in ("auto", "numba", "reference"):
        tagger.backend = name
        calls.clear()
        found[name] = tagger.tag([words])[0].tags
        assert bool(calls) == (name in ("auto", "numba")), name  # tagging on the CPU: the compiled path
    assert len({tuple(tags) for tags in found.values()}) == 1
    with pytest.raises(ValueError, match="unknown backend"):
        tagger.backend = "fast"


def test_the_command_line_forces_a_backend_and_refuses_an_unknown_one(tmp_path):
    done = run_cli("tag", "--text", "She reads .", "--backend", "fast")
    assert done.returncode == 2 and b"--backend fast: one of auto, numba" in done.stderr
    assert b"Traceback" not in done.stderr
    done = train_on_sample(tmp_path / "run", "--backend", "reference", "--sketch-steps", "2", epochs=1)
    assert done.returncode == 0, done.stderr.decode()
    text = (tmp_path / "run" / "train.log").read_text()
    assert "backend reference (the model's torch modules: BiLSTM and decoder)" in text
    # and, without --threads, one torch thread (issue #46: more spin when other work shares the cores)
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["threads"] == 1
    assert metrics["processor"].strip() and "\n" not in metrics["processor"]  # what the seconds ran on
    done = run_cli("export", tmp_path / "run", "--output", tmp_path / "exported")
    assert done.returncode == 0, done.stderr.decode()
    card = (tmp_path / "exported" / "README.md").read_text()  # the model card says which backend trained it
    assert "Backend: reference (the model's torch modules: BiLSTM and decoder)." in card
