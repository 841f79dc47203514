"""Typed configuration, loaded from TOML and overridden from the command line.

A config file has the tables ``[data]``, ``[model]``, ``[loss]`` and ``[train]``, whose keys are the
fields of :class:`DataConfig`, :class:`ModelConfig`, :class:`LossConfig` and :class:`TrainConfig`; a
missing table or key keeps its default (so model folders written before a key existed load as they
were trained). Unknown keys are errors, so a typo in a config file is reported. The defaults are the
paper's §5.1 values with 16 sentences per update; each task changes some (easyfirst.tasks), and
``configs/pos.toml``, ``ner.toml`` and ``qe.toml`` write each task's values out. A run uses its
config resolved once (:meth:`Config.resolved`): read-only, with what its values imply.
"""

from __future__ import annotations

import sys
import typing
from dataclasses import asdict, dataclass, field, fields
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
    fraction,
    non_negative,
    one_of,
    option,
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
    train: str | None = field(
        default=None, metadata=option("Training file (default: the task's data set).", metavar="PATH")
    )
    dev: str | None = field(
        default=None, metadata=option("Dev file, for choosing the best epoch.", metavar="PATH")
    )
    test: str | None = field(
        default=None, metadata=option("Test file, scored once at the end.", metavar="PATH")
    )
    tag_column: str = field(
        default="upos",
        metadata=option("CoNLL-U column to learn: upos or xpos.", choices=lambda: ["upos", "xpos"]),
    )
    # the paper's 50 (§5.1) is POS's default, where N = L costs O(L²); N = 5 (ner, qe) costs O(5L)
    max_train_length: int = field(
        default=50,
        metadata=option(
            "Training drops sentences longer than this many words (0: keeps all); evaluation never does.",
            check=at_least(0),
            metavar="L",
            show=lambda value: "none" if value == 0 else str(value),
        ),
    )
    # column files (NER, easyfirst.data.conll): 0-based columns, negative from the end; file encoding
    token_column: int = field(default=0, metadata=checked(any_integer("a column number")))
    label_column: int = field(default=-1, metadata=checked(any_integer("a column number")))
    encoding: str = field(
        default="utf-8",
        metadata=option(
            "Encoding of column files (ner; the original CoNLL-2002/2003 files: latin-1).", check=encoding()
        ),
    )
    # the entity tags a model learns (easyfirst.data.schemes): files are read in any scheme, converted to
    # this one for training, and the model's tags are converted back (to the input's scheme when written)
    scheme: str = field(
        default="bio",
        metadata=option(
            "The entity tagging scheme an NER model learns, bio or bioes (IOBES); files are read in any "
            "scheme and tagged in the input's.",
            choices=lambda: ["bio", "bioes"],
        ),
    )


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


@dataclass
class TrainConfig(Freezable):
    epochs: int = field(default=20, metadata=option("Training epochs.", check=at_least(1)))
    optimizer: str = field(
        default="adagrad",
        metadata=option(
            "adagrad (the paper's), adam, nadam, adamw, or sgd (with --momentum).",
            choices=lambda: list(OPTIMIZERS),
        ),
    )
    lr: float = field(default=0.1, metadata=option("Learning rate.", check=positive()))
    momentum: float = field(
        default=0.0, metadata=option("SGD's momentum (0: none).", check=fraction(), metavar="M")
    )
    lr_decay: float = field(
        default=0.0,
        metadata=option(
            "Epoch e trains at lr / (1 + D·(e - 1)) (0: a constant rate).", check=non_negative(), metavar="D"
        ),
    )
    clip: float = field(
        default=5.0,
        metadata=option(
            "Rescale the gradient to this global norm when it is larger (inf: never).",
            check=positive(finite=False),
            metavar="NORM",
        ),
    )
    patience: int = field(
        default=0,
        metadata=option(
            "Stop when the dev score has not improved for P epochs (0: train all --epochs).",
            check=at_least(0),
            metavar="P",
        ),
    )
    # the learning rate of the embedding tables (words, affixes, features); unset: lr, like the rest
    embedding_lr: float | None = field(default=None, metadata=checked(non_negative()))
    batch_size: int = field(default=16, metadata=option("Sentences per update.", check=at_least(1)))
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
    eval_batch_size: int = field(default=256, metadata=checked(at_least(1)))
    seed: int = field(default=1, metadata=option("Random seed.", check=at_least(0)))
    workers: int | None = field(
        default=None,
        metadata=option(
            "Processes that train one shared model without locks (Hogwild), one sentence per update on "
            "the CPU only; default: one per core (at most 8, one per 500 training sentences); 1: one "
            "process, repeatable bit for bit.",
            check=at_least(1),
            metavar="K",
            show=lambda value: "one per core" if value is None else str(value),
        ),
    )
    backend: str = field(
        default="auto",
        metadata=option(
            "Force a backend (for debugging and benchmarks): numba, numpy (one sentence on the CPU), "
            "fused (csoftmax batches) or reference (the model itself), which runs whatever the forced "
            "one does not support; auto: the fastest that supports each batch.",
            choices=lambda: list(CHOICES),
        ),
    )
    # torch intra-op threads; 0 leaves torch's default (one per core). 1 by default (issue #46): threads
    # that share busy cores spin in OpenMP's barriers (benchmarks/threads.py: 0.27x of their own speed
    # beside a second training), while alone on an idle 2-core machine two threads were 1.6x faster
    threads: int = field(
        default=1,
        metadata=option(
            "CPU threads for torch in this training process (0: torch's choice, one per core). 1 by "
            "default, since more spin when other work shares the cores; on a machine of your own, "
            "0 is faster (docs/training.md, Threads).",
            check=at_least(0),
            show=lambda v: "torch's choice" if not v else str(v),
        ),
    )
    checkpoint_every: int = field(
        default=0,
        metadata=option(
            "Also checkpoint every K updates (0: at epoch ends only).", check=at_least(0), metavar="K"
        ),
    )
    # the attention temperature annealed over the epochs (easyfirst.training.anneal; issue #26): from anneal_from
    # at epoch 1 to anneal_to at epoch anneal_epochs, then kept; 0: none. Each epoch's is training state
    anneal_epochs: int = field(
        default=0,
        metadata=option(
            "Anneal the attention temperature over the first E epochs, geometrically from --anneal-from "
            "to --anneal-to, then keep it (0: no annealing, --attention-temperature throughout).",
            check=at_least(0),
            metavar="E",
        ),
    )
    anneal_from: float = field(
        default=1.0,
        metadata=option(
            "The attention temperature of epoch 1 when annealing.", check=positive(), metavar="T"
        ),
    )
    anneal_to: float = field(
        default=0.25,
        metadata=option(
            "The attention temperature reached at epoch E when annealing.", check=positive(), metavar="T"
        ),
    )
    best_metric: str | None = field(
        default=None,
        metadata=option(
            "The dev score that chooses the best epoch, a metrics.json key (qe: f1_mult, mcc, "
            "target_f1_mult, target_mcc, gaps_f1_mult, source_f1_mult, ...).",
            metavar="KEY",
            show=lambda value: "the task's (qe with gaps: target_f1_mult)" if value is None else value,
        ),
    )
    checkpoint_minutes: float = field(  # easyfirst.training.checkpoints.CheckpointClock (not under torchrun)
        default=5.0,
        metadata=option(
            "Also checkpoint every M minutes of training (0: off).", check=non_negative(), metavar="M"
        ),
    )


@dataclass
class Config(Freezable):
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def __post_init__(self) -> None:
        self.origins: dict[str, Origin] = {}  # "section.key" → where its value was given (not a field)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

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
        if m.pretrained and task in TASKS:
            self.update(TASKS[task].with_vectors, f"task {task} with vectors", keep_given=True)
        scores = getattr(KINDS.get(m.attention), "scores", None)
        if not self.given("model.attention_temperature") and scores != "attention":
            m.attention_temperature = 1.0
        if m.model == "bilstm":
            m.sketch_steps = 0

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
        ``keep_given``, only the keys that hold a default (a ``source`` "task …" keeps them defaults)."""
        for section, values in tables.items():
            for key, value in values.items():
                if not (keep_given and self.given(f"{section}.{key}")):
                    self.assign(section, key, value, (f"{source} [{section}]", None))

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
        (``SAVED_BEFORE``), not today's default, so an old model tags as it did."""
        for section, keys in SAVED_BEFORE.items():
            table = raw.get(section)
            if isinstance(table, dict):
                for key, value in keys.items():
                    table.setdefault(key, value)
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
            for f in fields(target):
                rule, value = f.metadata.get("check"), getattr(target, f.name)
                if rule is not None and value is not None and not rule.test(value):
                    origin = self.origins.get(f"{section}.{f.name}", (source, None))
                    raise InputError(f"{section}.{f.name} must be {rule.says()}, not {value!r}", *origin)
        from easyfirst.tasks import TASKS

        def where(*keys: str) -> Origin:
            return next(filter(None, map(self.given, keys)), (source, None))

        task = TASKS[self.data.task]
        task.validate(self.data, source)
        if self.data.scheme not in task.schemes:
            raise InputError(
                f"data.scheme = {self.data.scheme!r}: the {task.name} task learns {' or '.join(task.schemes)}",
                *where("data.scheme"),
            )
        self.model.validate(where)
        self.loss.validate(self.model.crf, where)
        m, t = self.model, self.train
        if t.momentum and t.optimizer != "sgd":
            raise InputError(
                f"train.momentum is SGD's; optimizer {t.optimizer!r} has its own", *where("train.momentum")
            )
        if m.freeze_vectors and t.optimizer == "adamw":
            raise InputError(
                "model.freeze_vectors: AdamW's weight decay would shrink the fixed vectors; "
                "use adam or nadam",
                *where("model.freeze_vectors", "train.optimizer"),
            )
        if t.anneal_epochs and not (m.decodes and KINDS[m.attention].scores == "attention"):
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
        m, notes = self.model, []
        if size == "source_dim" and self.data.task != "qe":
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
