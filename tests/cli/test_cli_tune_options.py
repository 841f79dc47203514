"""`easyfirst tune`'s options (easyfirst/cli/tune.py): the refusals that come before any study is opened,
one line each with exit status 2, and nothing left behind."""

from __future__ import annotations

import pytest
from verbs import easyfirst

from conftest import SAMPLE, extra
from easyfirst.cli.tune import FLAGS, SETTINGS, tune

extra("optuna", "tune")


@pytest.mark.parametrize(
    "args, line",
    [
        (["--report", "--retrain-best"], "--report and --retrain-best are two calls: give one of them"),
        (["--trials", "0"], "--trials must be an integer >= 1, not 0"),
        (["--trial", "3"], "--trial chooses the trial that --retrain-best trains: give both"),
        (["--threads", "0"], "--threads must be an integer >= 1, not 0"),
        (["--timeout", "0"], "--timeout must be a finite number > 0, not 0.0"),
        (["--report"], "{study}: no study here: start one with --space"),
        (["--retrain-best"], "{study}: no study here: start one with --space"),
        ([], "a new study needs its search space: --space PATH"),
        (["--pruner", "early"], "--pruner must be one of median, halving, none, not 'early'"),
        (["--objectives", "speed"], "--objectives must be score or score,sharpness, not 'speed'"),
    ],
)
def test_a_refused_call_is_one_line_and_makes_no_study_folder(args, line, tmp_path):
    study = tmp_path / "study"
    code, _, stderr = easyfirst("tune", study, "--train", SAMPLE, "--dev", SAMPLE, *args)
    assert code == 2, stderr
    assert stderr.startswith(line.format(study=study)) and len(stderr.strip().splitlines()) == 1, stderr
    assert not study.exists()


def test_a_space_that_is_missing_is_named(tmp_path):
    code, _, stderr = easyfirst("tune", tmp_path / "s", "--space", tmp_path / "none.toml", "--train", SAMPLE)
    assert code == 2 and str(tmp_path / "none.toml") in stderr, stderr


def test_the_verb_takes_the_study_settings_and_train_flags_it_names():
    names = set(tune.__signature__.parameters)
    assert {"study", "space", "trials", "report", "retrain_best", *FLAGS} <= names
    assert {"task", "config", "assignments"} <= set(SETTINGS) and "model__hidden_dim" not in names
