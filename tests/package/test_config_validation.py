"""Every config value is checked before anything is written (issue #29).

The cases are generated from the config's fields: each field gets a value of the wrong type and, where
its rule (``easyfirst.fields``) names one, a value out of its range, through each source a value can
come from (its flag, ``--set``, a TOML file). Each must exit 2 with one line naming the source, and
leave no run folder (an existing one untouched). Validation only: nothing trains, so the CLI runs in
this process (one import of torch), with a few cases through a real ``python -m easyfirst`` at the end.
"""

from __future__ import annotations

import math
import typing
from pathlib import Path

import pytest
import verbs

from conftest import SAMPLE, run_cli
from easyfirst.cli.flags import FLAG_OF
from easyfirst.config import SECTIONS, Config
from easyfirst.fields import Rule, field_types, flat_fields
from easyfirst.model.settings import LOSS_ALPHA


def easyfirst(*args: str) -> tuple[int, str]:
    """``easyfirst ARGS`` in this process (tests/verbs.py): (exit status, stderr)."""
    code, _, stderr = verbs.easyfirst(*args)
    return code, stderr


def all_fields():
    """(section, field, annotation) of every key a config file may hold ([model]'s parts' keys flat)."""
    config = Config()
    for section in SECTIONS:
        target = getattr(config, section)
        for key, (_, f) in flat_fields(type(target)).items():
            yield section, f, field_types(type(target.holder(key)))[key]


def wrong_type(annotation) -> object:
    """A value of another type than the field's (a word for a number, a number for a word)."""
    kinds = typing.get_args(annotation) or (annotation,)
    return 3 if str in kinds or bool in kinds else "wide"


def toml(value: object) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # TOML's nan, inf, -inf
    return repr(value)


def flag_text(value: object) -> list[str]:
    if isinstance(value, dict):
        return [f"{k}={v}" for k, v in value.items()]
    return [str(value)]


def cases():
    """(id, section, field, value, source) for every field × wrong value × source."""
    for section, f, annotation in all_fields():
        rule: Rule | None = f.metadata.get("check")
        values = {"type": wrong_type(annotation)}
        if rule is not None and rule.invalid is not None:
            values["range"] = rule.invalid
        for kind, value in values.items():
            sources = ["set", "toml"]
            if (
                f"{section}.{f.name}" in FLAG_OF and kind == "range"
            ):  # a flag's wrong type is Click's to refuse
                sources.append("flag")
            for source in sources:
                yield pytest.param(section, f, value, source, id=f"{section}.{f.name}-{kind}-{source}")


@pytest.fixture
def existing(tmp_path) -> Path:
    """A run folder that is there before: the refused command must leave it as it was."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "train.log").write_text("an earlier run\n")
    return folder


def contents(folder: Path) -> dict[str, tuple[int, str]]:
    return {p.name: (p.stat().st_mtime_ns, p.read_text()) for p in folder.iterdir()}


@pytest.mark.parametrize(("section", "f", "value", "source"), list(cases()))
def test_every_field_refuses_a_bad_value_from_every_source(tmp_path, existing, section, f, value, source):
    before = contents(existing)
    args = ["train", "--train", SAMPLE, "--dev", SAMPLE, "--overwrite", "--output", existing]
    args += [] if f.name == "epochs" else ["--epochs", "1"]  # a flag would override the value tried
    if source == "flag":
        where = FLAG_OF[f"{section}.{f.name}"].name
        args += [item for text in flag_text(value) for item in (where, text)]
    elif source == "set":
        where = "--set"
        args += ["--set", f"{section}.{f.name}={toml(value)}"]
    else:
        path = tmp_path / "bad.toml"
        path.write_text(f"# a config with one bad value\n[{section}]\n{f.name} = {toml(value)}\n")
        where = f"{path}:3"
        args += ["--config", path]
    code, stderr = easyfirst(*args)
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"{where}: ") or lines[0].startswith(f"{where} "), lines[0]
    assert f.name in lines[0] or (source == "flag" and where in lines[0]), lines[0]
    assert contents(existing) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({"run", *(["bad.toml"] * (source == "toml"))})


def test_every_number_field_has_a_rule():
    """A new numeric key cannot come without its range (say ``any_integer`` where every value goes)."""
    for section, f, annotation in all_fields():
        kinds = set(typing.get_args(annotation) or (annotation,)) - {type(None)}
        if kinds & {int, float} and bool not in kinds:
            assert "check" in f.metadata, f"{section}.{f.name} has no rule (easyfirst.fields)"


def test_the_rules_keep_the_defaults_of_every_task():
    from easyfirst.tasks import TASKS

    for task in TASKS:
        Config.for_task(task).validate()  # raises on a default its own rule refuses


# The kinds of the issue, each with the line it prints (typed by hand, not taken from the rules).
# {toml} is the TOML file's path.
REFUSED = [
    (["--lr", "-1"], "--lr: train.lr must be a finite number > 0, not -1.0"),
    (["--lr", "nan"], "--lr: train.lr must be a finite number > 0, not nan"),
    (["--lr", "0"], "--lr: train.lr must be a finite number > 0, not 0.0"),
    (["--lr", "inf"], "--lr: train.lr must be a finite number > 0, not inf"),
    (["--epochs", "0"], "--epochs: train.epochs must be an integer >= 1, not 0"),
    (["--batch-size", "0"], "--batch-size: train.batch_size must be an integer >= 1, not 0"),
    (["--dropout", "1.5"], "--dropout: model.dropout must be in [0, 1), not 1.5"),
    (["--label-smoothing", "1.5"], "--label-smoothing: loss.label_smoothing must be in [0, 1), not 1.5"),
    (
        ["--attention-temperature", "-1"],
        "--attention-temperature: model.attention_temperature must be a finite number > 0, not -1.0",
    ),
    (
        ["--max-train-length", "-1"],
        "--max-train-length: data.max_train_length must be an integer >= 0, not -1",
    ),
    (["--device", "banana"], "--device: not a device name: 'banana'"),
    (["--task", "banana"], "--task must be one of pos, ner, qe, not 'banana'"),
    (["--set", "model.hidden_dim=0"], "--set: model.hidden_dim must be an integer >= 1, not 0"),
    (["--set", "model.word_dim=-4"], "--set: model.word_dim must be an integer >= 1, not -4"),
    (["--set", "model.max_affix=-2"], "--set: model.max_affix must be an integer >= 1, not -2"),
    (["--set", "train.clip=-1"], "--set: train.clip must be a number > 0 (inf: no limit), not -1.0"),
    (["--set", "train.clip=nan"], "--set: train.clip must be a number > 0 (inf: no limit), not nan"),
    (["--set", "train.lr=inf"], "--set: train.lr must be a finite number > 0, not inf"),
    (
        ["--set", "train.optimizer=adamax"],
        "--set: train.optimizer must be one of adagrad, adam, nadam, adamw, sgd, not 'adamax'",
    ),
    (["--set", "model.hidden_dim=wide"], "--set: model.hidden_dim must be an integer, not str 'wide'"),
    (["--set", "modle.hidden_dim=1"], "--set: unknown section 'modle' (did you mean model?)"),
    (["--set", "model.hiden_dim=1"], "--set: unknown key 'hiden_dim' in [model] (did you mean hidden_dim?)"),
    ("[train\nlr = 0.1\n", "{toml}:1: not valid TOML: Expected ']' at the end of a table declaration"),
    ("[train]\nlr = -0.5\n", "{toml}:2: train.lr must be a finite number > 0, not -0.5"),
    ("[data]\nmax_train_length = -5\n", "{toml}:2: data.max_train_length must be an integer >= 0, not -5"),
    ('[train]\nepochs = "ten"\n', "{toml}:2: train.epochs must be an integer, not str 'ten'"),
    ("[modle]\nhidden_dim = 10\n", "{toml}:1: unknown section [modle] (did you mean model?)"),
    (
        "[model]\n\nhiden_dim = 10\n",
        "{toml}:3: unknown key 'hiden_dim' in [model] (did you mean hidden_dim?)",
    ),
    ('[data]\ntask = "nre"\n', "{toml}:2: data.task must be one of pos, ner, qe, not 'nre'"),
    # a rule between keys points at the key that was given
    (["--loss", "entmax"], "--loss: loss entmax needs alpha > 1 (1.5: entmax15, 2: sparsemax)"),
    (
        ["--no-concat", "--sketch-steps", "0"],
        "--no-concat: concat = false predicts from the sketch alone: it needs sketch steps (N > 0)",
    ),
    (
        '[data]\ntask = "ner"\n\n[loss]\nlabel_smoothing = 0.1\n',
        "{toml}:5: with crf the training loss is the CRF's sequence likelihood: loss, alpha, label_smoothing, "
        "temperature and class_weights apply to per-word outputs only",
    ),
]


@pytest.mark.parametrize(("given", "line"), REFUSED, ids=[str(i) for i in range(len(REFUSED))])
def test_the_issues_invalid_values_each_print_one_line(tmp_path, given, line):
    args = ["train", "--train", SAMPLE, "--dev", SAMPLE, "--epochs", "1", "--output", tmp_path / "run"]
    if isinstance(given, str):
        (tmp_path / "bad.toml").write_text(given)
        given = ["--config", tmp_path / "bad.toml"]
    code, stderr = easyfirst(*args, *given)
    assert (code, stderr.strip()) == (2, line.format(toml=tmp_path / "bad.toml"))
    assert not (tmp_path / "run").exists()


def test_through_the_real_command_line(tmp_path):
    """The same refusals as a user sees them: no traceback, exit 2, one line, no folder."""
    (tmp_path / "bad.toml").write_text("[train]\nclip = nan\n")
    for given in (["--lr", "-1"], ["--set", "model.hidden_dim=0"], ["--config", tmp_path / "bad.toml"]):
        run = run_cli("train", "--train", SAMPLE, "--dev", SAMPLE, "--output", tmp_path / "run", *given)
        assert run.returncode == 2 and len(run.stderr.decode().strip().splitlines()) == 1, run.stderr
        assert not (tmp_path / "run").exists()


def test_loss_names_are_checked_by_their_rule():
    assert LOSS_ALPHA  # the rule's choices come from the registry the loss is built from
    code, stderr = easyfirst("train", "--train", SAMPLE, "--loss", "banana", "--output", "/nonexistent/run")
    assert code == 2 and stderr.startswith("--loss: loss.loss must be one of softmax"), stderr


@pytest.mark.parametrize("given", [["--epochs", "ten"], ["--lr", "fast"], ["--dropout", "half"]])
def test_a_word_for_a_flags_number_is_one_line(tmp_path, given):
    """Click refuses it; its wording is Typer's (it changed between versions), the form is ours."""
    code, stderr = easyfirst("train", "--train", SAMPLE, "--output", tmp_path / "run", *given)
    assert code == 2 and len(stderr.strip().splitlines()) == 1, stderr
    assert stderr.startswith(f"{given[0]}: ") and stderr.strip().endswith("(see easyfirst train --help)"), (
        stderr
    )
    assert not (tmp_path / "run").exists()
