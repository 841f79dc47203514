"""Config fields that are also command-line options.

A field of a config dataclass (easyfirst.config, easyfirst.model.settings) becomes an option of
``easyfirst train`` by carrying ``metadata=option(help=...)``; the CLI (easyfirst.cli.options) builds
the option from the field: its flag (``--key-with-dashes`` unless ``flag`` says otherwise), its type,
its help text with the default of each task, and ``--no-KEY`` for booleans. Every field, with or
without an option, can also be set with ``--set section.key=value``. So a new config key is one field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Option:
    help: str
    flag: str | None = None  # default: "--" + the key with dashes
    metavar: str | None = None
    # the option's value as given (a string, or a list of strings with ``repeatable``) → the field's value
    parse: Callable[[Any], Any] | None = None
    repeatable: bool = False
    show: Callable[[Any], str] | None = None  # the field's value as a user would type it (for defaults)
    choices: Callable[[], list[str]] | None = None  # the registry's names, looked up when help is shown


def option(help: str, **settings) -> dict[str, Option]:
    """``field(metadata=option("Learning rate."))``: make the field an option of ``easyfirst train``."""
    return {"option": Option(help, **settings)}
