"""Typed configuration, loaded from TOML and overridden from the command line.

A config file has the tables ``[data]``, ``[model]``, ``[loss]`` and ``[train]``, whose keys are the
fields of :class:`DataConfig`, :class:`ModelConfig`, :class:`LossConfig` and :class:`TrainConfig`; a
missing table or key keeps its default (so model folders written before a key existed load as they
were trained). Unknown keys are errors, so a typo
in a config file is reported rather than silently ignored. ``configs/pos.toml`` holds the paper's §5.1
values, which are also the defaults here.
"""

from __future__ import annotations

import math
import typing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import tomllib

from easyfirst.errors import InputError

MODELS = ("nef-f", "nef-s", "bilstm")
# --loss names and their α (entmax takes α from alpha)
LOSS_ALPHA = {"softmax": 1.0, "entmax15": 1.5, "sparsemax": 2.0, "entmax": None}


@dataclass
class DataConfig:
    task: str = "pos"
    train: str | None = None  # None: the task's default set (see easyfirst.data.datasets)
    dev: str | None = None
    test: str | None = None
    tag_column: str = "upos"  # CoNLL-U column holding the target tags: upos or xpos
    max_train_length: int = 50  # training drops longer sentences (paper §5.1); evaluation never does
    # column files (NER, easyfirst.data.conll): 0-based columns, negative from the end; file encoding
    token_column: int = 0
    label_column: int = -1
    encoding: str = "utf-8"


# config keys added after runs were first saved, with the value that matches how those runs behaved
SAVED_BEFORE = {"model": {"steps_beyond_length": True}}


@dataclass
class ModelConfig:
    model: str = "nef-f"  # nef-f (full-state, Eq. 7), nef-s (single-state, Eq. 4), bilstm (N = 0)
    word_dim: int = 64
    affix_dim: int = 50  # prefix and suffix n-gram embeddings, summed per word (0: none)
    max_affix: int = 4  # n-grams with n <= max_affix
    word_min_freq: int = 2  # training words seen fewer times map to UNK (so UNK gets trained)
    pretrained: str | None = None  # word2vec/GloVe text file to initialise word embeddings
    hidden_dim: int = 50  # BiLSTM units per direction
    window: int = 2  # w in Eq. 1
    attention_dim: int = 50  # D_z in Eq. 2
    sketch_dim: int = 50  # D_s
    sketch_steps: int | None = None  # N; None means N = L (one step per word, per sentence)
    # with N fixed, a sentence shorter than N runs all N steps (a fresh unit of attention budget every L
    # steps); false: min(N, L) steps, N read as the paper's "maximum number of sketch steps" (§5.2)
    steps_beyond_length: bool = True
    attention: str = "csoftmax"  # see easyfirst.ops.attention: csoftmax, csparsemax, softmax, hard, ...
    attention_temperature: float = 1.0  # scores z/T before ρ (learned attentions only)
    coverage_penalty: float = 0.0  # λ: scores z − λβ before ρ (§4; learned attentions only)
    concat: bool = True  # p_i from concat(h_i, s_i^N) (Eq. 6); false: from s_i^N alone (Table 4)
    dropout: float = 0.2  # after the embeddings, after the BiLSTM, before the output layer
    # NER features (easyfirst.data.features), off by default
    case_dim: int = 0  # capitalization-pattern embedding size (0: none)
    lowercase: bool = False  # look words up lower-cased
    word_dropout: float = 0.0  # α: a training word seen c times becomes UNK with probability α/(α+c)
    crf: bool = False  # a linear-chain CRF over the output scores (§5.2) instead of per-word outputs
    bio_constraints: bool | None = None  # CRF: forbid invalid BIO transitions; None: on for BIO tag sets
    # QE features (easyfirst.data.qe), off by default: the aligned source words (averaged; a learned NULL
    # vector when none), and the WMT16 baseline's context (the MT words and aligned source words ±1)
    source_dim: int = 0
    qe_context_dim: int = 0


@dataclass
class LossConfig:
    """The per-word training objective (easyfirst.losses); with ``crf`` the CRF's likelihood replaces it."""

    loss: str = "softmax"  # softmax (α = 1), entmax15 (α = 1.5), sparsemax (α = 2), entmax (α = alpha)
    alpha: float | None = None  # α > 1 for loss = "entmax"; unset for the others (their α is fixed)
    label_smoothing: float = 0.0  # ε: target (1 − ε)·e_y + ε·uniform (Fenchel–Young label smoothing)
    temperature: float = 1.0  # T: training loss T · L(z / T); prediction always uses T = 1
    class_weights: dict[str, float] = field(default_factory=dict)  # tag → weight of its words (default 1)

    @property
    def entmax_alpha(self) -> float:
        """The α of the output mapping and loss: 1 softmax, 1.5 1.5-entmax, 2 sparsemax, other α-entmax."""
        fixed = LOSS_ALPHA.get(self.loss)
        return fixed if fixed is not None else float(self.alpha)


@dataclass
class TrainConfig:
    epochs: int = 20
    optimizer: str = "adagrad"
    lr: float = 0.1
    clip: float = 5.0  # gradient-norm clipping
    batch_size: int = 16  # sentences per update
    eval_batch_size: int = 256
    seed: int = 1
    threads: int = 0  # torch intra-op threads; 0 leaves torch's default
    checkpoint_every: int = 0  # also checkpoint every K updates within an epoch (0: at epoch ends only)


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
        """The built-in defaults of ``task`` (easyfirst.tasks): the POS values with the task's changes."""
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
        from easyfirst.tasks import TASKS

        data = raw.get("data") if isinstance(raw.get("data"), dict) else {}
        if task is not None and data.get("task", task) != task:
            raise InputError(f"this config is for task {data['task']!r}, not {task!r}", source)
        task = data.get("task", task or "pos")
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

    def validate(self, source: str = "<config>") -> None:
        m, t, d = self.model, self.train, self.data
        if m.model not in MODELS:
            raise InputError(f"model must be one of {', '.join(MODELS)}, not {m.model!r}", source)
        from easyfirst.ops.attention import ATTENTIONS

        if m.attention not in ATTENTIONS:
            raise InputError(
                f"attention must be one of {', '.join(sorted(ATTENTIONS))}, not {m.attention!r}", source
            )
        if not (math.isfinite(m.attention_temperature) and m.attention_temperature > 0):
            raise InputError("attention_temperature must be a finite number > 0", source)
        if not (math.isfinite(m.coverage_penalty) and m.coverage_penalty >= 0):
            raise InputError("coverage_penalty must be a finite number >= 0", source)
        learned = ATTENTIONS[m.attention].scores == "attention"
        if (m.attention_temperature != 1 or m.coverage_penalty) and not learned:
            raise InputError(
                f"attention_temperature and coverage_penalty act on learned attention scores; "
                f"{m.attention!r} has none",
                source,
            )
        if m.sketch_steps is not None and m.sketch_steps < 0:
            raise InputError("sketch_steps must be >= 0 (or unset for N = L)", source)
        for name in ("affix_dim", "source_dim", "qe_context_dim"):
            if getattr(m, name) < 0:
                raise InputError(f"{name} must be >= 0", source)
        if not m.concat and not self.decodes:
            raise InputError(
                "concat = false predicts from the sketch alone: it needs sketch steps (N > 0)", source
            )
        if not 0.0 <= m.dropout < 1.0:
            raise InputError("dropout must be in [0, 1)", source)
        from easyfirst.tasks import TASKS

        if d.task not in TASKS:
            raise InputError(f"task must be one of {', '.join(TASKS)}, not {d.task!r}", source)
        if d.task == "pos" and d.tag_column not in ("upos", "xpos"):
            raise InputError("tag_column must be upos or xpos", source)
        if m.case_dim < 0:
            raise InputError("case_dim must be >= 0", source)
        if m.word_dropout < 0:
            raise InputError("word_dropout must be >= 0", source)
        try:
            "".encode(d.encoding)
        except LookupError:
            raise InputError(f"unknown encoding {d.encoding!r}", source) from None
        if t.checkpoint_every < 0:
            raise InputError("checkpoint_every must be >= 0", source)
        for name in ("epochs", "batch_size", "eval_batch_size"):
            if getattr(t, name) < 1:
                raise InputError(f"{name} must be >= 1", source)
        if t.optimizer not in ("adagrad", "adam", "sgd"):
            raise InputError("optimizer must be adagrad, adam or sgd", source)
        validate_loss(self.loss, m.crf, source)

    @property
    def decodes(self) -> bool:
        """Whether the model has a sketch decoder (N != 0 and not the BiLSTM baseline)."""
        return self.model.model != "bilstm" and self.model.sketch_steps != 0


def validate_loss(o: LossConfig, crf: bool, source: str) -> None:
    if o.loss not in LOSS_ALPHA:
        raise InputError(f"loss must be one of {', '.join(LOSS_ALPHA)}, not {o.loss!r}", source)
    fixed = LOSS_ALPHA[o.loss]
    if fixed is None and (o.alpha is None or not o.alpha > 1):
        raise InputError("loss entmax needs alpha > 1 (1.5: entmax15, 2: sparsemax)", source)
    if fixed is not None and o.alpha is not None and o.alpha != fixed:
        raise InputError(f"loss {o.loss} has alpha = {fixed:g}; for another alpha use loss entmax", source)
    if not 0.0 <= o.label_smoothing < 1.0:
        raise InputError("label_smoothing must be in [0, 1)", source)
    if not o.temperature > 0 or o.temperature == float("inf"):
        raise InputError("temperature must be a positive number", source)
    for tag, weight in o.class_weights.items():
        if not 0.0 <= weight < float("inf"):
            raise InputError(f"class weight of {tag!r} must be a non-negative number, not {weight}", source)
    if crf and (o != LossConfig() and o != LossConfig(alpha=1.0)):
        raise InputError(
            "with crf the training loss is the CRF's sequence likelihood: loss, alpha, label_smoothing, "
            "temperature and class_weights apply to per-word outputs only",
            source,
        )


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
