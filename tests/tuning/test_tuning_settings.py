"""What a study keeps (easyfirst/tuning/settings.py): the settings of its first call in study.json, a later
call's settings merged with them, a changed setting or base config refused with the flag it came from."""

from __future__ import annotations

import json

import pytest

from easyfirst.config import Config
from easyfirst.errors import InputError
from easyfirst.tuning.settings import flag, merged, objectives, record, saved
from easyfirst.tuning.study import STUDY_FILE

COMMAND = {
    "task": "pos",
    "pruner": None,
    "objectives": None,
    "storage": None,
    "data__train": None,
    "space": "s.toml",
}


def test_flags_are_named_as_the_command_line_names_them():
    assert flag("data__train") == "--train"
    assert flag("train__best_metric") == "--best-metric"
    assert flag("assignments") == "--set"


def test_a_new_study_takes_the_defaults_for_what_is_not_given(tmp_path):
    settings = merged(COMMAND, None, tmp_path)
    assert settings["pruner"] == "median" and settings["objectives"] == "score"
    assert settings["task"] == "pos"
    with pytest.raises(InputError, match="--pruner must be one of median, halving, none, not 'early'"):
        merged({**COMMAND, "pruner": "early"}, None, tmp_path)


def test_objectives_are_score_first_and_known():
    assert objectives("score, sharpness") == ["score", "sharpness"]
    for bad in ("sharpness", "score,score", "score,speed"):
        with pytest.raises(InputError, match="--objectives must be score or score,sharpness"):
            objectives(bad)


def test_a_study_under_way_keeps_its_settings_and_its_base_config(tmp_path):
    base = Config.for_task("pos")
    first = merged(COMMAND, None, tmp_path)
    record(tmp_path, first, base, "[model]\n", None)
    before = saved(tmp_path)
    assert json.loads((tmp_path / STUDY_FILE).read_text())["command"]["pruner"] == "median"
    assert merged({**COMMAND, "pruner": None}, before, tmp_path)["pruner"] == "median"  # from the first call
    with pytest.raises(InputError) as error:
        merged({**COMMAND, "pruner": "halving"}, before, tmp_path)
    assert str(error.value).startswith(f"{tmp_path}: the study was started with --pruner median, not halving")
    with pytest.raises(InputError, match="is not the one the study began with"):
        record(tmp_path, first, base, "[train]\n", before)
    changed = Config.for_task("pos")  # a default changed since the study began (or a config file edited)
    changed.model.encoder.hidden_dim = 7
    notes = record(tmp_path, first, changed, "[model]\n", before)
    assert notes == ["model.hidden_dim = 50, as the study began (its settings now make 7)"]
    assert changed.model.encoder.hidden_dim == 50  # its trials go on training what the first ones did
    changed = Config.for_task("pos")
    changed.train.threads = 2  # a process's own: not the study's
    assert record(tmp_path, first, changed, "[model]\n", before) == [] and changed.train.threads == 2


def test_saved_is_none_where_no_study_began_and_refuses_other_files(tmp_path):
    assert saved(tmp_path / "new") is None
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is a file, not a study folder"):
        saved(tmp_path / "file")
    (tmp_path / STUDY_FILE).write_text("{not json")
    with pytest.raises(InputError, match="study.json: not valid JSON"):
        saved(tmp_path)
    (tmp_path / STUDY_FILE).write_text('{"command": {}}')
    with pytest.raises(InputError, match="easyfirst tune writes this file"):
        saved(tmp_path)
