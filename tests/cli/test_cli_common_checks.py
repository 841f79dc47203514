"""What the verbs share (easyfirst/cli/common.py): paths given empty, option rules, inputs of some task,
the model and device checks before torch loads a model, and how far a run that stopped early got."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
import typer

from conftest import QE_SAMPLE, SAMPLE
from easyfirst.cli.common import (
    Stopped,
    check_device,
    check_input,
    check_option,
    given_path,
    load_tagger,
    note_stopped,
    stopped,
    task_of,
)
from easyfirst.config import Config
from easyfirst.errors import InputError
from easyfirst.fields import at_least
from easyfirst.resources import model_folder


def test_an_empty_path_is_refused_and_any_other_is_a_path(tmp_path):
    with pytest.raises(typer.BadParameter, match="the name is empty"):
        given_path("")
    assert given_path("run/a") == Path("run/a")


def test_check_option_names_the_flag_and_lets_none_pass():
    check_option("--batch-size", None, at_least(1))
    check_option("--batch-size", 3, at_least(1))
    with pytest.raises(InputError, match=r"^--batch-size must be .*1.*, not 0$"):
        check_option("--batch-size", 0, at_least(1))


def test_an_input_is_a_file_or_a_qe_prefix(tmp_path):
    check_input(SAMPLE)
    check_input(QE_SAMPLE)  # a prefix: no file of that name
    with pytest.raises(InputError) as error:
        check_input(tmp_path / "none", "nothing here")
    assert str(error.value) == f"{tmp_path / 'none'}: nothing here"


@pytest.mark.parametrize(
    "device, message", [("banana", "--device: not a device name: 'banana'"), ("cuda:0", "no CUDA GPU")]
)
def test_a_device_is_checked(device, message):
    if device.startswith("cuda") and torch.cuda.is_available():
        pytest.skip("a GPU is here")
    with pytest.raises(InputError, match=message):
        check_device(device)
    check_device("cpu")


def test_load_tagger_refuses_a_missing_folder_and_an_unknown_backend(tmp_path):
    with pytest.raises(InputError, match="model folder not found"):
        load_tagger(tmp_path / "none")
    with pytest.raises(InputError, match="^--backend warp: one of auto"):
        load_tagger(None, backend="warp")
    tagger = load_tagger("en-upos")
    task, data = task_of(tagger)
    assert task.name == "pos" and data.tag_column == "upos"


@pytest.fixture
def run(tmp_path):
    """A copy of the bundled model as a run folder of 3 epochs, with a train.log."""
    folder = tmp_path / "run"
    shutil.copytree(model_folder("en-upos"), folder)
    (folder / "train.log").write_text("epoch 1\n")
    config = Config.for_task("pos")
    config.train.epochs = 3
    return folder, config


def test_a_finished_run_or_a_folder_without_a_log_did_not_stop(run):
    folder, config = run
    assert stopped(folder, config, {"epochs": [{}, {}, {}]}) is None
    assert stopped(model_folder("en-upos"), config) is None  # no train.log: not a run


def test_how_far_a_stopped_run_got_from_its_metrics_or_its_checkpoint(run, capsys):
    folder, config = run
    (folder / "metrics.json").write_text('{"epochs": [{"loss": 1.0}, {"loss": 0.5}]}')
    assert stopped(folder, config) == Stopped(2, 3)
    (folder / "metrics.json").unlink()
    assert stopped(folder, config) == Stopped(None, 3)
    assert str(Stopped(None, 3)) == "stopped before the end of its 3 epochs (no metrics.json, no checkpoint)"
    torch.save({"epoch": 3, "step": 7}, folder / "checkpoint.pt")  # resumes in epoch 3: two done, part of one
    early = note_stopped(folder, config)
    assert early == Stopped(2, 3, True)
    said = " ".join(capsys.readouterr().err.split())
    assert f"{folder} stopped after epoch 2 of 3 and part of the next" in said
    assert f"easyfirst train --resume {folder}" in said
    (folder / "checkpoint.pt").write_bytes(b"not a checkpoint")
    assert stopped(folder, config) == Stopped(None, 3)
