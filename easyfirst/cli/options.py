"""Options generated from dataclasses: the config's fields for ``train``, the tasks' tag options.

A config field with ``option(...)`` metadata (easyfirst.fields) becomes a Typer option whose value is
None unless given, so that a flag overrides the config file only when it is there; its help shows the
default of each task, and ``train --help`` shows it in its section's panel (:func:`panel_of`). A tag option is a field of a task's ``TagOptions`` dataclass.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable
from dataclasses import MISSING, Field, fields
from pathlib import Path
from typing import Annotated, Any

import typer

from easyfirst.fields import Option, flag_of


def _plain(annotation) -> type:
    """``int | None`` → int; ``bool | None`` → bool; ``dict[...]`` → dict."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is dict:
        return dict
    return args[0] if args else annotation


def _default(f: Field) -> Any:
    return f.default_factory() if f.default_factory is not MISSING else f.default


def _show(spec: Option, value: Any) -> str:
    if spec.show is not None:
        return spec.show(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


# parameter name → the registry names it takes, looked up only when --help shows them (a registry may
# import torch, as the character encoders' does: building the commands must not, or every `easyfirst ...`
# waits for it)
LAZY_CHOICES: dict[str, Callable[[], list[str]]] = {}


# the --help panel of each config section's flags; a section not named here gets its own name
SECTION_PANELS = {"data": "Data", "model": "Model", "loss": "Loss", "train": "Training"}


def panel_of(section: str, help_text: str, tasks: Iterable[str]) -> str:
    """The --help panel of a config field's flag: its task's (``QE``) when its help begins with the name
    of a task (``"QE: …"``, a flag for that task's models only), else its section's."""
    prefix = help_text.split(":", 1)[0]
    return prefix if prefix.lower() in tasks else SECTION_PANELS.get(section, section.capitalize())


def config_parameters(
    section: str, cls: type, defaults: dict[str, Any], tasks: Iterable[str] = ()
) -> list[inspect.Parameter]:
    """One keyword parameter ``{section}__{key}`` per optioned field of the dataclass ``cls``.

    ``defaults`` maps a task name to that task's defaults for this section (an instance of ``cls``), for
    the ``[default: …]`` in the help; ``tasks``, the task names, for :func:`panel_of`.
    """
    tasks = set(tasks)
    hints = typing.get_type_hints(cls)
    parameters = []
    for f in fields(cls):
        spec: Option | None = f.metadata.get("option")
        if spec is None:
            continue
        flag = flag_of(f)
        kind = _plain(hints[f.name])
        values = [getattr(v, f.name) for v in defaults.values()]
        help_text = spec.help
        if spec.choices is not None:
            LAZY_CHOICES[f"{section}__{f.name}"] = spec.choices
        if spec.show is not None or any(v is not None for v in values):
            shown = {task: _show(spec, value) for task, value in zip(defaults, values, strict=True)}
            first = next(iter(shown.values()))
            others = [f"{task} {text}" for task, text in shown.items() if text != first]
            help_text += f" \\[default: {first}{'; ' + ', '.join(others) if others else ''}]"
        if kind is bool:
            decls = (f"{flag}/--no-{flag[2:]}",)
            annotation: Any = bool | None
        elif spec.repeatable:
            decls, annotation = (flag,), list[str] | None
        elif spec.parse is not None:
            decls, annotation = (flag,), str | None
        else:
            decls, annotation = (flag,), kind | None
        option = typer.Option(
            *decls,
            help=help_text,
            show_default=False,
            metavar=spec.metavar,
            rich_help_panel=panel_of(section, spec.help, tasks),
        )
        parameters.append(
            inspect.Parameter(
                f"{section}__{f.name}",
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation=Annotated[annotation, option],
            )
        )
    return parameters


def config_values(section: str, cls: type, given: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """The fields of ``cls`` that were given on the command line, parsed to the fields' types, each with
    its flag (where the value came from, for its errors)."""
    values = {}
    for f in fields(cls):
        spec: Option | None = f.metadata.get("option")
        value = given.get(f"{section}__{f.name}")
        if spec is None or value is None:
            continue
        if spec.parse is not None:
            value = spec.parse(value)
        elif isinstance(value, Path):
            value = str(value)
        values[f.name] = (value, flag_of(f, value))
    return values


def given_flags(section: str, cls: type, given: dict[str, Any]) -> list[str]:
    """The flags of the optioned fields of ``cls`` that were given (as ``--x`` or ``--x/--no-x``)."""
    names = []
    for f in fields(cls):
        if "option" in f.metadata and given.get(f"{section}__{f.name}") is not None:
            flag = flag_of(f)
            names.append(
                f"{flag}/--no-{flag[2:]}" if _plain(typing.get_type_hints(cls)[f.name]) is bool else flag
            )
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
