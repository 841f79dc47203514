"""Typed configuration, loaded from TOML and overridden from the command line.

A config file has the tables ``[data]``, ``[model]``, ``[loss]`` and ``[train]``, whose keys are the
fields of :class:`DataConfig`, :class:`ModelConfig` (its parts' fields, flat), :class:`LossConfig` and
:class:`TrainConfig`; a
missing table or key keeps its default (so model folders written before a key existed load as they
were trained). Unknown keys are errors, so a typo in a config file is reported. The defaults are the
paper's §5.1 values with 16 sentences per update; each task changes some (easyfirst.tasks), and
``configs/pos.toml``, ``ner.toml`` and ``qe.toml`` write each task's values out. A run uses its
config resolved once (:meth:`Config.resolved`): read-only, with what its values imply.
"""

from __future__ import annotations

import sys
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from easyfirst.backends import CHOICES
from easyfirst.errors import InputError, suggest
from easyfirst.fields import (
    Freezable,
    Origin,
    any_integer,
    at_least,
    checked,
    encoding,
    flat_fields,
    fraction,
    non_negative,
    one_of,
    positive,
    read_toml,
    set_field,
    toml_lines,
)
from easyfirst.model.settings import LossConfig, ModelConfig
from easyfirst.ops.kinds import KINDS

if typing.TYPE_CHECKING:
    from easyfirst.data.vectors import Vectors

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as a package
    import tomli as tomllib

SECTIONS = ("data", "model", "loss", "train")
REDUCTIONS = ("mean", "sum")
OPTIMIZERS = ("adagrad", "adam", "nadam", "adamw", "sgd")


def task_names() -> list[str]:
    from easyfirst.tasks import TASKS

    return list(TASKS)


@dataclass
class DataConfig(Freezable):
    task: str = field(default="pos", metadata=checked(one_of(lambda: task_names())))
    train: str | None = None
    dev: str | None = None
    test: str | None = None
    tag_column: str = field(default="upos", metadata=checked(one_of(lambda: ["upos", "xpos"])))
    # the paper's 50 (§5.1) is POS's default, where N = L costs O(L²); N = 5 (ner, qe) costs O(5L)
    max_train_length: int = field(default=50, metadata=checked(at_least(0)))
    # column files (NER, easyfirst.data.conll): 0-based columns, negative from the end; file encoding
    token_column: int = field(default=0, metadata=checked(any_integer("a column number")))
    label_column: int = field(default=-1, metadata=checked(any_integer("a column number")))
    encoding: str = field(default="utf-8", metadata=checked(encoding()))
    # the entity tags a model learns (easyfirst.data.schemes): files are read in any scheme, converted to
    # this one for training, and the model's tags are converted back (to the input's scheme when written)
    scheme: str = field(default="bio", metadata=checked(one_of(lambda: ["bio", "bioes"])))


# config keys added after runs were first saved, with the value that matches how those runs behaved
SAVED_BEFORE = {
    "model": {
        "steps_beyond_length": True,
        "pretrained_words": 0,
        "gaps": False,
        "source_tags": False,
        "char_dim": 0,
    }
}

# values of saved runs that name what no longer exists, with what they run as now: backend "fused" (a
# batched torch loop, removed; the compiled path or the reference computes the same function)
SAVED_RENAMED = {("train", "backend"): {"fused": "auto"}}


# the settings that belong to an optimizer (Config.update)
OPTIMIZER_SETTINGS = ("lr", "momentum", "lr_decay")


@dataclass
class TrainConfig(Freezable):
    epochs: int = field(default=20, metadata=checked(at_least(1)))
    optimizer: str = field(default="adagrad", metadata=checked(one_of(lambda: list(OPTIMIZERS))))
    lr: float = field(default=0.1, metadata=checked(positive()))
    momentum: float = field(default=0.0, metadata=checked(fraction()))
    lr_decay: float = field(default=0.0, metadata=checked(non_negative()))
    clip: float = field(default=5.0, metadata=checked(positive(finite=False)))
    patience: int = field(default=0, metadata=checked(at_least(0)))
    # the learning rate of the embedding tables (words, affixes, features); unset: lr, like the rest
    embedding_lr: float | None = field(default=None, metadata=checked(non_negative()))
    # a fine-tuned transformer's learning rate (model.transformer_finetune; the rest train at lr)
    transformer_lr: float = field(default=2e-5, metadata=checked(positive()))
    # MB of a frozen transformer's vectors kept for the sentences seen, so that each is computed once a run
    transformer_cache_mb: int = field(default=2048, metadata=checked(at_least(0)))
    batch_size: int = field(default=16, metadata=checked(at_least(1)))
    # how an update's loss combines its words; "sum" with batch_size = 1 is the paper's own code
    # (configs/pos-reference.toml), where clipping then acts on a sentence's summed gradient
    reduction: str = field(default="mean", metadata=checked(one_of(lambda: list(REDUCTIONS))))
    shuffle: bool = True
    eval_batch_size: int = field(default=256, metadata=checked(at_least(1)))
    seed: int = field(default=1, metadata=checked(at_least(0)))
    workers: int | None = field(default=None, metadata=checked(at_least(1)))
    backend: str = field(default="auto", metadata=checked(one_of(lambda: list(CHOICES))))
    # torch intra-op threads; 0 leaves torch's default (one per core). 1 by default (issue #46): threads
    # that share busy cores spin in OpenMP's barriers (benchmarks/speed/threads.py: 0.27x of their own speed
    # beside a second training), while alone on an idle 2-core machine two threads were 1.6x faster
    threads: int = field(default=1, metadata=checked(at_least(0)))
    checkpoint_every: int = field(default=0, metadata=checked(at_least(0)))
    # the attention temperature annealed over the epochs (easyfirst.training.anneal; issue #26): from anneal_from
    # at epoch 1 to anneal_to at epoch anneal_epochs, then kept; 0: none. Each epoch's is training state
    anneal_epochs: int = field(default=0, metadata=checked(at_least(0)))
    anneal_from: float = field(default=1.0, metadata=checked(positive()))
    anneal_to: float = field(default=0.25, metadata=checked(positive()))
    best_metric: str | None = None
    # easyfirst.training.checkpoints.CheckpointClock (not under torchrun)
    checkpoint_minutes: float = field(default=5.0, metadata=checked(non_negative()))


@dataclass
class Config(Freezable):
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def __post_init__(self) -> None:
        self.origins: dict[str, Origin] = {}  # "section.key" → where its value was given (not a field)

    def to_dict(self) -> dict[str, Any]:
        """The config as its file writes it: section → flat table (``[model]``'s parts' keys flat)."""
        return {section: getattr(self, section).flat() for section in SECTIONS}

    def resolved(self, source: str = "<config>") -> Config:
        """The config a run uses: a read-only copy (FrozenInstanceError on a write) with what the values
        imply (:meth:`imply`), checked (errors name where a value was given, else ``source``)."""
        config = self.thawed()
        config.imply()
        config.validate(source)
        config.freeze()
        return config

    def imply(self) -> None:
        """Set what the values imply, once all are set: a BiLSTM has no sketch steps; with vectors, the
        task's defaults with vectors where not given; an attention without learned scores, temperature 1."""
        from easyfirst.tasks import TASKS

        m, task = self.model, self.data.task  # either may be a name validate refuses
        if task in TASKS:
            self.leave_other_optimizers(TASKS[task].defaults)
            if m.embedder.pretrained:
                self.update(TASKS[task].with_vectors, f"task {task} with vectors", keep_given=True)
        scores = getattr(KINDS.get(m.decoder.attention), "scores", None)
        if not self.given("model.attention_temperature") and scores != "attention":
            m.decoder.attention_temperature = 1.0
        if m.model == "bilstm":
            m.decoder.sketch_steps = 0

    @classmethod
    def for_task(cls, task: str) -> Config:
        """The built-in defaults of ``task`` (easyfirst.tasks): the values here with the task's changes."""
        from easyfirst.tasks import get_task

        config = cls()
        config.data.task = task
        config.update(get_task(task).defaults, f"task {task}")
        return config

    def update(self, tables: dict[str, dict[str, Any]], source: str, keep_given: bool = False) -> None:
        """Set the keys of ``tables`` (section → key → value), each checked against its field; with
        ``keep_given``, only the keys that hold a default (a ``source`` "task …" keeps them defaults),
        and an optimizer's own settings only with it: a table naming SGD does not give its momentum
        and rate to the Adam a user chose."""
        theirs_only = keep_given and self.other_optimizer(tables)  # the table's optimizer settings stay out
        for section, values in tables.items():
            for key, value in values.items():
                if keep_given and self.given(f"{section}.{key}"):
                    continue
                if theirs_only and section == "train" and key in OPTIMIZER_SETTINGS:
                    continue
                self.assign(section, key, value, (f"{source} [{section}]", None))

    def other_optimizer(self, tables: dict[str, dict[str, Any]]) -> bool:
        """Whether an optimizer was given that is not the one ``tables`` (a task's) name."""
        recipe = tables.get("train", {})
        return (
            "optimizer" in recipe
            and bool(self.given("train.optimizer"))
            and self.train.optimizer != recipe["optimizer"]
        )

    def leave_other_optimizers(self, tables: dict[str, dict[str, Any]]) -> None:
        """An optimizer given that is not the one ``tables`` (a task's defaults) name takes none of that
        optimizer's settings: NER's SGD momentum and decay do not go to an Adam chosen with --optimizer;
        what was not given of ``OPTIMIZER_SETTINGS`` is the field's default."""
        if self.other_optimizer(tables):
            plain = TrainConfig()
            for key in OPTIMIZER_SETTINGS:
                if key in tables["train"] and not self.given(f"train.{key}"):
                    setattr(self.train, key, getattr(plain, key))

    @classmethod
    def from_dict(
        cls, raw: dict[str, Any], source: str = "<config>", task: str | None = None, lines: dict | None = None
    ) -> Config:
        """A config from TOML/JSON tables, checked, with what its values imply, writable; keys left out
        take the defaults of its ``[data] task`` (or of ``task``, which must then agree with it; else
        POS). ``lines`` maps (section, key) to the key's line in ``source``, for the errors."""
        from easyfirst.tasks import DEFAULT_TASK

        lines = lines or {}
        data = raw.get("data") if isinstance(raw.get("data"), dict) else {}
        where = (source, lines.get(("data", "task")))
        if task is not None and data.get("task", task) != task:
            raise InputError(f"this config is for task {data['task']!r}, not {task!r}", *where)
        task = data.get("task", task or DEFAULT_TASK)
        if task not in task_names():
            raise InputError(f"data.task must be one of {', '.join(task_names())}, not {task!r}", *where)
        config = cls.for_task(task)  # a writable config, resolved at the end
        for section, value in raw.items():
            if section not in SECTIONS:
                raise InputError(
                    f"unknown section [{section}]{suggest(section, SECTIONS)}",
                    source,
                    lines.get((section, None)),
                )
            if not isinstance(value, dict):
                raise InputError(f"[{section}] must be a table", source, lines.get((section, None)))
            for key, item in value.items():
                config.assign(section, key, item, (source, lines.get((section, key))))
        return config.resolved(source).thawed()

    @classmethod
    def from_saved(cls, raw: dict[str, Any], source: str = "<config>") -> Config:
        """The config of a run folder (its config.json), resolved (read-only). A key the file lacks
        because the run was saved before the key existed takes the behaviour runs had then
        (``SAVED_BEFORE``), not today's default, so an old model tags as it did; a value that names
        what was removed since runs as its replacement (``SAVED_RENAMED``)."""
        for section, keys in SAVED_BEFORE.items():
            table = raw.get(section)
            if isinstance(table, dict):
                for key, value in keys.items():
                    table.setdefault(key, value)
        for (section, key), renamed in SAVED_RENAMED.items():
            table = raw.get(section)
            if isinstance(table, dict) and isinstance(table.get(key), str) and table[key] in renamed:
                table[key] = renamed[table[key]]
        return cls.from_dict(raw, source).resolved(source)

    @classmethod
    def load(cls, path: str | Path, task: str | None = None) -> Config:
        """A TOML config file; every error names the file and, where there is one, the line."""
        raw, text = read_toml(path)
        return cls.from_dict(raw, str(path), task, toml_lines(text))

    def set_dotted(self, assignment: str) -> None:
        """``--set section.key=value``: the value is read as TOML (``3``, ``0.5``, ``true``, ``"x"``,
        ``{BAD = 5}``), a bare word as a string, and checked against the field's type."""
        key, sign, text = assignment.partition("=")
        section, dot, name = key.strip().partition(".")
        if not sign or not dot:
            raise InputError(f"--set takes SECTION.KEY=VALUE (e.g. model.hidden_dim=100), not {assignment!r}")
        if section not in SECTIONS:
            raise InputError(f"--set: unknown section {section!r}{suggest(section, SECTIONS)}")
        try:
            value = tomllib.loads(f"value = {text.strip()}")["value"]
        except tomllib.TOMLDecodeError:
            value = text.strip()
        self.assign(section, name.strip(), value, ("--set", None))

    def assign(self, section: str, key: str, value: Any, origin: Origin) -> None:
        """Set ``section.key`` after checking its type; ``origin`` is where the value was given."""
        set_field(getattr(self, section), key, value, origin, section)
        self.origins[f"{section}.{key}"] = origin

    def validate(self, source: str = "<config>") -> None:
        """Check every field against its rule (easyfirst.fields), each error naming where the value was
        given (``source`` for a value with no other origin), then the rules that tie fields together;
        writes nothing (what values imply: :meth:`resolved`)."""
        for section in SECTIONS:
            target = getattr(self, section)
            for key, (_, f) in flat_fields(type(target)).items():
                rule, value = f.metadata.get("check"), target.get(key)
                if rule is not None and value is not None and not rule.test(value):
                    origin = self.origins.get(f"{section}.{key}", (source, None))
                    raise InputError(f"{section}.{key} must be {rule.says()}, not {value!r}", *origin)
        from easyfirst.tasks import TASKS

        def where(*keys: str) -> Origin:
            return next(filter(None, map(self.given, keys)), (source, None))

        task = TASKS[self.data.task]
        task.format.validate(self.data, source)
        if self.data.scheme not in task.schemes:
            raise InputError(
                f"data.scheme = {self.data.scheme!r}: the {task.name} task learns {' or '.join(task.schemes)}",
                *where("data.scheme"),
            )
        self.model.validate(where)
        if self.model.embedder.transformer_source and "source" not in task.format.extra:
            raise InputError(
                f"model.transformer_source is for QE's source words, not {self.data.task}",
                *where("model.transformer_source"),
            )
        self.loss.validate(self.model.output.crf, where)
        m, t = self.model, self.train
        if t.momentum and t.optimizer != "sgd":
            raise InputError(
                f"train.momentum is SGD's; optimizer {t.optimizer!r} has its own", *where("train.momentum")
            )
        if m.embedder.freeze_vectors and t.optimizer == "adamw":
            raise InputError(
                "model.freeze_vectors: AdamW's weight decay would shrink the fixed vectors; "
                "use adam or nadam",
                *where("model.freeze_vectors", "train.optimizer"),
            )
        if t.anneal_epochs and not (m.decodes and m.decoder.learned):
            raise InputError(
                "train.anneal_epochs anneals learned attention scores; this model has none",
                *where("train.anneal_epochs"),
            )

    def given(self, key: str) -> Origin | None:
        """Where ``section.key`` was given (a config file, --set, a flag), or None where it is a default
        (the task's own or the field's)."""
        origin = self.origins.get(key)
        return origin if origin and not origin[0].startswith("task ") else None

    def follow_vectors(self, vectors: Vectors, size: str = "word_dim") -> list[str]:
        """Set the keys that the pretrained ``vectors`` decide: their table's size (``size``: the words',
        or QE's ``source_dim``) and, for an uncased set of word vectors, lower-cased lookups (a note says
        which other parts of a word keep the case). A value given that disagrees is an error; returns log notes."""
        from easyfirst.tasks import get_task

        m, notes = self.model.embedder, []
        if size == "source_dim" and "source" not in get_task(self.data.task).format.extra:
            at = self.origins.get("model.source_pretrained", ("command line", None))
            raise InputError(f"model.source_pretrained is for QE's source words, not {self.data.task}", *at)
        if getattr(m, size) != vectors.dim and self.given(f"model.{size}"):
            raise InputError(
                f"model.{size} = {getattr(m, size)}, but the vectors {vectors.name} have {vectors.dim} "
                f"dimensions: leave {size} out, the vectors set it",
                *self.given(f"model.{size}"),
            )
        setattr(m, size, vectors.dim)
        if vectors.uncased and size == "word_dim":
            if not m.lowercase and self.given("model.lowercase"):
                raise InputError(
                    f"model.lowercase = false, but the vectors {vectors.name} are uncased: a capitalized word "
                    "would miss its vector; leave lowercase out",
                    *self.given("model.lowercase"),
                )
            m.lowercase = True
            notes.append(vectors.uncased_note(m.spelling()))
        return notes
