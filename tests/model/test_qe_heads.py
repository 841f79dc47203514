"""Word-level QE as WMT18–20 scored it (issue #16): gap and source-word tags predicted by the model, never
copied from gold files; F1-OK, F1-BAD, F1-MULT and MCC of MT words, gaps, both and source words.

Scores are checked against confusion counts worked out here, by hand or with a few lines of counting
independent of easyfirst.metrics."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch

from conftest import QE_GAPS, QE_SAMPLE, run_cli
from easyfirst.data.qe import read_qe
from easyfirst.errors import InputError
from easyfirst.metrics import binary_scores, qe_heads_report
from easyfirst.model.heads import GapHead, aligned_features

INPUTS = (".src", ".mt", ".src-mt.alignments")


def test_binary_scores_against_a_hand_worked_confusion_matrix():
    # BAD positive: TP = 2 (BAD→BAD), FN = 1 (BAD→OK), FP = 1 (OK→BAD), TN = 4 (OK→OK)
    gold = [["BAD", "BAD", "OK", "OK"], ["BAD", "OK", "OK", "OK"]]
    pred = [["BAD", "OK", "BAD", "OK"], ["BAD", "OK", "OK", "OK"]]
    scores = binary_scores(gold, pred)
    assert scores["f1_bad"] == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))  # 2/3
    assert scores["f1_ok"] == pytest.approx(2 * 4 / (2 * 4 + 1 + 1))  # 0.8
    assert scores["f1_mult"] == pytest.approx(2 / 3 * 0.8)
    assert scores["mcc"] == pytest.approx((2 * 4 - 1 * 1) / math.sqrt(3 * 3 * 5 * 5))  # 7/15
    assert scores["tokens"] == 8


def test_mcc_is_0_when_one_class_is_never_predicted_and_symmetric_in_the_classes():
    gold = [["BAD", "OK", "OK"]]
    assert binary_scores(gold, [["OK", "OK", "OK"]]) == {
        "f1_mult": 0.0, "f1_ok": 0.8, "f1_bad": 0.0, "mcc": 0.0, "tokens": 3,
    }  # fmt: skip
    swap = {"OK": "BAD", "BAD": "OK"}
    gold, pred = [["BAD", "OK", "OK", "BAD", "OK"]], [["BAD", "BAD", "OK", "OK", "OK"]]
    flipped = binary_scores([[swap[t] for t in gold[0]]], [[swap[t] for t in pred[0]]])
    assert flipped["mcc"] == pytest.approx(binary_scores(gold, pred)["mcc"])
    # perfectly anti-correlated: −1
    assert binary_scores([["OK", "BAD"]], [["BAD", "OK"]])["mcc"] == pytest.approx(-1.0)


def test_target_scores_pool_words_and_gaps():
    words_gold, words_pred = [["OK", "BAD"]], [["OK", "OK"]]
    gaps_gold, gaps_pred = [["OK", "BAD", "OK"]], [["OK", "BAD", "BAD"]]
    report = qe_heads_report(words_gold, words_pred, {"gaps": gaps_gold}, {"gaps": gaps_pred})
    # pooled: TP 1 (gap), FN 1 (word), FP 1 (gap), TN 2 (word, gap)
    assert report["target_f1_bad"] == pytest.approx(2 / 4)
    assert report["target_f1_ok"] == pytest.approx(4 / 6)
    assert report["target_mcc"] == pytest.approx((1 * 2 - 1 * 1) / math.sqrt(2 * 2 * 3 * 3))
    assert report["gaps_f1_bad"] == pytest.approx(2 / 3) and report["gaps_tokens"] == 3
    assert "source_f1_mult" not in report  # no source tags on either side


def test_a_gap_is_its_neighbouring_words_features_with_boundary_vectors():
    heads = GapHead(2, 3, 2)
    with torch.no_grad():
        heads.boundaries.copy_(torch.tensor([[-1.0, -2.0], [8.0, 9.0]]))  # b_start, b_end
    features = torch.tensor([[[1.0, 1], [2, 2], [3, 3]], [[4.0, 4], [5, 5], [7, 7]]])  # 3 words; 2 + padding
    mask = torch.tensor([[True, True, True], [True, True, False]])
    gaps = heads.gap_features(features, mask)
    assert gaps.shape == (2, 4, 4)
    expected_first = [[-1, -2, 1, 1], [1, 1, 2, 2], [2, 2, 3, 3], [3, 3, 8, 9]]
    assert gaps[0].tolist() == expected_first
    assert gaps[1, :3].tolist() == [[-1, -2, 4, 4], [4, 4, 5, 5], [5, 5, 8, 9]]  # padding word 7 unused


def test_a_source_word_reads_the_mean_of_its_aligned_mt_words_or_null():
    features = torch.tensor([[[1.0, 0], [3, 2], [5, 4]]])
    alignment = torch.tensor([[[1.0, 0, 1], [0, 0, 0], [0, 1, 0]]])  # source 0 ↔ MT 0, 2; source 1 unaligned
    null = torch.tensor([-7.0, -7.0])
    assert aligned_features(features, alignment, null).tolist() == [[[3, 2], [-7, -7], [3, 2]]]


def test_source_tags_are_read_and_checked(tmp_path):
    sentences = read_qe(QE_GAPS)
    assert all(len(s.source_tags) == len(s.source) for s in sentences)
    assert sentences[1].source_tags == ["OK", "OK", "BAD", "BAD", "OK", "OK", "OK", "OK"]
    broken = tmp_path / "broken"
    for ending in (*INPUTS, ".tags"):
        shutil.copyfile(f"{QE_GAPS}{ending}", f"{broken}{ending}")
    lines = Path(f"{QE_GAPS}.source_tags").read_text().splitlines(keepends=True)
    Path(f"{broken}.source_tags").write_text("".join([lines[0], "OK OK\n", *lines[2:]]))
    with pytest.raises(InputError) as error:
        read_qe(broken)
    assert (
        str(error.value)
        == f"{broken}.source_tags:2: 2 source tags for 8 source words: expected one per source word"
    )
    Path(f"{broken}.source_tags").write_text(
        "".join([lines[0], lines[1].replace("BAD", "bad", 1), *lines[2:]])
    )
    with pytest.raises(InputError, match=r"source_tags:2: source tag 'bad' is neither OK nor BAD"):
        read_qe(broken)


@pytest.fixture(scope="module")
def gap_run(tmp_path_factory) -> Path:
    """The QE defaults on the 2N+1 sample with source tags: gap and source heads on by themselves."""
    out = tmp_path_factory.mktemp("qe-gaps") / "run"
    result = run_cli(
        "train", "--task", "qe", "--train", QE_GAPS, "--dev", QE_GAPS, "--epochs", 3, "--seed", 1,
        "--threads", 1, "--output", out,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    return out


def test_gap_data_trains_gap_and_source_heads_and_selects_on_words_and_gaps(gap_run):
    config = json.loads((gap_run / "config.json").read_text())
    assert config["model"]["gaps"] is True and config["model"]["source_tags"] is True
    assert config["loss"]["gap_class_weights"] == {"BAD": 10.0}
    metrics = json.loads((gap_run / "metrics.json").read_text())
    assert metrics["best_metric"] == "target_f1_mult"
    scores = [row["dev_target_f1_mult"] for row in metrics["epochs"]]
    assert metrics["best_epoch"] == 1 + scores.index(max(scores))
    for prefix in ("", "gaps_", "target_", "source_"):
        for key in ("f1_mult", "f1_ok", "f1_bad", "mcc"):
            assert prefix + key in metrics["dev"]
    assert "dev target F1-MULT" in (gap_run / "train.log").read_text()


def bare_copy(folder: Path, gold: dict[str, str] | None = None) -> Path:
    """The gap sample's inputs in ``folder``, with the given gold files beside them (ending → text)."""
    folder.mkdir()
    prefix = folder / "sample"
    for ending in INPUTS:
        shutil.copyfile(f"{QE_GAPS}{ending}", f"{prefix}{ending}")
    for ending, text in (gold or {}).items():
        Path(f"{prefix}{ending}").write_text(text)
    return prefix


def tag_files(prefix: Path, model: Path, out: Path, *extra) -> tuple[bytes, bytes]:
    result = run_cli("tag", prefix, "-m", model, "-o", out, *extra)
    assert result.returncode == 0, result.stderr.decode()
    return out.read_bytes(), out.with_name(out.name.replace(".tags", ".source_tags")).read_bytes()


def test_tagging_never_reads_gold_tags(gap_run, tmp_path):
    bare = bare_copy(tmp_path / "bare")
    lines = Path(f"{QE_GAPS}.tags").read_text().splitlines()
    flipped = "".join(" ".join("BAD" if t == "OK" else "OK" for t in line.split()) + "\n" for line in lines)
    gold = bare_copy(tmp_path / "gold", {".tags": Path(f"{QE_GAPS}.tags").read_text(),
                                         ".source_tags": Path(f"{QE_GAPS}.source_tags").read_text()})  # fmt: skip
    wrong = bare_copy(
        tmp_path / "wrong", {".tags": flipped, ".source_tags": flipped}
    )  # not even the right lengths
    without = tag_files(bare, gap_run, tmp_path / "without.tags")
    assert tag_files(gold, gap_run, tmp_path / "with.tags") == without
    assert tag_files(wrong, gap_run, tmp_path / "wrong.tags") == without
    result = run_cli(
        "tag", "--src", f"{gold}.src", "--mt", f"{gold}.mt", "--alignments", f"{gold}.src-mt.alignments",
        "-m", gap_run,
    )  # fmt: skip
    assert result.returncode == 0 and result.stdout == without[0]


def test_a_gap_model_writes_2n_plus_1_tags_and_source_tags(gap_run, tmp_path):
    sentences = read_qe(QE_GAPS)
    tags, source = (
        b.decode().splitlines() for b in tag_files(bare_copy(tmp_path / "in"), gap_run, tmp_path / "o.tags")
    )
    assert [len(line.split()) for line in tags] == [2 * len(s.words) + 1 for s in sentences]
    assert [len(line.split()) for line in source] == [len(s.source) for s in sentences]
    words = run_cli("tag", bare_copy(tmp_path / "in2"), "-m", gap_run, "--no-gaps")
    assert words.returncode == 0
    assert [line.split() for line in words.stdout.decode().splitlines()] == [
        line.split()[1::2] for line in tags
    ]


def counts(gold: list[list[str]], pred: list[list[str]]) -> dict[str, float]:
    """F1-MULT and MCC from confusion counts, written out again for the test."""
    pairs = [(g, p) for gs, ps in zip(gold, pred, strict=True) for g, p in zip(gs, ps, strict=True)]
    tp = sum(g == p == "BAD" for g, p in pairs)
    tn = sum(g == p == "OK" for g, p in pairs)
    fp = sum(g == "OK" and p == "BAD" for g, p in pairs)
    fn = sum(g == "BAD" and p == "OK" for g, p in pairs)
    f1_bad = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    f1_ok = 2 * tn / (2 * tn + fp + fn) if tn else 0.0
    product = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return {"f1_mult": f1_ok * f1_bad, "mcc": (tp * tn - fp * fn) / math.sqrt(product) if product else 0.0}


def test_evaluate_reports_each_score_of_the_tagged_output(gap_run, tmp_path):
    result = run_cli("evaluate", QE_GAPS, "-m", gap_run, "--json")
    assert result.returncode == 0, result.stderr.decode()
    report = json.loads(result.stdout)
    tags, source = (
        b.decode().splitlines() for b in tag_files(bare_copy(tmp_path / "in"), gap_run, tmp_path / "o.tags")
    )
    predicted = [line.split() for line in tags]
    gold = [line.split() for line in Path(f"{QE_GAPS}.tags").read_text().splitlines()]
    gold_source = [line.split() for line in Path(f"{QE_GAPS}.source_tags").read_text().splitlines()]
    parts = {
        "": ([g[1::2] for g in gold], [p[1::2] for p in predicted]),
        "gaps_": ([g[0::2] for g in gold], [p[0::2] for p in predicted]),
        "target_": (gold, predicted),
        "source_": (gold_source, [line.split() for line in source]),
    }
    for prefix, (g, p) in parts.items():
        expected = counts(g, p)
        assert report[prefix + "f1_mult"] == pytest.approx(expected["f1_mult"]), prefix
        assert report[prefix + "mcc"] == pytest.approx(expected["mcc"]), prefix
    metrics = json.loads((gap_run / "metrics.json").read_text())
    assert report["target_f1_mult"] == pytest.approx(metrics["dev"]["target_f1_mult"])  # same tagger
    table = run_cli("evaluate", QE_GAPS, "-m", gap_run).stdout.decode()
    for name in ("MT words + gaps", "gaps", "source words", "MCC", "F1-MULT"):
        assert name in table


def test_a_words_only_model_has_no_heads_and_writes_n_tags_beside_2n_plus_1_gold(tmp_path):
    out = tmp_path / "run"
    result = run_cli(
        "train", "--task", "qe", "--train", QE_SAMPLE, "--dev", QE_SAMPLE, "--epochs", 1, "--seed", 1,
        "--threads", 1, "--output", out,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    config = json.loads((out / "config.json").read_text())
    assert config["model"]["gaps"] is False and config["model"]["source_tags"] is False
    assert not [k for k in torch.load(out / "model.pt", weights_only=True) if k.startswith("heads.")]
    assert json.loads((out / "metrics.json").read_text())["best_metric"] == "f1_mult"
    tagged = run_cli("tag", QE_GAPS, "-m", out, "-o", tmp_path / "o.tags")
    assert tagged.returncode == 0
    lines = (tmp_path / "o.tags").read_text().splitlines()
    assert [len(line.split()) for line in lines] == [len(s.words) for s in read_qe(QE_GAPS)]
    assert not (tmp_path / "o.source_tags").exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--gaps", "--train", QE_SAMPLE], "[model] gaps = true, but the training data has no gap tags"),
        (["--source-tags", "--train", QE_SAMPLE], "has no source tags"),
        (["--train", QE_GAPS, "--best-metric", "nope"], "best_metric 'nope' is not a dev score"),
        (
            ["--train", QE_GAPS, "--gap-class-weight", "MISSING=2"],
            "gap_class_weights must be a table of OK and BAD",
        ),
    ],
)
def test_head_option_mistakes(tmp_path, flags, message):
    result = run_cli("train", "--task", "qe", "--dev", QE_GAPS, *flags, "--epochs", 1, "-o", tmp_path / "r")
    assert result.returncode == 2 and message in result.stderr.decode(), result.stderr.decode()
    assert not (tmp_path / "r").exists()


@pytest.mark.realdata
def test_reads_the_real_wmt19_files(data_root):
    """The counts of the data folder's README: 13,442 / 1,000 sentences, 255,610 / 19,224 MT words with
    12.2% / 11.7% BAD, about 2% BAD gaps; a source tag per source word."""
    folder = data_root / "qe" / "wmt19-en-de"
    found = {}
    for split in ("train", "dev"):
        sentences = read_qe(folder / split)
        words = sum(len(s.words) for s in sentences)
        bad = sum(s.tags.count("BAD") for s in sentences)
        gaps = [t for s in sentences for t in s.gaps]
        assert all(len(s.source_tags) == len(s.source) for s in sentences)
        found[split] = (
            len(sentences),
            words,
            round(100 * bad / words, 1),
            round(100 * gaps.count("BAD") / len(gaps)),
        )
    assert found == {"train": (13442, 255610, 12.2, 2), "dev": (1000, 19224, 11.7, 2)}
