"""Typed configuration, loaded from TOML and overridden from the command line.

A config file has the tables ``[data]``, ``[model]``, ``[loss]`` and ``[train]``, whose keys are the
fields of :class:`DataConfig`, :class:`ModelConfig`, :class:`LossConfig` and :class:`TrainConfig`; a
missing table or key keeps its default (so model folders written before a key existed load as they
were trained). Unknown keys are errors, so a typo
in a config file is reported rather than silently ignored. The defaults here are the paper's §5.1
values with 16 sentences per update; each task changes some of them (easyfirst.tasks: ``pos`` trains
in the paper's own regime at lr 0.05), and ``configs/pos.toml``, ``ner.toml`` and ``qe.toml`` write
each task's values out.
"""

from __future__ import annotations

import math
import sys
import typing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from easyfirst.errors import InputError
from easyfirst.fields import option
from easyfirst.model.settings import LossConfig, ModelConfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as a package
    import tomli as tomllib

SECTIONS = ("data", "model", "loss", "train")
REDUCTIONS = ("mean", "sum")
OPTIMIZERS = ("adagrad", "adam", "sgd")


@dataclass
class DataConfig:
    task: str = "pos"
    # None: the task's default set (see easyfirst.data.datasets)
    train: str | None = field(
        default=None, metadata=option("Training file (default: the task's data set).", metavar="PATH")
    )
    dev: str | None = field(
        default=None, metadata=option("Dev file, for choosing the best epoch.", metavar="PATH")
    )
    test: str | None = field(
        default=None, metadata=option("Test file, scored once at the end.", metavar="PATH")
    )
    tag_column: str = field(  # CoNLL-U column holding the target tags
        default="upos", metadata=option("CoNLL-U column to learn: upos or xpos.")
    )
    max_train_length: int = 50  # training drops longer sentences (paper §5.1); evaluation never does
    # column files (NER, easyfirst.data.conll): 0-based columns, negative from the end; file encoding
    token_column: int = 0
    label_column: int = -1
    encoding: str = field(
        default="utf-8",
        metadata=option("Encoding of column files (ner; the original CoNLL-2002/2003 files: latin-1)."),
    )


# config keys added after runs were first saved, with the value that matches how those runs behaved
SAVED_BEFORE = {
    "model": {"steps_beyond_length": True, "pretrained_words": 0, "gaps": False, "source_tags": False}
}


@dataclass
class TrainConfig:
    epochs: int = field(default=20, metadata=option("Training epochs."))
    optimizer: str = "adagrad"  # adagrad (the paper's), adam or sgd (easyfirst.optim)
    lr: float = field(default=0.1, metadata=option("Learning rate."))
    clip: float = 5.0  # gradient-norm clipping
    # the learning rate of the embedding tables (words, affixes, features); unset: lr, like the rest
    embedding_lr: float | None = None
    batch_size: int = field(default=16, metadata=option("Sentences per update."))
    # how an update's loss combines its words; "sum" with batch_size = 1 is the paper's own code
    # (configs/pos-reference.toml), where clipping then acts on a sentence's summed gradient
    reduction: str = field(
        default="mean",
        metadata=option(
            "An update's loss: the mean over its words, or their sum (the paper's code: one sentence per "
            "update, its words' losses summed).",
            choices=lambda: list(REDUCTIONS),
        ),
    )
    shuffle: bool = field(
        default=True,
        metadata=option(
            "Shuffle the training sentences every epoch (--no-shuffle: file order, as the paper's code)."
        ),
    )
    eval_batch_size: int = 256
    seed: int = field(default=1, metadata=option("Random seed."))
    # Hogwild processes for one sentence per update on the CPU (easyfirst.hogwild); unset: one per core
    workers: int | None = field(
        default=None,
        metadata=option(
            "Processes that train one shared model without locks (Hogwild), one sentence per update on "
            "the CPU only; default: one per core (at most 8, one per 500 training sentences); 1: one "
            "process, repeatable bit for bit.",
            metavar="K",
            show=lambda value: "one per core" if value is None else str(value),
        ),
    )
    threads: int = field(  # torch intra-op threads; 0 leaves torch's default
        default=0,
        metadata=option(
            "CPU threads for torch (0: torch's choice).", show=lambda v: "torch's choice" if not v else str(v)
        ),
    )
    checkpoint_every: int = field(  # also checkpoint every K updates within an epoch (0: at epoch ends only)
        default=0, metadata=option("Also checkpoint every K updates (0: at epoch ends only).", metavar="K")
    )
    # the dev score that chooses the best epoch (a report key, higher is better); unset: the task's
    best_metric: str | None = field(
        default=None,
        metadata=option(
            "The dev score that chooses the best epoch, a metrics.json key (qe: f1_mult, mcc, "
            "target_f1_mult, target_mcc, gaps_f1_mult, source_f1_mult, ...).",
            metavar="KEY",
            show=lambda value: "the task's (qe with gaps: target_f1_mult)" if value is None else value,
        ),
    )


@dataclass
class Config:
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def for_task(cls, task: str) -> Config:
        """The built-in defaults of ``task`` (easyfirst.tasks): the values here with the task's changes."""
        from easyfirst.tasks import get_task

        config = cls()
        config.data.task = task
        for section, values in get_task(task).defaults.items():
            for key, value in values.items():
                set_field(getattr(config, section), key, value, f"task {task} [{section}]")
        return config

    @classmethod
    def from_dict(cls, raw: dict[str, Any], source: str = "<config>", task: str | None = None) -> Config:
        """A config from TOML/JSON tables; keys left out take the defaults of its ``[data] task`` (or of
        ``task``, which must then agree with it; without either, POS)."""
        from easyfirst.tasks import DEFAULT_TASK, TASKS

        data = raw.get("data") if isinstance(raw.get("data"), dict) else {}
        if task is not None and data.get("task", task) != task:
            raise InputError(f"this config is for task {data['task']!r}, not {task!r}", source)
        task = data.get("task", task or DEFAULT_TASK)
        if task not in TASKS:
            raise InputError(f"task must be one of {', '.join(TASKS)}, not {task!r}", source)
        config = cls.for_task(task)
        for section, value in raw.items():
            if section not in {f.name for f in fields(cls)}:
                known = ", ".join(f.name for f in fields(cls))
                raise InputError(f"unknown section [{section}] (expected one of {known})", source)
            if not isinstance(value, dict):
                raise InputError(f"[{section}] must be a table", source)
            target = getattr(config, section)
            for key, item in value.items():
                set_field(target, key, item, f"{source} [{section}]")
        config.validate(source)
        return config

    @classmethod
    def from_saved(cls, raw: dict[str, Any], source: str = "<config>") -> Config:
        """The config of a run folder (its config.json). A key the file lacks because the run was saved
        before the key existed takes the behaviour runs had then (``SAVED_BEFORE``), not today's default,
        so an old model tags as it did."""
        for section, keys in SAVED_BEFORE.items():
            table = raw.get(section)
            if isinstance(table, dict):
                for key, value in keys.items():
                    table.setdefault(key, value)
        return cls.from_dict(raw, source)

    @classmethod
    def load(cls, path: str | Path, task: str | None = None) -> Config:
        path = Path(path)
        try:
            with path.open("rb") as handle:
                raw = tomllib.load(handle)
        except FileNotFoundError:
            raise InputError("config file not found", path) from None
        except tomllib.TOMLDecodeError as error:
            raise InputError(f"not valid TOML: {error}", path) from None
        return cls.from_dict(raw, str(path), task)

    def set_dotted(self, assignment: str) -> None:
        """``--set section.key=value``: the value is read as TOML (``3``, ``0.5``, ``true``, ``"x"``,
        ``{BAD = 5}``), a bare word as a string, and checked against the field's type."""
        key, sign, text = assignment.partition("=")
        section, dot, name = key.strip().partition(".")
        if not sign or not dot:
            raise InputError(f"--set takes SECTION.KEY=VALUE (e.g. model.hidden_dim=100), not {assignment!r}")
        if section not in SECTIONS:
            raise InputError(f"--set: unknown section {section!r} (known: {', '.join(SECTIONS)})")
        try:
            value = tomllib.loads(f"value = {text.strip()}")["value"]
        except tomllib.TOMLDecodeError:
            value = text.strip()
        set_field(getattr(self, section), name, value, f"--set {key.strip()}")

    def validate(self, source: str = "<config>") -> None:
        from easyfirst.tasks import TASKS

        m, t, d = self.model, self.train, self.data
        m.validate(source)
        if d.task not in TASKS:
            raise InputError(f"task must be one of {', '.join(TASKS)}, not {d.task!r}", source)
        TASKS[d.task].validate(d, source)
        try:
            "".encode(d.encoding)
        except LookupError:
            raise InputError(f"unknown encoding {d.encoding!r}", source) from None
        if t.workers is not None and t.workers < 1:
            raise InputError("workers must be >= 1 (or unset: one per core)", source)
        if t.checkpoint_every < 0:
            raise InputError("checkpoint_every must be >= 0", source)
        for name in ("epochs", "batch_size", "eval_batch_size"):
            if getattr(t, name) < 1:
                raise InputError(f"{name} must be >= 1", source)
        if t.optimizer not in OPTIMIZERS:
            raise InputError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, not {t.optimizer!r}", source)
        if t.embedding_lr is not None and not (math.isfinite(t.embedding_lr) and t.embedding_lr >= 0):
            raise InputError("embedding_lr must be a finite number >= 0 (or unset: lr)", source)
        if t.reduction not in REDUCTIONS:
            raise InputError(f"reduction must be one of {', '.join(REDUCTIONS)}, not {t.reduction!r}", source)
        self.loss.validate(m.crf, source)


def set_field(target: Any, key: str, value: Any, source: str) -> None:
    """Set ``target.key = value`` after checking ``value`` against the field's annotation."""
    hints = typing.get_type_hints(type(target))
    if key not in hints:
        raise InputError(f"unknown key {key!r} (known: {', '.join(hints)})", source)
    if typing.get_origin(hints[key]) is dict:  # a table of tag = number
        numbers = isinstance(value, dict) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value.values()
        )
        if not numbers:
            raise InputError(f"{key} must be a table of numbers (TAG = weight)", source)
        setattr(target, key, {str(k): float(v) for k, v in value.items()})
        return
    allowed = typing.get_args(hints[key]) or (hints[key],)
    if isinstance(value, int) and not isinstance(value, bool) and float in allowed and int not in allowed:
        value = float(value)
    if not any(isinstance(value, kind) and not (kind is int and isinstance(value, bool)) for kind in allowed):
        names = " or ".join("unset" if kind is type(None) else kind.__name__ for kind in allowed)
        raise InputError(f"{key} must be {names}, not {type(value).__name__}", source)
    setattr(target, key, value)
