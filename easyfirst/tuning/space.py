"""The search space of ``easyfirst tune``: a TOML file whose tables are the config's sections and whose
keys are config keys (the keys of ``easyfirst train --set``), each a range, a list of choices, or a plain
value that every trial takes::

    [model]
    hidden_dim = { low = 50, high = 200, step = 25 }   # integers, as the key is one
    dropout = { low = 0.1, high = 0.6 }
    [train]
    lr = { low = 1e-4, high = 0.1, log = true }
    optimizer = { choices = ["adagrad", "adam"] }
    epochs = 30                                         # fixed

Every bound and every choice is set on the study's base config and checked as ``easyfirst train`` checks
its values, before any trial runs, so that a bad key or value is reported as ``path:line: what is
wrong``. Optuna is not imported here: a trial is anything with ``suggest_int``, ``suggest_float`` and
``suggest_categorical``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, fields
from typing import Any

from easyfirst.config import SECTIONS, Config
from easyfirst.errors import InputError, suggest
from easyfirst.fields import toml_lines
from easyfirst.model.settings import DecoderSettings

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as a package
    import tomli as tomllib

RANGE_KEYS = ("low", "high", "step", "log")
# keys a study does not search: the task is the study's, the test set is never read while searching, and
# the threads and processes of a trial are the command's (--threads)
NOT_SEARCHED = {
    "data.task": "the task is the study's (--task)",
    "data.test": "the test set is never read while searching (--retrain-best scores it)",
    "train.threads": "a trial's threads are the command's (--threads)",
    "train.workers": "a trial's processes are the command's (--threads)",
}


@dataclass
class Parameter:
    """One searched key: ``name`` is ``section.key``; a range (``low``, ``high``, ``step``, ``log``,
    integers where the key is one) or ``choices``."""

    name: str
    line: int | None
    low: float | None = None
    high: float | None = None
    step: float | None = None
    log: bool = False
    integer: bool = False
    choices: list[Any] | None = None

    @property
    def section(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def key(self) -> str:
        return self.name.split(".", 1)[1]

    def suggest(self, trial) -> Any:
        if self.choices is not None:
            return trial.suggest_categorical(self.name, self.choices)
        if self.integer:
            return trial.suggest_int(self.name, self.low, self.high, step=self.step or 1, log=self.log)
        return trial.suggest_float(self.name, self.low, self.high, step=self.step, log=self.log)

    def describe(self) -> str:
        """``model.hidden_dim 50–200 (step 25)``, ``train.lr 0.0001–0.1 (log)``, ``x: a, b``."""
        if self.choices is not None:
            return f"{self.name}: {', '.join(map(str, self.choices))}"
        notes = ([f"step {self.step:g}"] if self.step is not None else []) + ["log"] * self.log
        return f"{self.name} {self.low:g}–{self.high:g}" + (f" ({', '.join(notes)})" if notes else "")


@dataclass
class Space:
    """The searched keys and the fixed ones (``section.key`` → (value, line)) of a search-space file."""

    path: str
    text: str
    parameters: list[Parameter] = field(default_factory=list)
    fixed: dict[str, tuple[Any, int | None]] = field(default_factory=dict)
    unused: list[str] = field(default_factory=list)  # searched keys the study's model has no use for

    def suggest(self, trial) -> dict[str, Any]:
        """The trial's value of every searched key (``section.key`` → value)."""
        return {p.name: p.suggest(trial) for p in self.parameters}

    def apply(self, cfg: Config, values: dict[str, Any], source: str) -> None:
        """Set the fixed keys, then ``values`` (``section.key`` → value, given by ``source``)."""
        for name, (value, line) in self.fixed.items():
            cfg.assign(*name.split(".", 1), value, (self.path, line))
        for name, value in values.items():
            cfg.assign(*name.split(".", 1), value, (source, None))


def read_space(text: str, path: str, base: Config) -> Space:
    """The space written in ``text`` (the file ``path``), each value checked on a copy of the ``base``
    config as ``easyfirst train`` checks its config (easyfirst.config.Config.resolved)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"not valid TOML: {error}", path) from None
    lines = toml_lines(text)
    space = Space(path, text)
    for section, table in raw.items():
        if section not in SECTIONS:
            where = lines.get((section, None))
            raise InputError(f"unknown section [{section}]{suggest(section, SECTIONS)}", path, where)
        if not isinstance(table, dict):
            raise InputError(f"[{section}] must be a table of config keys", path, lines.get((section, None)))
        for key, value in table.items():
            name, line = f"{section}.{key}", lines.get((section, key))
            if name in NOT_SEARCHED:
                raise InputError(f"{name} cannot be set in a search space: {NOT_SEARCHED[name]}", path, line)
            if isinstance(value, dict) and ("choices" in value or {"low", "high"} & set(value)):
                space.parameters.append(parameter(name, value, path, line))
            else:
                space.fixed[name] = (value, line)
    if not space.parameters:
        raise InputError(
            "the search space has no key to search (key = { low = …, high = … } or { choices = […] })", path
        )
    fixed = check_space(space, base)
    if fixed.model.model == "bilstm":  # one space for both models: a BiLSTM has no sketch decoder
        decoder = {f.name for f in fields(DecoderSettings)}
        space.unused = [p.name for p in space.parameters if p.section == "model" and p.key in decoder]
        space.parameters = [p for p in space.parameters if p.name not in space.unused]
        if not space.parameters:
            raise InputError(
                'a BiLSTM (model.model = "bilstm") has none of the keys searched: they are the decoder\'s',
                path,
            )
    return space


def parameter(name: str, spec: dict[str, Any], path: str, line: int | None) -> Parameter:
    """A searched key from its TOML table, its form checked (its values are checked by check_space)."""
    allowed = ("choices",) if "choices" in spec else RANGE_KEYS
    for key in spec:
        if key not in allowed:
            takes = "a list of choices takes no other key" if "choices" in spec else "a range takes "
            takes += ", ".join(RANGE_KEYS) * (allowed is RANGE_KEYS)
            raise InputError(f"{name}: unknown key {key!r} ({takes})", path, line)
    if "choices" in spec:
        choices = spec["choices"]
        if not isinstance(choices, list) or not choices:
            raise InputError(f"{name}: choices must be a list of values, not {choices!r}", path, line)
        for choice in choices:
            if not isinstance(choice, bool | int | float | str):
                raise InputError(
                    f"{name}: a choice must be a number, a string or true/false, not {choice!r}", path, line
                )
        return Parameter(name, line, choices=choices)
    if not {"low", "high"} <= set(spec):
        raise InputError(f"{name}: a range needs both low and high", path, line)
    for key in ("low", "high", "step"):
        value = spec.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InputError(f"{name}: {key} must be a number, not {value!r}", path, line)
    low, high, step, log = spec["low"], spec["high"], spec.get("step"), spec.get("log", False)
    if not isinstance(log, bool):
        raise InputError(f"{name}: log must be true or false, not {log!r}", path, line)
    if not low < high:
        raise InputError(f"{name}: low must be below high, not {low!r} and {high!r}", path, line)
    if step is not None and not step > 0:
        raise InputError(f"{name}: step must be above 0, not {step!r}", path, line)
    if log and step is not None:
        raise InputError(f"{name}: a range takes log or step, not both", path, line)
    if log and not low > 0:
        raise InputError(f"{name}: a log range must start above 0, not at {low!r}", path, line)
    return Parameter(name, line, low, high, step, log)


def check_space(space: Space, base: Config) -> Config:
    """Set every bound and choice, one at a time, on a copy of ``base`` with the fixed keys, and check
    it; a range of an integer key must have integer bounds (and step), and then searches integers.
    Returns ``base`` with the fixed keys, resolved."""
    fixed = base.thawed()
    space.apply(fixed, {}, space.path)
    fixed = fixed.resolved(space.path).thawed()
    for p in space.parameters:
        values = p.choices if p.choices is not None else [p.low, p.high]
        for value in values:
            trial = fixed.thawed()
            trial.assign(p.section, p.key, value, (space.path, p.line))
            trial = trial.resolved(space.path)
            if p.choices is None and isinstance(getattr(trial, p.section).get(p.key), int):
                p.integer = True
        if p.integer and not all(isinstance(v, int) for v in (p.low, p.high, p.step or 1)):
            raise InputError(
                f"{p.name} is an integer: low, high and step must be integers", space.path, p.line
            )
    return fixed
