"""The task layer: everything that differs between POS tagging, NER and quality estimation.

A :class:`Task` is two parts and its defaults: a :class:`~easyfirst.tasks.parts.Format`, how its inputs
are recognised, read into sentences and written back tagged (with the tag options only it reads, typed
in its ``TagOptions`` dataclass), and a :class:`~easyfirst.tasks.parts.Scoring`, how predictions are
scored, which score chooses the best epoch and how a report is titled; beside them its name, its data
set, its config values and the extra outputs it predicts beside the word tags (easyfirst.data.outputs:
QE's gap and source tags). Extra per-word inputs (capitalization patterns, aligned source words) are
features switched on by the task's default config (easyfirst.data.features); a format's reader puts what
they need beside the words in ``Sentence.extra``.

Everything else (vocabularies, the model, the training loop, the command line) is shared and asks the
task; no other module branches on a task's name. Adding a task means a module here that builds a
:class:`Task` from a format and a scoring (new or existing), a reader in easyfirst/data/, an entry in
:func:`_registry` and a config in configs/.

This module imports no torch, so that ``easyfirst --help`` stays fast.

May import: ``data``, ``metrics``, ``resources`` and the bottom layer (``atomic``, ``errors``); ``config``
sits above the tasks and asks them for their defaults.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, BinaryIO

from easyfirst.data.outputs import OutputHead, gold_outputs
from easyfirst.errors import InputError
from easyfirst.tasks.parts import Format, NoOptions, Predict, Scoring, Tags

DEFAULT_TASK = "pos"  # what `easyfirst train` and a config without [data] task mean
__all__ = ["DEFAULT_TASK", "TASKS", "Format", "NoOptions", "Predict", "Scoring", "Tags", "Task", "get_task"]


@dataclass(frozen=True)
class Task:
    """One task: its name and help, its two parts, its extra outputs and its config values."""

    name: str  # the registry key: --task NAME, [data] task
    help: str  # one line, for --help
    summary: str  # what it is in a few words, for the model card ("part-of-speech tagging (CoNLL-U)")
    dataset: str  # the default data set (a key of easyfirst.data.datasets.DATASETS)
    format: Format
    scoring: Scoring
    outputs: tuple[OutputHead, ...] = ()  # what it predicts beside the word tags (easyfirst.data.outputs)
    # config changes from the built-in values of easyfirst.config (the paper's §5.1 POS values)
    defaults: dict[str, dict[str, Any]] = field(default_factory=dict)
    # `easyfirst train --easy-first`: the config changes of the task's recipe for sharp (easy-first)
    # attention, from the attention study (docs/studies/results.md); empty: none measured for the task; and what
    # `train --help` says of it after the changes
    easy_first: dict[str, dict[str, Any]] = field(default_factory=dict)
    easy_first_note: str = ""
    # changes to the defaults when pretrained word vectors are given (model.pretrained), for the keys not
    # given (easyfirst.config.Config.validate applies them)
    with_vectors: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the tagging schemes a model of this task may learn ([data] scheme; easyfirst.data.schemes)
    schemes: tuple[str, ...] = ("bio",)

    # reading and writing: the format's, with a file of the wrong kind named in the task's words ("this
    # is an ner model, which reads CoNLL column files"; easyfirst.data.detect.WrongKind.for_task)

    def read(self, path: str | Path | BinaryIO, data) -> list:
        """The format's sentences of ``path``, with their gold tags."""
        with self._named():
            return self.format.read(path, data)

    def stream(self, source: BinaryIO, data, name: str | None) -> Iterator:
        """The format's sentences of an open stream, one at a time."""
        with self._named():
            sentences = self.format.stream(source, data, name)
        return self._renamed(sentences)

    def write(self, source, out: BinaryIO, predict: Predict, data, options, **keywords) -> int:
        """The format's writer (easyfirst.tasks.parts.Format.write)."""
        with self._named():
            return self.format.write(source, out, predict, data, options, **keywords)

    def read_ahead(self, source: BinaryIO, folder: Path, tag_column: str, name: str, batch_size: int):
        """The format's read-ahead (easyfirst.tasks.parts.Format.read_ahead)."""
        with self._named():
            windows = self.format.read_ahead(source, folder, tag_column, name, batch_size)
        return self._renamed(windows)

    def claim_input(self, input: str | None, options: dict[str, Any]) -> Any:
        return self.format.claim_input(input, options)

    def exists(self, path: str | Path) -> bool:
        return self.format.exists(path)

    def check_exists(self, path: str | Path, split: str) -> None:
        self.format.check_exists(path, split)

    def _named(self):
        return _named_errors(self.name)

    def _renamed(self, items: Iterator) -> Iterator:
        with self._named():
            yield from items

    # training

    def prepare(self, config, sentences: Sequence) -> None:
        """Settle the config values that depend on the training ``sentences`` before the model is built:
        the switches of the extra outputs left unset (on when the sentences have their gold tags; an
        aligned head also needs its feature on), and the tags in ``[data] scheme``. Asking for a head the
        data cannot train, or one of another task, is an error."""
        out, e = config.model.output, config.model.embedder  # the heads' switches, the features' sizes
        own = {head.switch for head in self.outputs}
        for head in (h for task in TASKS.values() for h in task.outputs if h.switch and h.switch not in own):
            if getattr(out, head.switch):
                raise InputError(f"[model] {head.switch}: only for the {_owner(head)} task, not {self.name}")
        for head in self.outputs:
            if head.switch is None:
                continue
            found = any(s.words and head.name in gold_outputs([head], s) for s in sentences)
            if getattr(out, head.switch) is None:
                setattr(out, head.switch, found and (head.aligned is None or _feature_on(e, head.aligned)))
            elif getattr(out, head.switch) and not found:
                raise InputError(
                    f"[model] {head.switch} = true, but the training data has no {head.gold_from}",
                    config.data.train,
                )
            if head.aligned and getattr(out, head.switch) and not _feature_on(e, head.aligned):
                key = _feature_key(head.aligned)
                raise InputError(
                    f"{head.what} are predicted from the embeddings of the feature {head.aligned}: they need "
                    f"{key} > 0"
                )
        if config.data.scheme != "bio":  # every reader gives BIO; the model's tags are read back as BIO
            from easyfirst.data.schemes import convert

            for sentence in sentences:
                sentence.tags = convert(sentence.tags, "bio", config.data.scheme)

    def targets(self, sentence) -> dict[str, list[str]]:
        """The gold tags of the extra outputs that ``sentence`` has, for training (name → tags)."""
        return gold_outputs(self.outputs, sentence)

    def score_outputs(self, gold: Sequence, predicted: Tags, heads: dict[str, list]) -> dict:
        """The scoring's report of the extra outputs ``heads`` (name → tags per sentence) against the
        gold ``sentences``, for the heads that every gold sentence has."""
        known = {}
        for head in self.outputs:
            tags = [head.gold(s) for s in gold]
            if tags and all(t is not None for t in tags):
                known[head.name] = tags
        return self.scoring.score_outputs([s.tags for s in gold], predicted, known, heads, self.outputs)

    # tagging

    def tag_options(self, given: dict[str, Any]) -> Any:
        """This task's ``TagOptions`` from the tag command's values; an option of another task that was
        given is an error naming the task it belongs to."""
        options = self.format.TagOptions
        own = {f.name for f in fields(options)}
        for key, value in given.items():
            owners = [t for t in TASKS.values() if key in {f.name for f in fields(t.format.TagOptions)}]
            default = next(f.default for f in fields(owners[0].format.TagOptions) if f.name == key)
            if key not in own and value != default:  # --no-gaps is given too, where gaps default to None
                flag = "--" + key.replace("_", "-")
                raise InputError(
                    f"{flag}: only for {owners[0].format.input_kind} ({' and '.join(t.name for t in owners)} "
                    f"models); this is a {self.name} model"
                )
        return options(**{k: v for k, v in given.items() if k in own})


@contextmanager
def _named_errors(task: str) -> Iterator[None]:
    """A reader's WrongKind (easyfirst.data.detect) raised inside becomes the error of a model of ``task``."""
    from easyfirst.data.detect import WrongKind

    try:
        yield
    except WrongKind as error:
        raise error.for_task(task) from None


def _owner(head: OutputHead) -> str:
    return next(task.name for task in TASKS.values() if head in task.outputs)


def _feature_key(feature: str) -> str:
    from easyfirst.data.features import FEATURES

    return FEATURES[feature].dim_key


def _feature_on(embedder_settings, feature: str) -> bool:
    return getattr(embedder_settings, _feature_key(feature)) > 0


def _registry() -> dict[str, Task]:
    from easyfirst.tasks.ner import NER
    from easyfirst.tasks.pos import POS
    from easyfirst.tasks.qe import QE

    return {task.name: task for task in (POS, NER, QE)}


TASKS: dict[str, Task] = _registry()


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise InputError(f"unknown task {name!r} (known: {', '.join(TASKS)})") from None
