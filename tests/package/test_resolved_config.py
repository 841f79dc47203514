"""The configuration is resolved once (issue #45): training derives a read-only config at the start,
with what the values given imply (a BiLSTM has no sketch steps) and what the data and vectors decide,
saves that one, and never writes into it; the bundled models' config.json files load unchanged."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, asdict

import pytest

from conftest import SAMPLE
from easyfirst.atomic import read_json
from easyfirst.config import SECTIONS, Config
from easyfirst.errors import InputError
from easyfirst.resources import BUNDLED, CONFIG_FILE, model_folder
from easyfirst.training.loop import train


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        (s, k, v)
        for s, k, v in [
            ("data", "train", "x.conllu"),
            ("model", "hidden_dim", 7),
            ("model", "attention_temperature", 0.5),
            ("loss", "label_smoothing", 0.1),
            ("train", "lr", 0.5),
        ]
    ],
)
def test_writing_into_a_resolved_config_raises_and_the_config_it_came_from_stays_writable(
    section, key, value
):
    built = Config.for_task("pos")
    resolved = built.resolved()

    def holder(config):  # the part of the section that holds the key ([model]'s hidden_dim: its encoder)
        return getattr(config, section).holder(key)

    before = getattr(holder(resolved), key)
    with pytest.raises(FrozenInstanceError, match="read-only"):
        setattr(holder(resolved), key, value)
    with pytest.raises(FrozenInstanceError):
        resolved.model = built.model
    assert getattr(holder(resolved), key) == before
    setattr(holder(built), key, value)  # the builder is not frozen with it
    assert getattr(holder(built), key) == value
    assert getattr(holder(resolved.thawed()), key) == before  # a writable copy of the resolved


def test_resolving_applies_what_the_values_imply_once_and_again_gives_the_same():
    built = Config.for_task("pos")
    built.set_dotted("model.model=bilstm")
    built.set_dotted("model.sketch_steps=7")
    resolved = built.resolved()
    assert resolved.model.decoder.sketch_steps == 0 and not resolved.model.decodes  # bilstm: N = 0
    assert built.model.decoder.sketch_steps == 7  # the builder keeps what was given
    assert resolved.resolved().to_dict() == resolved.to_dict()
    built.set_dotted("model.model=nef-f")  # changed after a resolution: no sketch_steps = 0 is left behind
    assert built.resolved().model.decoder.sketch_steps == 7


def test_a_runs_saved_config_is_the_resolved_one_and_the_callers_config_is_not_written(tmp_path):
    config = Config.for_task("pos")
    config.data.train = config.data.dev = str(SAMPLE)
    config.train.epochs, config.train.workers = 1, 1
    config.model.model = "bilstm"  # sketch_steps left unset (N = L): a BiLSTM resolves it to 0
    before = asdict(config)
    train(config, tmp_path / "run")
    assert asdict(config) == before
    saved = read_json(tmp_path / "run" / CONFIG_FILE)
    assert saved["model"]["sketch_steps"] == 0 and saved["data"]["test"] is None
    assert saved == config.resolved().to_dict() | {"model": {**config.to_dict()["model"], "sketch_steps": 0}}
    assert Config.from_saved(saved).to_dict() == saved  # and it loads as it was saved


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_the_bundled_models_config_json_loads_unchanged_and_read_only(name):
    path = model_folder(name) / CONFIG_FILE
    raw = json.loads(path.read_text(encoding="utf-8"))
    config = Config.from_saved(json.loads(path.read_text(encoding="utf-8")), str(path))
    saved = config.to_dict()
    assert {section: {key: saved[section][key] for key in table} for section, table in raw.items()} == raw
    assert config.frozen and all(getattr(config, s).frozen for s in SECTIONS)


def test_a_run_saved_with_the_removed_backend_fused_loads_and_a_new_config_naming_it_is_refused(tmp_path):
    """Backend fused was removed: a run folder whose config.json forced it tags (its backend is auto),
    while a config file that asks for it now is an error listing the backends."""
    from easyfirst.api import Tagger

    folder = tmp_path / "run"
    folder.mkdir()
    for path in model_folder("en-upos").iterdir():
        if path.is_file():
            (folder / path.name).symlink_to(path)
    raw = read_json(model_folder("en-upos") / CONFIG_FILE)
    raw["train"]["backend"] = "fused"
    (folder / CONFIG_FILE).unlink()
    (folder / CONFIG_FILE).write_text(json.dumps(raw), encoding="utf-8")
    assert Config.from_saved(read_json(folder / CONFIG_FILE)).train.backend == "auto"
    tagger = Tagger.load(folder)
    assert tagger.backend == "auto"
    assert tagger.tag([["She", "reads", "."]])[0].tags == ["PRON", "VERB", "PUNCT"]
    (tmp_path / "fused.toml").write_text('[train]\nbackend = "fused"\n', encoding="utf-8")
    with pytest.raises(InputError, match="one of auto, numba, reference"):
        Config.load(tmp_path / "fused.toml")
