"""The task layer: what differs between POS tagging, NER and (later) quality estimation.

A :class:`Task` says how to read a file into sentences, which data set and config values it uses by
default, how predictions are scored and which score chooses the best epoch, and how ``easyfirst tag``
writes a tagged file back. Extra per-word inputs (capitalization patterns, aligned source words) are
features switched on by the task's default config (see easyfirst.data.features); a task's reader puts
what they need beside the words in ``Sentence.extra``.

Everything else (vocabularies, the model, the training loop) is shared.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from easyfirst.data.conllu import Sentence
from easyfirst.errors import InputError

Tags = Sequence[Sequence[str]]
Predict = Callable[[list[list[str]]], Tags]


@dataclass(frozen=True)
class Task:
    name: str
    help: str  # one line, for --help
    dataset: str  # the default data set (a key of easyfirst.data.datasets.DATASETS)
    read: Callable[[str | Path, Any], list[Sentence]]  # (path, DataConfig) → sentences
    score: Callable[[Tags, Tags], dict]  # (gold, predicted) → report (fractions)
    metric: str  # the report key that chooses the best epoch (higher is better)
    metric_label: str  # its short name in tables
    breakdown: str  # the report key of the per-label table (tag or entity type → P/R/F1/support)
    # (source, out, predict, DataConfig, batch_size=, name=, **options) → sentences written
    write: Callable[..., int]
    defaults: dict[str, dict[str, Any]] = field(default_factory=dict)  # config changes from the POS values


def _read_pos(path: str | Path, data) -> list[Sentence]:
    from easyfirst.data.conllu import read_conllu

    return read_conllu(path, tag_column=data.tag_column)


def _write_pos(source, out: BinaryIO, predict: Predict, data, *, batch_size: int, name: str, **_) -> int:
    from easyfirst.data.conllu import tag_conllu

    return tag_conllu(source, out, predict, tag_column=data.tag_column, batch_size=batch_size, name=name)


def _score_pos(gold: Tags, predicted: Tags) -> dict:
    from easyfirst.metrics import tag_report

    return tag_report(gold, predicted)


def _read_ner(path: str | Path, data) -> list[Sentence]:
    from easyfirst.data.conll import read_conll

    return read_conll(
        path, token_column=data.token_column, tag_column=data.label_column, encoding=data.encoding
    )


def _write_ner(
    source,
    out: BinaryIO,
    predict: Predict,
    data,
    *,
    batch_size: int,
    name: str,
    replace: bool = False,
    scheme: str | None = None,
    **_,
) -> int:
    from easyfirst.data.conll import tag_conll

    return tag_conll(
        source,
        out,
        predict,
        token_column=data.token_column,
        tag_column=data.label_column,
        encoding=data.encoding,
        replace=replace,
        scheme=scheme,
        batch_size=batch_size,
        name=name,
    )


def _score_ner(gold: Tags, predicted: Tags) -> dict:
    from easyfirst.metrics import entity_report

    return entity_report(gold, predicted)


TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        Task(
            "pos",
            "part-of-speech tagging on CoNLL-U files (UD English EWT by default)",
            "ud-en-ewt",
            _read_pos,
            _score_pos,
            metric="accuracy",
            metric_label="acc",
            breakdown="per_tag",
            write=_write_pos,
        ),
        Task(
            "ner",
            "named entity recognition on CoNLL column files (CoNLL-2003 English by default)",
            "conll2003-en",
            _read_ner,
            _score_ner,
            metric="f1",
            metric_label="F1",
            breakdown="per_type",
            write=_write_ner,
            # paper §5.2: the POS values but dropout 0.3, N = 5, a CRF output layer; plus the NER word features
            defaults={
                "model": {
                    "sketch_steps": 5,
                    "dropout": 0.3,
                    "crf": True,
                    "case_dim": 20,
                    "lowercase": True,
                    "word_min_freq": 1,
                    "word_dropout": 0.25,
                },
            },
        ),
    )
}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise InputError(f"unknown task {name!r} (known: {', '.join(TASKS)})") from None
