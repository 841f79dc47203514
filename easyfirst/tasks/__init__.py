"""The task layer: everything that differs between POS tagging, NER and quality estimation.

A :class:`Task` owns what is particular to one kind of data: how a file (or a set of files) is
recognised and read into sentences, which data set and config values it uses by default, how
predictions are scored, which score chooses the best epoch and how a report is titled, how
``easyfirst tag`` writes a tagged file back, and the tag options only it reads (typed, in its
``TagOptions`` dataclass). Extra per-word inputs (capitalization patterns, aligned source words) are
features switched on by the task's default config (easyfirst.data.features); a task's reader puts what
they need beside the words in ``Sentence.extra``.

Everything else (vocabularies, the model, the training loop, the command line) is shared and asks the
task; no other module branches on a task's name. Adding a task means a module here with a
:class:`Task` subclass, a reader in easyfirst/data/, an entry in ``TASKS`` and a config in configs/.

This module imports no torch, so that ``easyfirst --help`` stays fast.

May import: ``data``, ``metrics``, ``resources`` and the bottom layer (``atomic``, ``errors``); ``config``
sits above the tasks and asks them for their defaults.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

from easyfirst.data.sentence import Sentence
from easyfirst.errors import InputError

DEFAULT_TASK = "pos"  # what `easyfirst train` and a config without [data] task mean
Tags = Sequence[Sequence[str]]
# the writers' predict (easyfirst.tagging.pipeline.predictor over a Tagger): sentences → their tags; with
# batches= (read ahead), their tags; with extras= and heads=True (QE), (tags, {head: tags per sentence})
Predict = Callable[..., Tags]


@dataclass
class NoOptions:
    """A task without options of its own for ``easyfirst tag``."""


class Task:
    """What one task does differently; the defaults fit a task whose data set is one file.

    A subclass's ``read``, ``stream`` and ``write`` are wrapped by :func:`names_task`,
    so that every reader's wrong-kind error names the model's task."""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for method in ("read", "stream", "write"):
            if method in cls.__dict__:
                setattr(cls, method, names_task(cls.__dict__[method]))

    name: ClassVar[str]
    reads_ahead: ClassVar[bool] = False  # whether read_ahead makes what write takes as windows=
    help: ClassVar[str]  # one line, for --help
    dataset: ClassVar[str]  # the default data set (a key of easyfirst.data.datasets.DATASETS)
    metric: ClassVar[str]  # the report key that chooses the best epoch (higher is better)
    metric_label: ClassVar[str]  # its short name in tables
    breakdown: ClassVar[str] = "per_tag"  # the report key of the per-label table (label → P/R/F1/support)
    breakdown_label: ClassVar[str] = "tag"  # what a row of that table is
    columns: ClassVar[tuple[tuple[str, str], ...]] = ()  # more (report key, label) in per-epoch tables
    selectable: ClassVar[tuple[str, ...]] = ()  # more report keys that [train] best_metric may name
    # config changes from the built-in values of easyfirst.config (the paper's §5.1 POS values)
    defaults: ClassVar[dict[str, dict[str, Any]]] = {}
    # `easyfirst train --easy-first`: the config changes of the task's recipe for sharp (easy-first)
    # attention, from the attention study (docs/results.md); empty: none measured for the task
    easy_first: ClassVar[dict[str, dict[str, Any]]] = {}
    # changes to the defaults when pretrained word vectors are given (model.pretrained), for the keys not
    # given (easyfirst.config.Config.validate applies them)
    with_vectors: ClassVar[dict[str, dict[str, Any]]] = {}
    # the tag of words outside any entity ("O"): set, `analyze` says where the first focus goes against
    # the entities (easyfirst.viz.analysis.EntityFocus); None: the task tags no entities
    outside: ClassVar[str | None] = None
    input_kind: ClassVar[str]  # what its files are, for help and errors ("CoNLL-U files")
    # why `plot --text` cannot give this task a sentence (None: it can)
    refuses_text: ClassVar[str | None] = None
    # what `easyfirst tag` says when the input is not one this task claims (None: any file will do)
    unclaimed_input: ClassVar[str | None] = None
    TagOptions: ClassVar[type] = NoOptions  # the options of `easyfirst tag` that only this task reads
    # the tagging schemes a model of this task may learn ([data] scheme; easyfirst.data.schemes)
    schemes: ClassVar[tuple[str, ...]] = ("bio",)

    # reading

    def exists(self, path: str | Path) -> bool:
        """Whether ``path`` names an input of this task (a file here; a prefix for QE)."""
        return Path(path).is_file()

    def check_exists(self, path: str | Path, split: str) -> None:
        """Fail unless the ``split`` (train, dev, test) input ``path`` exists."""
        if not Path(path).is_file():
            raise InputError(f"{split} file not found", path)

    def read(self, path: str | Path, data) -> list[Sentence]:
        """The sentences of ``path`` with their gold tags; ``data`` is the run's DataConfig."""
        raise NotImplementedError

    def stream(self, source: BinaryIO, data, name: str | None) -> Iterator[Sentence]:
        """Sentences one at a time from an open stream (formats that need the whole file read it all)."""
        return iter(self.read(source, data))

    def claim_input(self, input: str | None, options: dict[str, Any]) -> Any:
        """The parsed input of `easyfirst tag` when ``input`` (and the tag ``options``) can only be meant
        for this task, else None; a task whose input is one file or stdin claims nothing."""
        return None

    def validate(self, data, source: str) -> None:
        """Check the task's own ``[data]`` keys."""

    def text_column(self, data) -> str | None:
        """Where the tags of plain text go in the CoNLL-U written for it (easyfirst.data.text):
        ``upos``, ``xpos`` or ``misc:KEY``; None when this task cannot tag plain text."""
        return "upos"

    def configure(self, data, options) -> None:
        """Apply tag options that change how files are read (e.g. their encoding) to ``data``."""

    # training

    def prepare(self, config, sentences: Sequence[Sentence]) -> None:
        """Settle the config values that depend on the training ``sentences`` before the model is built.
        Only QE has output heads beside the word tags (``[model] gaps``, ``source_tags``)."""
        for key in ("gaps", "source_tags"):
            if getattr(config.model, key):
                raise InputError(f"[model] {key}: only for the qe task, not {self.name}")

    def selection(self, config) -> tuple[str, str]:
        """The report key that chooses the best epoch (``[train] best_metric``, else ``metric``) and its
        label in the log."""
        key = config.train.best_metric or self.metric
        return key, self.metric_label if key == self.metric else key

    def report_columns(self, config) -> tuple[tuple[str, str], ...]:
        """The (report key, label) pairs of the per-epoch log beside the selecting score."""
        return self.columns

    def targets(self, sentence: Sentence) -> dict[str, list[str]] | None:
        """Gold tags beside the word tags that the model trains on (QE: gaps, source words)."""
        return None

    def score_heads(self, gold: Sequence[Sentence], predicted: Tags, heads: dict[str, list]) -> dict:
        """The report of the model's other outputs (QE: gap and source tags) against ``gold``."""
        return {}

    # writing and scoring

    def write(
        self,
        source,
        out: BinaryIO,
        predict: Predict,
        data,
        options,
        *,
        name: str,
        output: Path | None = None,
    ) -> int:
        """Write ``source`` tagged by ``predict`` (:data:`Predict`: easyfirst.tagging.pipeline.predictor
        over a Tagger, its batch size bound) to ``out`` (which becomes the file ``output``, None for stdout); returns the number of
        sentences. A file that streams is read and tagged a window (easyfirst.data.files.TAG_WINDOW) of
        sentences at a time."""
        raise NotImplementedError

    def read_ahead(
        self, source: BinaryIO, folder: Path, tag_column: str, name: str, batch_size: int
    ) -> Iterator:
        """What :meth:`write` can take as ``windows=``, made from ``source`` (read for ``tag_column``)
        and the vocabularies of the model in ``folder`` without torch, in batches of ``batch_size``, by a
        process that reads ahead while the model loads (easyfirst.tagging.readahead); for a task whose
        ``reads_ahead``."""
        raise NotImplementedError

    def score(self, gold: Tags, predicted: Tags) -> dict:
        """The report of ``predicted`` against ``gold``: fractions, with ``metric`` and ``breakdown``."""
        raise NotImplementedError

    def title(self, name: str, report: dict) -> str:
        """The headline of `easyfirst evaluate`."""
        return f"{name}: accuracy {100 * report['accuracy']:.2f}% over {report['tokens']:,} words"

    def known_labels(self, tags: Sequence[str]) -> set[str]:
        """The rows of the breakdown a model with these output tags can predict."""
        return set(tags)

    def tag_options(self, given: dict[str, Any]) -> Any:
        """This task's ``TagOptions`` from the tag command's values; an option of another task that was
        given is an error naming the task it belongs to."""
        own = {f.name for f in fields(self.TagOptions)}
        for key, value in given.items():
            owners = [t for t in TASKS.values() if key in {f.name for f in fields(t.TagOptions)}]
            default = next(f.default for f in fields(owners[0].TagOptions) if f.name == key)
            if key not in own and value != default:  # --no-gaps is given too, where gaps default to None
                flag = "--" + key.replace("_", "-")
                raise InputError(
                    f"{flag}: only for {owners[0].input_kind} ({' and '.join(t.name for t in owners)} models); "
                    f"this is a {self.name} model"
                )
        return self.TagOptions(**{k: v for k, v in given.items() if k in own})


def names_task(method: Callable) -> Callable:
    """Wrap a task's reading or writing method so that a file of the wrong kind says which model reads
    what ("this is an ner model, which reads CoNLL column files"; see easyfirst.data.detect). A
    method that returns an iterator (``stream``) is wrapped as it is consumed."""
    from easyfirst.data.detect import WrongKind

    def renamed(items: Iterator, task: str) -> Iterator:
        try:
            yield from items
        except WrongKind as error:
            raise error.for_task(task) from None

    @functools.wraps(method)
    def wrapper(self: Task, *args, **kwargs):
        try:
            result = method(self, *args, **kwargs)
        except WrongKind as error:
            raise error.for_task(self.name) from None
        return renamed(result, self.name) if isinstance(result, Iterator) else result

    return wrapper


def _registry() -> dict[str, Task]:
    from easyfirst.tasks.ner import NER
    from easyfirst.tasks.pos import POS
    from easyfirst.tasks.qe import QE

    return {task.name: task for task in (POS(), NER(), QE())}


TASKS: dict[str, Task] = _registry()


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise InputError(f"unknown task {name!r} (known: {', '.join(TASKS)})") from None
