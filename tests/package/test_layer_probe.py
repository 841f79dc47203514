"""benchmarks/analyses/layer_probe.py: linear probes on each hidden state of a tiny random BERT that the
test builds (no download), over a treebank whose tags are a function of the word."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from conftest import extra
from tiny_transformer import tiny_bert

extra("transformers", "transformers")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "analyses" / "layer_probe.py"
TAG = {"the": "DET", "a": "DET", "cat": "NOUN", "dog": "NOUN", "mat": "NOUN", "sat": "VERB", "ran": "VERB"}
TAG |= {"on": "ADP", ".": "PUNCT", ",": "PUNCT"}


def conllu(sentences: list[list[str]]) -> str:
    blocks = []
    for words in sentences:
        rows = [f"{i}\t{w}\t{w}\t{TAG[w]}\t_\t_\t0\tdep\t_\t_" for i, w in enumerate(words, 1)]
        blocks.append("\n".join(rows))
    return "\n\n".join(blocks) + "\n\n"


def test_each_hidden_state_is_probed_and_the_embeddings_carry_a_words_own_tag(tmp_path):
    rng = random.Random(0)
    words = sorted(TAG)
    treebank = tmp_path / "UD_Tiny"
    treebank.mkdir()
    for part, count in (("train", 60), ("dev", 20)):
        sentences = [[rng.choice(words) for _ in range(rng.randint(3, 9))] for _ in range(count)]
        (treebank / f"tiny-ud-{part}.conllu").write_text(conllu(sentences), encoding="utf-8")
    out = tmp_path / "probe.json"
    model = tiny_bert(tmp_path / "bert")
    command = [sys.executable, SCRIPT, "--transformer", model, "--treebank", treebank, "--train", "50"]
    done = subprocess.run([*command, "--iterations", "50", "--json", out], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["train_sentences"] == 50
    assert set(result["dev_accuracy"]) == {"0", "1", "2", "last 4"}  # the embeddings' output, 2 layers
    for scores in result["dev_accuracy"].values():
        assert set(scores) == {"mean", "first", "last"}
    # a word of one piece is its own vector at state 0 (plus its position's): its tag is linear in it
    assert min(result["dev_accuracy"]["0"].values()) >= 0.9
    assert "hidden state" in done.stdout


def test_bio_tags_of_a_column_file_are_also_scored_on_the_words_that_are_not_o(tmp_path):
    """NER: the nouns are entities (B-/I- by position in a run of nouns), the other words O."""
    rng = random.Random(1)
    words = sorted(TAG)
    for part, count in (("train", 60), ("dev", 20)):
        lines = []
        for _ in range(count):
            previous = "O"
            for word in (rng.choice(words) for _ in range(rng.randint(3, 9))):
                tag = "O" if TAG[word] != "NOUN" else ("I-ANIMAL" if previous != "O" else "B-ANIMAL")
                lines.append(f"{word} {tag}")
                previous = tag
            lines.append("")
        (tmp_path / part).write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "probe.json"
    model = tiny_bert(tmp_path / "bert")
    command = [
        sys.executable,
        SCRIPT,
        "--transformer",
        model,
        "--files",
        tmp_path / "train",
        tmp_path / "dev",
    ]
    done = subprocess.run([*command, "--iterations", "50", "--json", out], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text(encoding="utf-8"))
    assert (result["train"], result["dev"]) == ("train", "dev")
    assert set(result["dev_accuracy_not_o"]) == {"0", "1", "2", "last 4"}
    assert "the words whose tag is not O" in done.stdout
    # the accuracy on the words of entities is its own number, not the one over all words
    for state, scores in result["dev_accuracy_not_o"].items():
        assert set(scores) == {"mean", "first", "last"} and scores != result["dev_accuracy"][state]


def test_a_treebank_folder_without_a_dev_file_is_refused_in_a_line(tmp_path):
    (tmp_path / "x-ud-train.conllu").write_text(conllu([["the", "cat"]]), encoding="utf-8")
    done = subprocess.run([sys.executable, SCRIPT, "--treebank", tmp_path], capture_output=True, text=True)
    assert done.returncode != 0
    assert "expected one *-ud-dev.conllu, found 0" in done.stderr and "Traceback" not in done.stderr
