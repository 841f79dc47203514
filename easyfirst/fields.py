"""Config fields and the rule each field's values must keep; a config that becomes read-only.

A field of a config dataclass (easyfirst.config, easyfirst.model.settings) carries its :class:`Rule`
(``field(default=1, metadata=checked(at_least(1)))``): ``Config.validate`` checks every field's value
against its rule, whichever source it came from (a TOML file, ``--set``, a flag), before anything is
written. A numeric field must declare one (tests/package/test_config_validation.py sees to it). The flags that
set fields are the command line's (easyfirst.cli.flags). :class:`Freezable` makes a resolved config
read-only.

Reading a TOML file with errors that name its line (:func:`read_toml`, :func:`toml_lines`) and setting
a field after checking the value's type (:func:`set_field`) are here too: config files and search
spaces (easyfirst.tuning) read alike.
"""

from __future__ import annotations

import codecs
import copy
import functools
import math
import re
import sys
import typing
import warnings
from collections.abc import Callable, Iterable
from dataclasses import Field, FrozenInstanceError, dataclass, fields
from pathlib import Path
from typing import Any

from easyfirst.errors import InputError, suggest

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as a package
    import tomli as tomllib

# where a value came from, for its error: a flag ("--lr", None), "--set", or a file and its line
Origin = tuple[str, int | None]
# the origin of the first of some keys ("loss.alpha", ...) that was given: where a rule between keys points
Where = Callable[..., Origin]


@dataclass(frozen=True)
class Rule:
    """What a field's values must be: ``test(value)`` is true for a valid value (never called with an
    unset value, None); ``must`` completes "KEY must be ...", and ``invalid`` is an example that
    breaks the rule (for the generated tests; None for a rule that no value of the right type breaks)."""

    test: Callable[[Any], bool]
    must: str | Callable[[], str]  # a callable: looked up when an error is reported (a registry's names)
    invalid: Any = None

    def says(self) -> str:
        return self.must() if callable(self.must) else self.must


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def at_least(low: int) -> Rule:
    """An integer >= ``low`` (a count ``at_least(0)``, a dimension ``at_least(1)``)."""
    return Rule(lambda v: v >= low, f"an integer >= {low}", low - 1)


def positive(finite: bool = True) -> Rule:
    """A number > 0; finite unless ``finite`` is false (then inf is allowed: a clip of inf clips nothing)."""
    if finite:
        return Rule(lambda v: math.isfinite(v) and v > 0, "a finite number > 0", float("nan"))
    return Rule(lambda v: v > 0, "a number > 0 (inf: no limit)", 0.0)


def non_negative() -> Rule:
    return Rule(lambda v: math.isfinite(v) and v >= 0, "a finite number >= 0", -1.0)


def fraction() -> Rule:
    """A probability that cannot be 1 (a dropout, a label smoothing): in [0, 1)."""
    return Rule(lambda v: 0 <= v < 1, "in [0, 1)", 1.0)


def one_of(names: Callable[[], Iterable[str]]) -> Rule:
    """One of ``names()`` (looked up when checked: a registry may import torch)."""
    return Rule(lambda v: v in names(), lambda: "one of " + ", ".join(names()), "banana")


def weights(tags: tuple[str, ...] | None = None) -> Rule:
    """A table TAG = weight of finite weights >= 0 (the tags limited to ``tags`` when given)."""
    known = " of finite weights >= 0 (TAG = W)" if tags is None else f" of {' and '.join(tags)} weights >= 0"
    return Rule(
        lambda table: all(
            (tags is None or tag in tags) and _number(w) and math.isfinite(w) and w >= 0
            for tag, w in table.items()
        ),
        f"a table{known}",
        {"BAD": -1.0},
    )


def encoding() -> Rule:
    def known(name: str) -> bool:
        try:
            codecs.lookup(name)
        except LookupError:
            return False
        return True

    return Rule(known, "a known text encoding (utf-8, latin-1, ...)", "banana")


def any_integer(what: str) -> Rule:
    """A numeric field that takes every integer (says so, rather than having no rule)."""
    return Rule(lambda v: True, what)


class Freezable:
    """A config, or a section of one, that becomes read-only once resolved (easyfirst.config.Config.
    resolved): after :meth:`freeze` (of it and of the Freezable values it holds, its sections and their
    parts), setting any attribute raises FrozenInstanceError (an AttributeError). Building a config
    (TOML, ``--set``, flags) writes into an unfrozen one; :meth:`thawed` is a writable copy,
    :meth:`replaced` a frozen copy with some values changed. A section's keys are flat
    (:func:`flat_fields`): :meth:`get` reads one, :meth:`holder` is the part that holds it, and setting a
    part's key on the section itself is an AttributeError (it would be a new attribute nothing reads)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_frozen"):
            raise FrozenInstanceError(
                f"cannot set {type(self).__name__}.{name}: a resolved configuration is read-only "
                "(what changes while training runs is training state)"
            )
        if name not in type(self).__dataclass_fields__:  # a part's key set on the whole: read by nothing
            for part, held in vars(self).items():
                if isinstance(held, Freezable) and name in type(held).__dataclass_fields__:
                    raise AttributeError(f"cannot set {type(self).__name__}.{name}: it is .{part}.{name}")
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        """A part's key read on the section itself (``config.model.hidden_dim``, as code read it before
        the model's settings were grouped by part): its value, with a DeprecationWarning saying where it lives, for one
        release. Writing it that way is an error (:meth:`__setattr__`); tests make the warning an error
        inside easyfirst (pyproject.toml), so the package itself never reads a key flat."""
        part = flat_fields(type(self)).get(name, (None,))[0] if not name.startswith("_") else None
        if part is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        warnings.warn(
            f"{type(self).__name__}.{name} is read from its part since 0.3.0: write .{part}.{name} "
            f"or .get({name!r}); the next release drops the flat read",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(getattr(self, part), name)

    @property
    def frozen(self) -> bool:
        return self.__dict__.get("_frozen", False)

    def freeze(self, frozen: bool = True) -> None:
        object.__setattr__(self, "_frozen", frozen)
        for value in vars(self).values():
            if isinstance(value, Freezable):
                value.freeze(frozen)

    def thawed(self):
        copied = copy.deepcopy(self)
        copied.freeze(False)
        return copied

    def replaced(self, part: str, **values: Any):
        """A frozen copy with ``values`` set in its part ``part`` (a config's section; its keys flat)."""
        copied = self.thawed()
        for key, value in values.items():
            setattr(getattr(copied, part).holder(key), key, value)
        copied.freeze()
        return copied

    def holder(self, key: str) -> Freezable:
        """What holds the flat key ``key`` (:func:`flat_fields`): this, or the part of it that has it."""
        part = flat_fields(type(self))[key][0]
        return self if part is None else getattr(self, part)

    def get(self, key: str) -> Any:
        """The value of the flat key ``key`` (``config.model.get("hidden_dim")``)."""
        return getattr(self.holder(key), key)

    def flat(self) -> dict[str, Any]:
        """The flat table of this section, as a config file writes it: key → value (copies)."""
        return {key: copy.deepcopy(self.get(key)) for key in flat_fields(type(self))}


def checked(rule: Rule | None) -> dict[str, Any]:
    """``field(metadata=checked(at_least(1)))``: the rule of a field that is not a flag."""
    return {} if rule is None else {"check": rule}


def parse_class_weights(values: list[str], flag: str = "--class-weight") -> dict[str, float]:
    """``["NOUN=2", "X=0.5"]`` → ``{"NOUN": 2.0, "X": 0.5}``."""
    weights = {}
    for value in values:
        tag, sign, number = value.rpartition("=")
        try:
            weights[tag] = float(number)
        except ValueError:
            sign = ""
        if not sign or not tag:
            raise InputError(f"{flag} must be TAG=WEIGHT (e.g. NOUN=2), not {value!r}") from None
    return weights


def show_weights(value: dict[str, float]) -> str:
    return " ".join(f"{k}={v:g}" for k, v in value.items()) or "none"


def read_toml(path: str | Path, what: str = "config file") -> tuple[dict[str, Any], str]:
    """A TOML file's tables and its text; every error names the file and, where there is one, the line
    (``what`` the file is, for the errors: "config file", "search space")."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
        return tomllib.loads(text), text
    except FileNotFoundError:
        raise InputError(f"{what} not found", path) from None
    except IsADirectoryError:
        raise InputError(f"is a folder, not a TOML {what}", path) from None
    except OSError as error:
        raise InputError(f"cannot read the {what}: {error.strerror}", path) from None
    except UnicodeDecodeError as error:
        line = text_line(error.object, error.start)
        raise InputError("not valid TOML: the file is not UTF-8 text", path, line) from None
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"\s*\(at line (\d+), column \d+\)$", str(error))
        message = str(error)[: found.start()] if found else str(error)
        raise InputError(f"not valid TOML: {message}", path, int(found[1]) if found else None) from None


def text_line(data: bytes, offset: int) -> int:
    return data[:offset].count(b"\n") + 1


def toml_lines(text: str) -> dict[tuple[str, str | None], int]:
    """(section, key) → the 1-based line of each ``key = ...`` of a TOML text (a ``[section]`` header:
    (section, None); ``[section.key]``: the sub-table's line), for errors that point at the line."""
    lines: dict[tuple[str, str | None], int] = {}
    table: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        header = re.match(r"\s*\[\s*([A-Za-z0-9_.\s\"-]+?)\s*\]", line)
        if header and not line.lstrip().startswith("[["):
            table = [part.strip().strip('"') for part in header[1].split(".")]
            lines.setdefault((table[0], table[1] if len(table) > 1 else None), number)
            continue
        assignment = re.match(r"\s*([A-Za-z0-9_.\s\"-]+?)\s*=", line)
        if assignment:
            path = table + [part.strip().strip('"') for part in assignment[1].split(".")]
            lines.setdefault((path[0], path[1] if len(path) > 1 else None), number)
    return lines


TYPE_NAMES = {
    int: "an integer",
    float: "a number",
    str: "a string",
    bool: "true or false",
    type(None): "unset",
}


@functools.cache
def field_types(section: type) -> dict[str, Any]:
    """The annotations of a config section's fields, resolved once per class (``typing.get_type_hints``
    evaluates every annotation's string each time: 14 ms of loading a model when it was called per key)."""
    return typing.get_type_hints(section)


@functools.cache
def flat_fields(section: type) -> dict[str, tuple[str | None, Field]]:
    """A config section's keys as a file writes them, each → (the part that holds it, its field): the
    section's own fields (part None) and the fields of its parts, the fields whose type is a Freezable
    dataclass (``[model]``'s ``encoder``: ``hidden_dim``, ...), under their own names. The parts' fields
    are the one list of where each key lives; two parts cannot have a key of the same name."""
    keys: dict[str, tuple[str | None, Field]] = {}
    for f in fields(section):
        kind = field_types(section)[f.name]
        if isinstance(kind, type) and issubclass(kind, Freezable):
            found = {g.name: (f.name, g) for g in fields(kind)}
        else:
            found = {f.name: (None, f)}
        for key, place in found.items():
            if key in keys:
                raise TypeError(f"{section.__name__}: the key {key!r} is in two parts")
            keys[key] = place
    return keys


def key_type(section: type, key: str) -> Any:
    """The annotation of the flat key ``key`` of a config section (:func:`flat_fields`)."""
    part = flat_fields(section)[key][0]
    return field_types(section if part is None else field_types(section)[part])[key]


def set_field(target: Any, key: str, value: Any, origin: Origin, section: str) -> None:
    """Set ``target.key = value`` after checking ``value`` against the field's annotation; ``key`` is flat
    (:func:`flat_fields`: a key of one of the target's parts is set there)."""
    keys = flat_fields(type(target))
    if key not in keys:
        raise InputError(f"unknown key {key!r} in [{section}]{suggest(key, keys)}", *origin)
    target = target.holder(key)
    hints = field_types(type(target))
    if typing.get_origin(hints[key]) is dict:  # a table of tag = number
        numbers = isinstance(value, dict) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value.values()
        )
        if not numbers:
            raise InputError(
                f"{section}.{key} must be a table of numbers (TAG = weight), not {value!r}", *origin
            )
        setattr(target, key, {str(k): float(v) for k, v in value.items()})
        return
    allowed = typing.get_args(hints[key]) or (hints[key],)
    if isinstance(value, int) and not isinstance(value, bool) and float in allowed and int not in allowed:
        value = float(value)
    if not any(isinstance(value, kind) and not (kind is int and isinstance(value, bool)) for kind in allowed):
        names = " or ".join(TYPE_NAMES.get(kind, kind.__name__) for kind in allowed)
        raise InputError(f"{section}.{key} must be {names}, not {type(value).__name__} {value!r}", *origin)
    setattr(target, key, value)
