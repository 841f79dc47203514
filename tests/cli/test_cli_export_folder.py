"""`easyfirst export` (easyfirst/cli/export.py): the bundled model exported to a new folder holds the same
weights (float16 as shipped, or float32 with --no-half), tags as the original does, and has a card;
every refusal is one line and exit status 2; `easyfirst data` lists the data sets."""

from __future__ import annotations

import json

import pytest
import torch
from verbs import easyfirst

from easyfirst.api import Tagger
from easyfirst.cli.export import export
from easyfirst.resources import model_folder

BUNDLED = model_folder("en-upos")
WORDS = [["The", "dog", "barks", "."], ["Is", "it", "raining", "?"]]


def weights(folder):
    return torch.load(folder / "model.pt", weights_only=True)


@pytest.mark.parametrize("half", [True, False])
def test_the_exported_folder_has_the_same_weights_and_tags_the_same(half, tmp_path):
    out = tmp_path / "shipped"
    code, _, stderr = easyfirst("export", BUNDLED, "-o", out, "--half" if half else "--no-half")
    assert code == 0, stderr
    assert f"exported {BUNDLED} to {out}" in stderr
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "config.json", "model.pt", "vocab.json"]
    before, after = weights(BUNDLED), weights(out)
    assert before.keys() == after.keys()
    for key, value in before.items():
        expected = value.float() if value.is_floating_point() and not half else value
        assert after[key].dtype == expected.dtype and torch.equal(after[key], expected), key
    saved = json.loads((BUNDLED / "config.json").read_text())["model"]
    assert all(json.loads((out / "config.json").read_text())["model"][k] == v for k, v in saved.items())
    assert (out / "README.md").read_text().startswith("# ")
    assert Tagger.load(out).tag(WORDS) == Tagger.load().tag(WORDS)


@pytest.mark.parametrize(
    "args, line",
    [
        (["{run}", "{tmp}/a", "-o", "{tmp}/b"], "give the output folder once: as OUT or as -o OUT, not both"),
        (["{run}"], "no output folder: easyfirst export RUN -o OUT"),
        (["{run}", "{run}", "--overwrite"], "{run}: is the run folder itself: export into another folder"),
        (["{run}", "{tmp}/file"], "{tmp}/file: is a file, not a folder"),
        (["{run}", "{tmp}/held"], "{tmp}/held: already holds a model (--overwrite replaces it)"),
        (["{tmp}/none", "{tmp}/out"], "{tmp}/none: model folder not found"),
    ],
)
def test_a_refused_export_is_one_line_and_writes_nothing(args, line, tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "model.pt").write_text("x")
    code, _, stderr = easyfirst("export", *(a.format(run=BUNDLED, tmp=tmp_path) for a in args))
    assert code == 2 and stderr.startswith(line.format(run=BUNDLED, tmp=tmp_path)), stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "held"]
    assert (tmp_path / "held" / "model.pt").read_text() == "x"


def test_data_lists_every_data_set_and_vectors_lists_the_named_sets():
    from easyfirst.data.datasets import DATASETS

    code, stdout, stderr = easyfirst("data")
    assert code == 0, stderr
    assert all(name in stdout for name in DATASETS)
    code, stdout, _ = easyfirst("data", "--vectors")
    assert code == 0 and "installed" in stdout and "glove" in stdout.lower()


def test_export_is_a_command_of_the_app():
    from easyfirst.cli import app

    assert export in [command.callback for command in app.registered_commands]
