"""`easyfirst evaluate` (easyfirst/cli/evaluate.py) with the bundled UPOS model on the sample: its
accuracy is the count of words whose tag the model gives equals the gold tag, counted here from the
Tagger's own tags; gold tags the model never saw are noted; the tables printed; bad options refused."""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from verbs import easyfirst

from conftest import SAMPLE
from easyfirst.api import Tagger
from easyfirst.cli.evaluate import qe_scores_table
from easyfirst.data.conllu import read_conllu


@pytest.fixture(scope="module")
def counted():
    """(gold, predicted) for every word of the sample, the bundled model's tags."""
    sentences = read_conllu(SAMPLE)
    predicted = [t.tags for t in Tagger.load().tag([s.words for s in sentences])]
    return [
        (g, p)
        for s, tags in zip(sentences, predicted, strict=True)
        for g, p in zip(s.tags, tags, strict=True)
    ]


def test_the_json_report_counts_what_the_tagger_got_right(counted):
    right, words, gold = sum(g == p for g, p in counted), len(counted), [g for g, _ in counted]
    code, stdout, stderr = easyfirst("evaluate", SAMPLE, "--json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["tokens"] == words
    assert report["accuracy"] == pytest.approx(right / words)
    assert report["per_tag"]["NOUN"]["support"] == gold.count("NOUN")
    assert report["unknown_gold_tags"] == {}
    assert 0.0 <= report["ece"] <= 1.0 and 1.0 <= report["mean_support"] <= 17


def test_gold_tags_the_model_never_saw_are_noted_and_count_as_errors(counted, tmp_path):
    words, nouns = len(counted), sum(g == "NOUN" for g, _ in counted)
    right = sum(g == p and g != "NOUN" for g, p in counted)  # every NOUN the model got right is now wrong
    text = SAMPLE.read_text(encoding="utf-8").replace("\tNOUN\t", "\tTHING\t")
    path = tmp_path / "odd.conllu"
    path.write_text(text, encoding="utf-8")
    code, stdout, stderr = easyfirst("evaluate", path)
    assert code == 0, stderr
    assert f"note: gold tags the model never saw, counted as errors: THING ({nouns})" in stderr
    title = stdout.splitlines()[0]
    assert title == f"{path}: accuracy {100 * right / words:.2f}% over {words:,} words"
    assert "precision" in stdout and "THING" in stdout


@pytest.mark.parametrize(
    "args, line",
    [
        (["--batch-size", "0"], "--batch-size must be an integer >= 1, not 0"),
        (["--encoding", "klingon"], "--encoding must be a known text encoding"),
        (["-m", "{tmp}/none"], "{tmp}/none: model folder not found"),
    ],
)
def test_bad_options_are_refused_before_tagging(args, line, tmp_path):
    code, stdout, stderr = easyfirst("evaluate", SAMPLE, *(a.format(tmp=tmp_path) for a in args))
    assert code == 2 and stderr.startswith(line.format(tmp=tmp_path)) and stdout == "", stderr


def test_a_missing_gold_file_says_it_is_no_qe_prefix_either(tmp_path):
    code, _, stderr = easyfirst("evaluate", tmp_path / "gone")
    assert code == 2
    assert stderr.strip() == f"{tmp_path / 'gone'}: no such file (nor a QE prefix: PREFIX.mt is missing too)"


def test_the_qe_table_has_a_row_for_each_part_the_report_has():
    report = {"f1_mult": 0.25, "f1_ok": 0.5, "f1_bad": 0.5, "mcc": 0.1, "tokens": 40}
    report |= {
        "gaps_f1_mult": 0.04,
        "gaps_f1_ok": 0.2,
        "gaps_f1_bad": 0.2,
        "gaps_mcc": -0.3,
        "gaps_tokens": 44,
    }
    console = Console(width=120, record=True)
    console.print(qe_scores_table(report))
    rows = [[cell for cell in line.split() if cell != "│"] for line in console.export_text().splitlines()]
    assert ["MT", "words", "25.00", "50.00", "50.00", "10.00", "40"] in rows
    assert ["gaps", "4.00", "20.00", "20.00", "-30.00", "44"] in rows
    assert not any(row[:1] == ["source"] for row in rows)


def test_a_bioes_models_calibration_reads_the_probability_of_the_tag_it_gave(tmp_path):
    """en-ner learned BIOES and is scored in BIO: the confidence of a predicted B-LOC read out of S-LOC
    is the model's probability of S-LOC (issue #44: it was B-LOC's, and ECE 11.8% instead of 1.6% on
    CoNLL-2003 test). Recomputed here from Tagger.tag's distributions, BIOES spelled out by hand."""
    sentences = [
        "Germany beat France in Paris on Sunday .".split(),
        "John Smith of the European Union met Peter in Berlin .".split(),
        "Reuters reported that Microsoft bought a company in Seattle .".split(),
    ]
    path = tmp_path / "small.conll"
    tagger = Tagger.load("en-ner")
    tagged = tagger.tag(sentences, probabilities=True)
    lines = []
    for words, t in zip(sentences, tagged, strict=True):
        lines += [f"{w} {tag}" for w, tag in zip(words, t.tags, strict=True)] + [""]  # gold = predicted
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, stdout, stderr = easyfirst("evaluate", path, "-m", "en-ner", "--json")
    assert code == 0, stderr
    confidences = []
    for t in tagged:
        for i, tag in enumerate(t.tags):
            ends = i + 1 == len(t.tags) or t.tags[i + 1] != "I-" + tag[2:]
            own = tag if tag == "O" else ("S-" if tag[0] == "B" else "E-") + tag[2:] if ends else tag
            confidences.append(float(t.probabilities[i][tagger.tags.index(own)]))
    assert any(tag.startswith("B-") for t in tagged for tag in t.tags)
    # every word is right (gold = predicted): ECE over 10 equal-width bins is 1 - mean confidence
    bins: dict[int, list[float]] = {}
    for c in confidences:
        bins.setdefault(min(int(c * 10), 9), []).append(c)
    ece = sum(len(b) * abs(1 - sum(b) / len(b)) for b in bins.values()) / len(confidences)
    assert json.loads(stdout)["ece"] == pytest.approx(ece, abs=1e-6)
