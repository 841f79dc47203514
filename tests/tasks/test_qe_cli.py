"""`easyfirst train --task qe`, `tag` and `evaluate` on the self-written QE samples: the issue's acceptance
(the 2N+1 gap-format sample is read and tagged) and user errors; models that predict gaps and source
tags: tests/model/test_qe_heads.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from conftest import QE_GAPS, QE_SAMPLE, SAMPLE, run_cli
from easyfirst.data.qe import read_qe


def files(prefix: Path) -> list[str]:
    return [
        "--src",
        f"{prefix}.src",
        "--mt",
        f"{prefix}.mt",
        "--alignments",
        f"{prefix}.src-mt.alignments",
    ]


@pytest.fixture(scope="module")
def qe_run(tmp_path_factory) -> Path:
    """The QE defaults (NEF-F, N = 5, BAD weighted 5), 4 epochs on the word-format sample: seconds."""
    out = tmp_path_factory.mktemp("qe") / "run"
    result = run_cli(
        "train", "--task", "qe", "--train", QE_SAMPLE, "--dev", QE_SAMPLE, "--test", QE_GAPS,
        "--epochs", 4, "--seed", 1, "--threads", 1, "--output", out,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    return out


def test_training_uses_the_paper_setup_and_selects_on_f1_mult(qe_run):
    config = json.loads((qe_run / "config.json").read_text())
    assert config["data"]["task"] == "qe"
    m = config["model"]
    assert (m["model"], m["sketch_steps"], m["dropout"], m["affix_dim"], m["source_dim"]) == (
        "nef-f", 5, 0.1, 0, 64,
    )  # fmt: skip
    assert config["loss"]["class_weights"] == {"BAD": 5.0}
    metrics = json.loads((qe_run / "metrics.json").read_text())
    scores = [row["dev_f1_mult"] for row in metrics["epochs"]]
    assert metrics["best_epoch"] == 1 + scores.index(max(scores))
    dev = metrics["dev"]
    assert dev["f1_mult"] == pytest.approx(max(scores))
    assert dev["f1_mult"] == pytest.approx(dev["f1_ok"] * dev["f1_bad"])
    assert {"accuracy", "f1_ok", "f1_bad"} <= set(metrics["test"])  # the gap sample's word tags
    log = (qe_run / "train.log").read_text()
    assert "dev F1-MULT" in log and "F1-BAD" in log


@pytest.mark.parametrize("how", ["prefix", "files"])
def test_a_words_only_model_writes_one_tag_per_word_whatever_tags_are_beside(qe_run, tmp_path, how):
    """Gold tags are never read: a model trained on one tag per word writes that, even for a PREFIX whose
    .tags are 2N+1 (issue #16: the gold gap tags used to be copied into the output)."""
    out = tmp_path / "out.tags"
    given = [str(QE_GAPS)] if how == "prefix" else files(QE_GAPS)
    result = run_cli("tag", *given, "-m", qe_run, "-o", out)
    assert result.returncode == 0, result.stderr.decode()
    gold = read_qe(QE_GAPS)
    lines = out.read_text().splitlines()
    assert [len(line.split()) for line in lines] == [len(s.words) for s in gold]
    assert set(" ".join(lines).split()) <= {"OK", "BAD"}


def test_without_a_tags_file_one_tag_per_word_or_gaps_on_request(qe_run, tmp_path):
    plain = run_cli("tag", *files(QE_GAPS), "-m", qe_run)
    assert plain.returncode == 0, plain.stderr.decode()
    gold = read_qe(QE_GAPS)
    lines = plain.stdout.decode().splitlines()
    assert [len(line.split()) for line in lines] == [len(s.words) for s in gold]
    gapped = run_cli("tag", *files(QE_GAPS), "-m", qe_run, "--gaps")
    assert gapped.returncode == 0, gapped.stderr.decode()
    for line, words in zip(gapped.stdout.decode().splitlines(), lines, strict=True):
        tags = line.split()
        assert tags[1::2] == words.split() and set(tags[0::2]) == {"OK"}


def test_tagging_matches_the_training_tagger(qe_run):
    """`tag` on the dev sample gives the tags whose scores metrics.json reports for dev."""
    result = run_cli("evaluate", QE_SAMPLE, "-m", qe_run, "--json")
    assert result.returncode == 0, result.stderr.decode()
    report = json.loads(result.stdout)
    metrics = json.loads((qe_run / "metrics.json").read_text())
    assert report["f1_mult"] == pytest.approx(metrics["dev"]["f1_mult"])
    assert report["tokens"] == 147 and report["per_tag"]["BAD"]["support"] == 28
    table = run_cli("evaluate", QE_SAMPLE, "-m", qe_run)
    assert table.returncode == 0
    text = table.stdout.decode()
    for name in ("F1-MULT", "F1-OK", "F1-BAD", "accuracy"):
        assert name in text


def test_bad_qe_input_is_a_one_line_error_and_writes_nothing(qe_run, tmp_path):
    broken = tmp_path / "broken"
    for ending in (".src", ".mt", ".src-mt.alignments"):
        Path(f"{broken}{ending}").write_bytes(Path(f"{QE_SAMPLE}{ending}").read_bytes())
    alignments = Path(f"{broken}.src-mt.alignments")
    lines = alignments.read_text(encoding="utf-8").splitlines(keepends=True)
    alignments.write_text("".join([lines[0], "0-0 9-1\n", *lines[2:]]), encoding="utf-8")  # 8 source words
    out = tmp_path / "out.tags"
    result = run_cli("tag", *files(broken), "-m", qe_run, "-o", out)
    assert result.returncode == 2
    message = result.stderr.decode().strip()
    assert (
        message
        == f"{alignments}:2: alignment 9-1: source index 9 out of range (the source sentence has 8 words)"
    )
    assert not out.exists()
    alignments.write_text("".join(lines[:-1]), encoding="utf-8")  # one line short
    short = run_cli("tag", *files(broken), "-m", qe_run, "-o", out)
    assert short.returncode == 2 and not out.exists()
    assert short.stderr.decode().startswith(f"{alignments}:20: the file ends after line 19, but ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--src", f"{QE_SAMPLE}.src", "--mt", f"{QE_SAMPLE}.mt"], "missing --alignments"),
        (["--text", "Klicken Sie"], "a qe model tags sentence pairs"),
        ([str(SAMPLE)], "a qe model tags sentence pairs"),
        ([str(QE_SAMPLE), "--probabilities"], "--probabilities: not for QE input"),
    ],
)
def test_qe_option_mistakes(qe_run, args, message):
    result = run_cli("tag", *args, "-m", qe_run)
    assert result.returncode == 2 and message in result.stderr.decode(), result.stderr.decode()


def test_gaps_is_a_qe_option():
    result = run_cli("tag", SAMPLE, "--gaps", process=True)
    assert result.returncode == 2 and "--gaps: only for QE file prefixes" in result.stderr.decode()
    assert "--tags" not in run_cli("tag", "--help", env={"COLUMNS": "200"}).stdout.decode()


def test_a_pos_model_refuses_qe_input():
    result = run_cli("tag", *files(QE_SAMPLE))
    assert result.returncode == 2 and "QE input needs a qe model" in result.stderr.decode()


def test_qe_train_names_the_data_set_prefix_it_lacks(tmp_path):
    result = run_cli(
        "train", "--task", "qe", "--train", tmp_path / "nope", "--dev", QE_SAMPLE, "-o", tmp_path / "r"
    )
    assert result.returncode == 2
    assert "missing" in result.stderr.decode() and str(tmp_path / "nope") in result.stderr.decode()


def test_plot_and_analyze_read_a_qe_prefix(qe_run, tmp_path):
    figure = tmp_path / "qe.png"
    result = run_cli("plot", "-m", qe_run, "--input", QE_SAMPLE, "--sentence", 2, "-o", figure)
    assert result.returncode == 0, result.stderr.decode()
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    stats = run_cli("analyze", QE_SAMPLE, "-m", qe_run, "--json")
    assert stats.returncode == 0, stats.stderr.decode()
    report = json.loads(stats.stdout)
    assert report["sentences"] == 20 and len(report["per_step"]) == 5  # N = 5 steps
    text = run_cli("plot", "-m", qe_run, "--text", "Klicken Sie", "--terminal")
    assert text.returncode == 2 and "needs the source and alignment" in text.stderr.decode()


def test_qe_context_dim_0_trains_on_the_papers_128_dimensional_input(tmp_path):
    out = tmp_path / "run"
    result = run_cli(
        "train", "--task", "qe", "--train", QE_SAMPLE, "--dev", QE_SAMPLE, "--epochs", 1, "--seed", 1,
        "--threads", 1, "--qe-context-dim", 0, "--output", out,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    assert json.loads((out / "config.json").read_text())["model"]["qe_context_dim"] == 0
    assert set(json.loads((out / "vocab.json").read_text())["features"]) == {"source"}
    state = torch.load(out / "model.pt", weights_only=True)
    assert state["encoder.lstm.weight_ih_l0"].shape[1] == 64 + 64  # MT word ⊕ aligned source words


def test_source_vectors_set_the_source_table_and_name_it(tmp_path):
    """--source-pretrained (issue #36): the aligned source words' table takes the vectors' size and rows;
    config.json counts the source words covered, here every spelling of the words the file has."""
    vectors = tmp_path / "en.txt"
    words = {"click": [0.5, -0.5, 1.0], "the": [0.25, 0.0, -1.0], "menu": [2.0, 1.0, 0.0]}
    vectors.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in words.items()), encoding="utf-8")
    out = tmp_path / "run"
    result = run_cli(
        "train", "--task", "qe", "--train", QE_SAMPLE, "--dev", QE_SAMPLE, "--epochs", 1, "--seed", 1,
        "--threads", 1, "--source-pretrained", vectors, "--output", out,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    model = json.loads((out / "config.json").read_text())["model"]
    assert model["source_dim"] == 3 and model["source_pretrained"] == str(vectors)
    source = json.loads((out / "vocab.json").read_text())["features"]["source"]
    assert model["source_pretrained_covered"] == sum(s.lower() in words for s in source["symbols"]) > 0
    assert torch.load(out / "model.pt", weights_only=True)["embedder.features.source.weight"].shape[1] == 3
    assert "source vectors" in (out / "train.log").read_text()
    assert run_cli("export", out, "-o", tmp_path / "exported").returncode == 0
    card = (tmp_path / "exported" / "README.md").read_text()
    assert f"source words: `{vectors}`, 3 dimensions, covering" in card
    command = card.split("```bash\n", 1)[1].split("\n", 1)[0]  # what the vectors decide is left out
    assert f"--source-pretrained {vectors}" in command  # its flag, as a user types it
    assert "source_dim" not in command and "covered" not in command


def test_source_vectors_are_a_qe_option(tmp_path):
    vectors = tmp_path / "en.txt"
    vectors.write_text("the 0.5 1.0\n", encoding="utf-8")
    result = run_cli("train", "--train", SAMPLE, "--source-pretrained", vectors, "--output", tmp_path / "run")
    assert result.returncode == 2 and not (tmp_path / "run").exists()
    assert "model.source_pretrained is for QE's source words, not pos" in result.stderr.decode()
