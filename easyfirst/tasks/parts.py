"""The two parts a task is made of (easyfirst.tasks.Task): its :class:`Format`, how its inputs are found,
read and written back, and its :class:`Scoring`, how its predictions are scored and the best epoch
chosen. Each is a class whose defaults fit the common case (one file per split; per-word accuracy); a
task's module subclasses what differs.

This module imports no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, Generic, TypeVar

from easyfirst.data.outputs import OutputHead
from easyfirst.errors import InputError

Tags = Sequence[Sequence[str]]
# the writers' predict (easyfirst.tagging.pipeline.predictor over a Tagger): sentences → their tags; with
# batches= (read ahead), their tags; with extras= and heads=True (QE), (tags, {head: tags per sentence})
Predict = Callable[..., Tags]
S = TypeVar("S")  # the sentence type a format reads (easyfirst.data.sentence.Sentence, QESentence)


@dataclass
class NoOptions:
    """A format without options of its own for ``easyfirst tag``."""


class Format(Generic[S]):
    """How a task's inputs are recognised, read into sentences of type ``S`` (with gold tags and, in
    ``extra``, the inputs beside the words that its features read) and written back tagged.

    A reader raises easyfirst.data.detect.WrongKind for a file of another format; the task that uses
    the format turns it into an error that names the task (easyfirst.tasks.Task.read)."""

    input_kind: ClassVar[str] = "files"  # what its files are, for help and errors ("CoNLL-U files")
    reads_ahead: ClassVar[bool] = False  # whether read_ahead makes what write takes as windows=
    # why `plot --text` cannot give a model of this format a sentence (None: it can)
    refuses_text: ClassVar[str | None] = None
    # what `easyfirst tag` says when the input is not one this format claims (None: any file will do)
    unclaimed_input: ClassVar[str | None] = None
    TagOptions: ClassVar[type] = NoOptions  # the options of `easyfirst tag` that only this format reads
    extra: ClassVar[tuple[str, ...]] = ()  # the keys its reader puts in a sentence's extra (QE: source)

    def exists(self, path: str | Path) -> bool:
        """Whether ``path`` names an input of this format (a file here; a prefix for QE)."""
        return Path(path).is_file()

    def check_exists(self, path: str | Path, split: str) -> None:
        """Fail unless the ``split`` (train, dev, test) input ``path`` exists."""
        if not Path(path).is_file():
            raise InputError(f"{split} file not found", path)

    def read(self, path: str | Path | BinaryIO, data) -> list[S]:
        """The sentences of ``path`` with their gold tags; ``data`` is the run's DataConfig."""
        raise NotImplementedError

    def stream(self, source: BinaryIO, data, name: str | None) -> Iterator[S]:
        """Sentences one at a time from an open stream (formats that need the whole file read it all)."""
        return iter(self.read(source, data))

    def claim_input(self, input: str | None, options: dict[str, Any]) -> Any:
        """The parsed input of `easyfirst tag` when ``input`` (and the tag ``options``) can only be meant
        for this format, else None; a format whose input is one file or stdin claims nothing."""
        return None

    def validate(self, data, source: str) -> None:
        """Check the format's own ``[data]`` keys."""

    def text_column(self, data) -> str | None:
        """Where the tags of plain text go in the CoNLL-U written for it (easyfirst.data.text):
        ``upos``, ``xpos`` or ``misc:KEY``; None when this format's models cannot tag plain text."""
        return "upos"

    def tag_set(self, data) -> str | None:
        """The name of the tag set read (``UPOS``), for the model card; None: no name."""
        return None

    def configure(self, data, options) -> None:
        """Apply tag options that change how files are read (e.g. their encoding) to ``data``."""

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
        """Write ``source`` tagged by ``predict`` (:meth:`easyfirst.api.Tagger.tag`, its batch size
        bound) to ``out`` (which becomes the file ``output``, None for stdout); returns the number of
        sentences. A file that streams is read and tagged a window (easyfirst.data.files.TAG_WINDOW) of
        sentences at a time."""
        raise NotImplementedError

    def read_ahead(
        self, source: BinaryIO, folder: Path, tag_column: str, name: str, batch_size: int
    ) -> Iterator:
        """What :meth:`write` can take as ``windows=``, made from ``source`` (read for ``tag_column``)
        and the vocabularies of the model in ``folder`` without torch, in batches of ``batch_size``, by a
        process that reads ahead while the model loads (easyfirst.tagging.readahead); for a format whose
        ``reads_ahead``."""
        raise NotImplementedError


class Scoring:
    """How a task's predictions are scored and reported, and which score chooses the best epoch; as it
    is, per-word accuracy with a per-tag table (POS)."""

    metric: ClassVar[str] = "accuracy"  # the report key that chooses the best epoch (higher is better)
    metric_label: ClassVar[str] = "acc"  # its short name in tables
    breakdown: ClassVar[str] = "per_tag"  # the report key of the per-label table (label → P/R/F1/support)
    breakdown_label: ClassVar[str] = "tag"  # what a row of that table is
    columns: ClassVar[tuple[tuple[str, str], ...]] = ()  # more (report key, label) in per-epoch tables
    selectable: ClassVar[tuple[str, ...]] = ()  # more report keys that [train] best_metric may name
    # the tag of words outside any entity ("O"): set, `analyze` says where the first focus goes against
    # the entities (easyfirst.viz.analysis.EntityFocus); None: the task tags no entities
    outside: ClassVar[str | None] = None

    def score(self, gold: Tags, predicted: Tags) -> dict:
        """The report of ``predicted`` against ``gold``: fractions, with ``metric`` and ``breakdown``."""
        from easyfirst.metrics import tag_report

        return tag_report(gold, predicted)

    def score_outputs(
        self,
        gold_words: Tags,
        predicted_words: Tags,
        gold: dict[str, Tags],
        predicted: dict[str, Tags],
        heads: Sequence[OutputHead],
    ) -> dict:
        """The report of the extra outputs (easyfirst.data.outputs): ``gold`` and ``predicted`` map a
        head's name to its tags per sentence, for the heads both sides have; here each head's accuracy
        (``NAME_accuracy``)."""
        report = {}
        for name in gold.keys() & predicted.keys():
            pairs = [
                g == p
                for gs, ps in zip(gold[name], predicted[name], strict=True)
                for g, p in zip(gs, ps, strict=True)
            ]
            report[f"{name}_accuracy"] = sum(pairs) / len(pairs) if pairs else 0.0
        return report

    def title(self, name: str, report: dict) -> str:
        """The headline of `easyfirst evaluate`."""
        return f"{name}: accuracy {100 * report['accuracy']:.2f}% over {report['tokens']:,} words"

    def known_labels(self, tags: Sequence[str]) -> set[str]:
        """The rows of the breakdown a model with these output tags can predict."""
        return set(tags)

    def selection(self, config) -> tuple[str, str]:
        """The report key that chooses the best epoch (``[train] best_metric``, else ``metric``) and its
        label in the log."""
        key = config.train.best_metric or self.metric
        return key, self.metric_label if key == self.metric else key

    def report_columns(self, config) -> tuple[tuple[str, str], ...]:
        """The (report key, label) pairs of the per-epoch log beside the selecting score."""
        return self.columns
