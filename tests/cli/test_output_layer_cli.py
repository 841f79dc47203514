"""The output objectives from the command line: --loss/--label-smoothing/--temperature/--class-weight,
--crf, `tag --probabilities`, evaluate's calibration and sparsity, and their user errors."""

from __future__ import annotations

import json
import re
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLE, run_cli, started, train_on_sample
from easyfirst.config import Config
from easyfirst.errors import InputError


def distributions(text: str) -> tuple[list[str], list[tuple[str, str, list[float]]]]:
    lines = text.splitlines()
    header = lines[0].split("\t")
    assert header[:2] == ["word", "tag"]
    rows = []
    for line in lines[1:]:
        if line:
            word, tag, *values = line.split("\t")
            rows.append((word, tag, [float(v) for v in values]))
    return header[2:], rows


@pytest.fixture(scope="module")
def sparse_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "sparsemax"
    flags = ["--loss", "sparsemax", "--label-smoothing", "0.01", "--temperature", "2"]
    result = train_on_sample(out, *flags, "--class-weight", "NOUN=2", "--class-weight", "PUNCT=0.5")
    assert result.returncode == 0, result.stderr.decode()
    return out


def test_loss_options_are_saved_in_the_config(sparse_run):
    config = json.loads((sparse_run / "config.json").read_text())
    assert config["loss"] == {
        "loss": "sparsemax",
        "alpha": None,
        "label_smoothing": 0.01,
        "temperature": 2.0,
        "class_weights": {"NOUN": 2.0, "PUNCT": 0.5},
        "gap_class_weights": {},  # QE only (issue #16)
        "source_class_weights": {},
    }
    assert config["model"]["crf"] is False
    metrics = json.loads((sparse_run / "metrics.json").read_text())
    assert 0 <= metrics["test"]["ece"] <= 1 and 1 <= metrics["test"]["mean_support"] <= 16


def test_sparse_model_reports_exact_zeros(sparse_run):
    result = run_cli("tag", SAMPLE, "-m", sparse_run, "--probabilities")
    assert result.returncode == 0, result.stderr.decode()
    tags, rows = distributions(result.stdout.decode())
    assert len(rows) == 203 and len(tags) == 16
    for _, tag, values in rows:
        assert sum(values) == pytest.approx(1.0, abs=1e-4)
        assert tags[values.index(max(values))] == tag
    assert sum(v == 0.0 for _, _, row in rows for v in row) > len(rows)  # sparsemax: many exact zeros
    plain = run_cli("tag", "--text", "The dog barks .", "-m", sparse_run)
    probs = run_cli("tag", "--text", "The dog barks .", "-m", sparse_run, "--probabilities")
    expected = [line.split("\t") for line in plain.stdout.decode().splitlines()]
    assert [[w, t] for w, t, _ in distributions(probs.stdout.decode())[1]] == expected


def test_probabilities_of_a_conllu_stream_come_before_the_stream_ends(sparse_run):
    """`tag - --probabilities` reads CoNLL-U a batch at a time: with stdin still open after the whole
    sample, rows must already arrive (reading the whole input first would wait for end of file)."""
    with started(
        [
            sys.executable,
            "-m",
            "easyfirst",
            "tag",
            "-",
            "-m",
            str(sparse_run),
            "--probabilities",
            "--batch-size",
            "1",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:  # killed at the end of the block: its stdin is still open
        process.stdin.write(SAMPLE.read_bytes())
        process.stdin.flush()  # and stdin stays open
        ready, _, _ = select.select([process.stdout], [], [], 120)
        assert ready, "no output while the input stream was still open"
        assert process.stdout.read1(1 << 16).startswith(b"word\ttag\t")


def test_evaluate_reports_calibration_and_support(sparse_run):
    result = run_cli("evaluate", SAMPLE, "-m", sparse_run, "--json")
    assert result.returncode == 0, result.stderr.decode()
    report = json.loads(result.stdout)
    metrics = json.loads((sparse_run / "metrics.json").read_text())
    assert report["ece"] == pytest.approx(metrics["test"]["ece"], abs=1e-6)
    assert report["mean_support"] == pytest.approx(metrics["test"]["mean_support"])
    table = run_cli("evaluate", SAMPLE, "-m", sparse_run)
    assert b"ECE" in table.stdout and b"p > 0" in table.stdout


def test_model_folder_without_loss_keys_loads_as_softmax(tmp_path):
    """A config.json written before the [loss] table and the CRF existed (as older run folders hold)."""
    bundled = Path(__file__).parents[2] / "easyfirst/resources/en_ewt_upos"
    old = tmp_path / "old"
    shutil.copytree(bundled, old)
    config = json.loads((old / "config.json").read_text())
    config.pop("loss")
    for key in ("crf", "bio_constraints"):
        config["model"].pop(key)
    (old / "config.json").write_text(json.dumps(config))
    result = run_cli("evaluate", SAMPLE, "-m", old, "--json")
    assert result.returncode == 0, result.stderr.decode()
    report = json.loads(result.stdout)
    assert report["accuracy"] > 0.8 and report["mean_support"] > 10  # softmax: (almost) full support


def test_crf_model_tags_with_viterbi_and_reports_marginals(tmp_path):
    out = tmp_path / "crf"
    result = train_on_sample(out, "--crf", "--model", "nef-s")
    assert result.returncode == 0, result.stderr.decode()
    config = json.loads((out / "config.json").read_text())
    assert config["model"]["crf"] is True and config["model"]["bio_constraints"] is None
    probs = run_cli("tag", SAMPLE, "-m", out, "--probabilities")
    assert probs.returncode == 0, probs.stderr.decode()
    _, rows = distributions(probs.stdout.decode())
    assert all(sum(values) == pytest.approx(1.0, abs=1e-4) for _, _, values in rows)
    tagged = run_cli("tag", SAMPLE, "-m", out, process=True)
    words = [line.split(b"\t") for line in tagged.stdout.splitlines() if line[:1].isdigit()]
    assert [w[3].decode() for w in words if b"-" not in w[0] and b"." not in w[0]] == [t for _, t, _ in rows]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--class-weight", "NOUN=heavy"], b"--class-weight must be TAG=WEIGHT"),
        (["--class-weight", "NOPE=2"], b"class weight for a tag the training data does not have: NOPE"),
        (["--crf", "--loss", "sparsemax"], b"with crf the training loss is the CRF's"),
    ],
)
def test_bad_loss_options_are_one_line_errors(tmp_path, flags, message):
    out = tmp_path / "bad"
    result = train_on_sample(out, *flags, epochs=1)
    assert result.returncode == 2
    assert message in result.stderr and b"Traceback" not in result.stderr
    assert not (out / "model.pt").exists() and not (out / "config.json").exists()


@pytest.mark.parametrize(
    ("loss", "model", "message"),
    [
        ({"class_weights": {"NOUN": -1}}, {}, "class_weights must be a table of finite weights >= 0"),
        ({"class_weights": {"NOUN": "high"}}, {}, "class_weights must be a table of numbers"),
        ({"loss": "sparsemax"}, {"crf": True}, "with crf the training loss is the CRF's"),
        ({"label_smoothing": 0.1}, {"crf": True}, "with crf the training loss is the CRF's"),
        ({"loss": "entmax"}, {}, "loss entmax needs alpha > 1"),
        ({"loss": "entmax", "alpha": 1.0}, {}, "loss entmax needs alpha > 1"),
        ({"loss": "sparsemax", "alpha": 1.5}, {}, "for another alpha use loss entmax"),
        ({"loss": "hinge"}, {}, "loss must be one of softmax, entmax15, sparsemax, entmax"),
        ({"label_smoothing": 1.0}, {}, "label_smoothing must be in [0, 1)"),
        ({"temperature": 0}, {}, "temperature must be a finite number > 0"),
    ],
)
def test_bad_loss_configs_are_rejected(loss, model, message):
    with pytest.raises(InputError, match=re.escape(message)):
        Config.from_dict({"loss": loss, "model": model}, "run/config.json")


def test_default_loss_config_is_todays_softmax_cross_entropy():
    config = Config.from_dict({"model": {"model": "nef-f"}})
    assert config.loss.entmax_alpha == 1.0 and config.loss.label_smoothing == 0.0
    assert config.loss.temperature == 1.0 and not config.loss.class_weights and not config.model.output.crf
    assert Config.from_dict({"loss": {"loss": "entmax", "alpha": 1.25}}).loss.entmax_alpha == 1.25


def test_loss_table_in_a_config_file(tmp_path):
    config = tmp_path / "loss.toml"
    config.write_text('[loss]\nloss = "entmax"\nalpha = 1.25\n\n[loss.class_weights]\nNOUN = 2\n')
    out = tmp_path / "run"
    result = train_on_sample(out, "--config", config, epochs=1)
    assert result.returncode == 0, result.stderr.decode()
    saved = json.loads((out / "config.json").read_text())["loss"]
    assert saved["alpha"] == 1.25 and saved["class_weights"] == {"NOUN": 2.0}


def test_resume_refuses_new_loss_options(sparse_run):
    result = run_cli("train", "--resume", sparse_run, "--loss", "softmax", "--crf")
    assert result.returncode == 2
    assert b"--loss" in result.stderr and b"--crf/--no-crf" in result.stderr
