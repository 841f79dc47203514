"""`easyfirst train --easy-first` (the task's recipe for sharp attention) and the one-line note `plot` and
`analyze` print when a model's attention is diffuse, naming the flag (issue #26)."""

from __future__ import annotations

import io
import json
import math
import re
from types import SimpleNamespace

import pytest
from rich.console import Console

from conftest import NER_SAMPLE, SAMPLE, run_cli, train_on_sample
from easyfirst import Tagger
from easyfirst.config import Config
from easyfirst.data.conllu import read_conllu

NOTE = re.compile(rb"note:.*largest .* is (\d\.\d\d) on average.*train --easy-first")


def saved_config(run: object) -> dict:
    return json.loads((run / "config.json").read_text())


def test_easy_first_trains_at_the_recipes_temperature_and_later_flags_override_it(tmp_path):
    result = train_on_sample(tmp_path / "sharp", "--easy-first", epochs=1)
    assert result.returncode == 0, result.stderr.decode()
    # the pos recipe (docs/studies/results.md, row ref-lr0.05-temp0.25): attention temperature 0.25, the rest as is
    assert saved_config(tmp_path / "sharp")["model"]["attention_temperature"] == 0.25
    assert saved_config(tmp_path / "sharp")["train"]["lr"] == 0.05
    model_line = next(line for line in result.stderr.decode().splitlines() if line.startswith("model "))
    assert "attention csoftmax at temperature 0.25," in model_line  # the header shows what it set
    # a finished run keeps its checkpoint (--epochs N trains it longer); resuming it as it is says so
    again = run_cli("train", "--resume", tmp_path / "sharp")
    assert again.returncode == 2
    assert (
        again.stderr.decode()
        .strip()
        .endswith(
            "sharp: the run has finished its 1 epochs (metrics.json written): nothing to resume; "
            "--epochs N with N over 1 trains it longer"
        )
    )
    result = train_on_sample(
        tmp_path / "mild", "--easy-first", "--attention-temperature", "0.5", "--set", "train.lr=0.2", epochs=1
    )
    assert result.returncode == 0, result.stderr.decode()
    config = saved_config(tmp_path / "mild")
    assert config["model"]["attention_temperature"] == 0.5 and config["train"]["lr"] == 0.2


def test_easy_first_on_ner_trains_the_sharp_sparse_attention(tmp_path):
    # the NER recipe (docs/studies/ner.md, row ner-mh-sum-csparsemax-t0.5): the constrained sparsemax at 0.5
    out = tmp_path / "ner"
    args = ("--train", NER_SAMPLE, "--dev", NER_SAMPLE, "--output", out, "--epochs", "1")
    result = run_cli("train", "--task", "ner", *args, "--easy-first", "--hidden-dim", "8", "--char-dim", "0")
    assert result.returncode == 0, result.stderr.decode()
    model = saved_config(out)["model"]
    assert (model["attention"], model["attention_temperature"]) == ("csparsemax", 0.5)
    assert model["crf"] is True and model["sketch_steps"] == 5  # the task's other defaults stay


def test_easy_first_is_refused_where_no_recipe_was_measured_and_on_resume(tmp_path):
    out = tmp_path / "qe"
    result = run_cli("train", "--task", "qe", "--output", out, "--epochs", "1", "--easy-first")
    assert result.returncode == 2
    assert (
        result.stderr.decode().strip() == "--easy-first: no easy-first recipe has been measured for task qe"
    )
    assert not out.exists()
    result = run_cli("train", "--resume", tmp_path / "anything", "--easy-first")
    assert result.returncode == 2 and b"--easy-first cannot be given with it" in result.stderr


def test_easy_first_help_states_the_recipe():
    result = run_cli("train", "--help")
    text = " ".join(result.stdout.decode().replace("│", " ").split())
    assert "--easy-first" in text and "--attention-temperature 0.25" in text
    assert "ner: --attention csparsemax --attention-temperature 0.5" in text


def first_half_largest_by_hand(tagger, sentences) -> float:
    """Mean over steps n ≤ ⌈N/2⌉ of all sentences of max_i αⁿ_i, from the attention the tagger returns."""
    tagged = tagger.tag([s.words for s in sentences], attention=True)
    largest = [
        max(row.tolist()) for a in (t.attention for t in tagged) for row in a[: math.ceil(a.shape[0] / 2)]
    ]
    return sum(largest) / len(largest)


@pytest.fixture(scope="module")
def diffuse_and_sharp(tmp_path_factory):
    """Two sample models: attention temperature 50 (scores flattened: diffuse) and 0.02 (sharpened)."""
    folder = tmp_path_factory.mktemp("easy-first")
    for name, temperature in (("diffuse", "50"), ("sharp", "0.02")):
        result = train_on_sample(folder / name, "--attention-temperature", temperature, epochs=1)
        assert result.returncode == 0, result.stderr.decode()
    return folder / "diffuse", folder / "sharp"


def test_analyze_notes_diffuse_attention_and_names_the_flag(diffuse_and_sharp):
    diffuse, sharp = diffuse_and_sharp
    result = run_cli("analyze", SAMPLE, "-m", diffuse, "--json")
    assert result.returncode == 0, result.stderr.decode()
    json.loads(result.stdout)  # the note goes to stderr: the JSON still parses
    found = NOTE.findall(result.stderr)
    assert len(found) == 1, result.stderr.decode()
    expected = first_half_largest_by_hand(Tagger.load(diffuse), read_conllu(SAMPLE))
    assert expected < 0.5 and float(found[0]) == pytest.approx(expected, abs=0.006)
    result = run_cli("analyze", SAMPLE, "-m", sharp)
    assert result.returncode == 0, result.stderr.decode()
    assert first_half_largest_by_hand(Tagger.load(sharp), read_conllu(SAMPLE)) >= 0.5
    assert b"note:" not in result.stderr


def test_plot_notes_diffuse_attention_on_its_sentence(diffuse_and_sharp, tmp_path):
    diffuse, sharp = diffuse_and_sharp
    result = run_cli("plot", "-m", sharp, "--compare", diffuse, "-i", SAMPLE, "-o", tmp_path / "f.png")
    assert result.returncode == 0, result.stderr.decode()
    found = NOTE.findall(result.stderr)
    assert len(found) == 1 and b"diffuse, on this sentence" in result.stderr, result.stderr.decode()
    expected = first_half_largest_by_hand(Tagger.load(diffuse), read_conllu(SAMPLE)[:1])
    assert float(found[0]) == pytest.approx(expected, abs=0.006)


@pytest.mark.parametrize(
    ("task", "changes", "largest", "noted"),
    [
        ("pos", {}, 0.49, True),
        ("pos", {}, 0.5, False),  # the threshold itself is not diffuse
        ("pos", {"attention_temperature": 0.25}, 0.3, False),  # trained with the recipe: nothing to advise
        ("pos", {"attention": "left-to-right"}, 0.1, False),  # fixed attention, no scores to sharpen
        ("ner", {}, 0.3, True),  # the English recipe's csoftmax (largest α 0.32)
        ("ner", {"attention": "csparsemax", "attention_temperature": 0.5}, 0.45, False),
        ("qe", {}, 0.1, False),  # no recipe measured for QE
    ],
)
def test_when_the_note_is_given(monkeypatch, task, changes, largest, noted):
    from easyfirst.cli import plot

    config = Config.for_task(task)
    for key, value in changes.items():
        setattr(config.model.holder(key), key, value)
    console = Console(file=io.StringIO(), width=300)
    monkeypatch.setattr(plot, "err", console)
    plot.note_if_diffuse(SimpleNamespace(config=config), largest, "this model")
    assert ("--easy-first" in console.file.getvalue()) == noted
    console.file.truncate(0)
    plot.note_if_diffuse(SimpleNamespace(config=config), largest, "this model", bundled=True)
    said = console.file.getvalue()
    assert "train" not in said  # a bundled model: no advice to retrain it
    assert ("diffuse" in said) == noted


def test_plot_of_the_bundled_ner_model_does_not_advise_retraining_it(tmp_path):
    text = "Angela Merkel met Emmanuel Macron in Paris."
    result = run_cli("plot", "-m", "en-ner", "--text", text, "-o", tmp_path / "ner.png")
    assert result.returncode == 0, result.stderr.decode()
    said = result.stderr.decode()
    assert "easyfirst train" not in said and "--easy-first" not in said, said
