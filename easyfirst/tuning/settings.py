"""What a study was started with, kept in ``STUDY/study.json``: the options of its first call that make
its settings (the config's, the search space, the pruner, the objectives, the storage), the base config
they made and the space's text. A later call on the study takes them from there; an option given again
must be the same, and the config they make must not have changed (an edited config file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from easyfirst.atomic import read_json, write_json
from easyfirst.config import Config
from easyfirst.errors import InputError
from easyfirst.tuning.study import OBJECTIVES, PRUNERS, STUDY_FILE

DEFAULTS = {"pruner": "median", "objectives": "score"}
PER_PROCESS = ("threads", "workers")  # [train] keys a process chooses (--threads), not the study


def flag(name: str) -> str:
    """The option of a setting: ``data__train`` → ``--train``, ``assignments`` → ``--set``."""
    return "--set" if name == "assignments" else "--" + name.split("__")[-1].replace("_", "-")


def jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def saved(folder: Path) -> dict | None:
    """The study's ``study.json``, or None where no study was started in ``folder``."""
    path = folder / STUDY_FILE
    if not path.is_file():
        if folder.exists() and not folder.is_dir():
            raise InputError("is a file, not a study folder", folder)
        return None
    try:
        data = read_json(path)
    except ValueError as error:
        raise InputError(f"not a study's settings (JSON): {error}", path) from None
    if not isinstance(data, dict) or not {"command", "base", "space_text"} <= set(data):
        raise InputError("not a study's settings (easyfirst tune writes this file)", path)
    return data


def merged(command: dict[str, Any], before: dict | None, folder: Path) -> dict[str, Any]:
    """The settings of this call: those given, the rest from the study's first call (or the defaults,
    for a new study); a setting given that differs from the study's is refused."""
    command = {name: jsonable(value) for name, value in command.items()}
    if before is None:
        settings = {name: DEFAULTS.get(name) if value is None else value for name, value in command.items()}
        objectives(settings["objectives"])
        if settings["pruner"] not in PRUNERS:
            raise InputError(f"--pruner must be one of {', '.join(PRUNERS)}, not {settings['pruner']!r}")
        return settings
    first = before["command"]
    for name, value in command.items():  # the space: its text is compared (record)
        if value is not None and value != first.get(name) and name != "space":
            raise InputError(
                f"the study was started with {flag(name)} {show(first.get(name))}, not {show(value)}: a study "
                "keeps its settings (give none of them to go on, or start another study folder)",
                folder,
            )
    return {name: first.get(name) if value is None else value for name, value in command.items()}


def show(value: Any) -> str:
    if value is None:
        return "unset"
    return " ".join(map(str, value)) if isinstance(value, list) else str(value)


def objectives(text: str) -> list[str]:
    """``score`` or ``score,sharpness`` as a list, checked."""
    names = [name.strip() for name in text.split(",")]
    if names[0] != "score" or len(set(names)) != len(names) or not set(names) <= set(OBJECTIVES):
        raise InputError(f"--objectives must be score or score,sharpness, not {text!r}")
    return names


def comparable(cfg: Config) -> dict[str, Any]:
    tables = cfg.to_dict()
    for key in PER_PROCESS:
        tables["train"].pop(key, None)
    return tables


def record(
    folder: Path, settings: dict[str, Any], base: Config, space_text: str, before: dict | None
) -> list[str]:
    """Write ``study.json`` for a new study; for one under way, check that the space is the same, and
    give ``base`` back every value the study began with that its settings now make differently (a
    default of easyfirst changed since, or a config file edited: a study's trials all train one base
    config). Returns a note per value so kept."""
    if before is None:
        write_json(
            folder / STUDY_FILE, {"command": settings, "base": comparable(base), "space_text": space_text}
        )
        return []
    if space_text != before["space_text"]:
        raise InputError(
            f"the search space {settings['space']} is not the one the study began with (kept in study.json)",
            folder,
        )
    now, notes = comparable(base), []
    for section, values in before["base"].items():
        for key, value in values.items():
            if key in now.get(section, {}) and now[section][key] != value:
                base.assign(section, key, value, (str(folder / STUDY_FILE), None))
                notes.append(
                    f"{section}.{key} = {value!r}, as the study began (its settings now make {now[section][key]!r})"
                )
    return notes
