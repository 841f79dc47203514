"""Typer options made from tables: ``train``'s from the flags of config keys (easyfirst.cli.flags),
``tag``'s from the tasks' ``TagOptions`` dataclasses.

A row of :data:`~easyfirst.cli.flags.FLAGS` becomes a Typer option whose value is None unless given, so
that a flag overrides the config file only when it is there; its help shows the default of each task,
and ``train --help`` shows it in its section's panel (:func:`panel_of`).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable
from dataclasses import MISSING, Field, fields
from pathlib import Path
from typing import Annotated, Any

import typer

from easyfirst.cli.flags import FLAGS, SECTION_TYPES, Flag
from easyfirst.config import Config
from easyfirst.fields import key_type


def _plain(annotation) -> type:
    """``int | None`` → int; ``bool | None`` → bool; ``dict[...]`` → dict."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is dict:
        return dict
    return args[0] if args else annotation


def _default(f: Field) -> Any:
    return f.default_factory() if f.default_factory is not MISSING else f.default


def _show(flag: Flag, value: Any) -> str:
    if flag.show is not None:
        return flag.show(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


# parameter name → the registry names it takes, looked up only when --help shows them (a registry may
# import torch, as the character encoders' does: building the commands must not, or every `easyfirst ...`
# waits for it)
LAZY_CHOICES: dict[str, Callable[[], list[str]]] = {}


# how --help names a task's defaults with vectors ("[default: 20; ner with --pretrained 50]")
WITH_VECTORS = "with --pretrained"

# the --help panel of each config section's flags; a section not named here gets its own name
SECTION_PANELS = {"data": "Data", "model": "Model", "loss": "Loss", "train": "Training"}


def panel_of(section: str, help_text: str, tasks: Iterable[str]) -> str:
    """The --help panel of a config field's flag: its task's (``QE``) when its help begins with the name
    of a task (``"QE: …"``, a flag for that task's models only), else its section's."""
    prefix = help_text.split(":", 1)[0]
    return prefix if prefix.lower() in tasks else SECTION_PANELS.get(section, section.capitalize())


def config_parameters(defaults: dict[str, Config], tasks: Iterable[str] = ()) -> list[inspect.Parameter]:
    """One keyword parameter ``{section}__{key}`` per row of :data:`easyfirst.cli.flags.FLAGS`.

    ``defaults`` maps a task name to that task's default config, for the ``[default: …]`` in the help
    (and "TASK with --pretrained" to its defaults with vectors, shown where they differ from the task's);
    ``tasks``, the task names, for :func:`panel_of`.
    """
    tasks = set(tasks)
    parameters = []
    for flag in FLAGS:
        kind = _plain(key_type(SECTION_TYPES[flag.section], flag.field))
        values = [getattr(config, flag.section).get(flag.field) for config in defaults.values()]
        help_text = flag.help
        if flag.choices is not None:
            LAZY_CHOICES[flag.parameter] = flag.choices
        if flag.show is not None or any(v is not None for v in values):
            shown = {task: _show(flag, value) for task, value in zip(defaults, values, strict=True)}
            first = next(iter(shown.values()))
            # a task's value where it differs from the first's; with vectors, where it differs from the task's
            others = [
                f"{task} {text}"
                for task, text in shown.items()
                if text
                != (shown[task.removesuffix(f" {WITH_VECTORS}")] if task.endswith(WITH_VECTORS) else first)
            ]
            help_text += f" \\[default: {first}{'; ' + ', '.join(others) if others else ''}]"
        if kind is bool:
            decls = (f"{flag.name}/--no-{flag.name[2:]}",)
            annotation: Any = bool | None
        elif flag.repeatable:
            decls, annotation = (flag.name,), list[str] | None
        elif flag.parse is not None:
            decls, annotation = (flag.name,), str | None
        else:
            decls, annotation = (flag.name,), kind | None
        option = typer.Option(
            *decls,
            help=help_text,
            show_default=False,
            metavar=flag.metavar,
            rich_help_panel=panel_of(flag.section, flag.help, tasks),
        )
        parameters.append(
            inspect.Parameter(
                flag.parameter,
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation=Annotated[annotation, option],
            )
        )
    return parameters


def config_values(given: dict[str, Any]) -> list[tuple[str, str, Any, str]]:
    """The config keys given as flags on the command line: (section, key, value parsed to the key's
    type, the flag as given: where the value came from, for its errors)."""
    values = []
    for flag in FLAGS:
        value = given.get(flag.parameter)
        if value is None:
            continue
        if flag.parse is not None:
            value = flag.parse(value)
        elif isinstance(value, Path):
            value = str(value)
        values.append((flag.section, flag.field, value, flag.given_as(value)))
    return values


def given_flags(given: dict[str, Any]) -> list[str]:
    """The flags of config keys that were given (as ``--x``, or ``--x/--no-x`` for a boolean)."""
    names = []
    for flag in FLAGS:
        if given.get(flag.parameter) is not None:
            boolean = _plain(key_type(SECTION_TYPES[flag.section], flag.field)) is bool
            names.append(f"{flag.name}/--no-{flag.name[2:]}" if boolean else flag.name)
    return names


def tag_option_parameters(option_types: Iterable[type]) -> list[inspect.Parameter]:
    """One keyword parameter per field of each task's ``TagOptions`` (its help in the field's metadata)."""
    parameters, seen = [], set()
    for cls in option_types:
        hints = typing.get_type_hints(cls)
        for f in fields(cls):
            if f.name in seen:
                continue
            seen.add(f.name)
            kind = _plain(hints[f.name])
            help_text = f.metadata.get("help", "")
            flag = "--" + f.name.replace("_", "-")
            decls = (f"{flag}/--no-{flag[2:]}",) if kind is bool else (flag,)
            default = _default(f)
            annotation = bool if kind is bool and default is not None else kind | None
            parameters.append(
                inspect.Parameter(
                    f.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=default,
                    annotation=Annotated[annotation, typer.Option(*decls, help=help_text)],
                )
            )
    return parameters
