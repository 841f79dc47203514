"""benchmarks/analyses/welch.py: Welch's t between two rows of the attention study, by hand."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "analyses" / "welch.py"


def load():
    spec = importlib.util.spec_from_file_location("welch", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_welchs_t_and_its_degrees_of_freedom_by_hand():
    # means 2 and 5.5, variances 1 and 5/3: t = -3.5 / sqrt(1/3 + 5/12) = -3.5 / sqrt(0.75)
    t, df = load().welch([1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0])
    assert t == pytest.approx(-4.041452, abs=1e-6)
    assert df == pytest.approx(0.5625 / (1 / 18 + 25 / 432), abs=1e-9)  # 4.9592


def test_the_rows_seeds_are_read_in_order_and_too_few_are_said(tmp_path):
    for name, dev, test in [
        ("a", 0.95, 0.96),
        ("a-seed10", 0.97, 0.98),
        ("a-seed2", 0.96, 0.97),
        ("b", 0.9, 0.9),
        ("b-seed3", 0.92, 0.94),
    ]:
        (tmp_path / f"{name}.json").write_text(
            json.dumps({"task": "pos", "dev_accuracy": dev, "test_accuracy": test})
        )
    assert [run["dev_accuracy"] for run in load().seeds("a", tmp_path)] == [0.95, 0.96, 0.97]
    done = subprocess.run(
        [sys.executable, SCRIPT, "a", "b", "--results", tmp_path], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    test = next(line for line in lines if line.startswith("test_accuracy"))
    assert "97.00 ± 1.00 (3 seeds)" in test and "92.00 ± 2.83 (2 seeds)" in test and "+5.00" in test
    assert lines[-1].startswith("fewer than five seeds")
    (tmp_path / "b-seed3.json").unlink()
    refused = subprocess.run(
        [sys.executable, SCRIPT, "a", "b", "--results", tmp_path], capture_output=True, text=True
    )
    assert refused.returncode != 0 and "b: 1 run(s)" in refused.stderr and "Traceback" not in refused.stderr


def test_a_rows_score_is_the_one_the_study_keeps_for_its_task(tmp_path):
    """NER rows kept before results named their task are told by their score (``dev_f1``), QE rows by
    ``dev_target_f1_mult``."""
    for name, score in [("n", 0.9), ("n-seed2", 0.92), ("m", 0.91), ("m-seed2", 0.95)]:
        (tmp_path / f"{name}.json").write_text(json.dumps({"dev_f1": score, "test_f1": score - 0.04}))
    for name, score in [("q", 0.40), ("q-seed2", 0.42), ("r", 0.38), ("r-seed2", 0.38)]:
        row = {"task": "qe", "dev_target_f1_mult": score, "test_target_f1_mult": score}
        (tmp_path / f"{name}.json").write_text(json.dumps(row))
    ner = subprocess.run(
        [sys.executable, SCRIPT, "n", "m", "--results", tmp_path], capture_output=True, text=True
    )
    assert ner.returncode == 0, ner.stderr
    assert "test_f1" in ner.stdout and "87.00 ± 1.41 (2 seeds)" in ner.stdout and "-2.00" in ner.stdout
    qe = subprocess.run(
        [sys.executable, SCRIPT, "q", "r", "--results", tmp_path], capture_output=True, text=True
    )
    assert qe.returncode == 0, qe.stderr
    assert "dev_target_f1_mult" in qe.stdout and "+3.00" in qe.stdout
