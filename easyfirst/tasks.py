"""The task layer: what differs between POS tagging, NER and (later) quality estimation.

A :class:`Task` says how to read a file into sentences, which data set and config values it uses by
default, how predictions are scored and which score chooses the best epoch, and how ``easyfirst tag``
writes a tagged file back. Extra per-word inputs (capitalization patterns, aligned source words) are
features switched on by the task's default config (see easyfirst.data.features); a task's reader puts
what they need beside the words in ``Sentence.extra``.

Everything else (vocabularies, the model, the training loop) is shared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
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
    prefixed: bool = False  # a data set is a path prefix of several files (QE), not one file
    columns: tuple[tuple[str, str], ...] = ()  # more (report key, label) pairs in the per-epoch table
    # (stream, DataConfig, name) → sentences one at a time, for formats that can be read without the
    # whole file (None: ``read`` it all)
    stream: Callable[[BinaryIO, Any, str | None], Iterator[Sentence]] | None = None


def _read_pos(path: str | Path, data) -> list[Sentence]:
    from easyfirst.data.conllu import read_conllu

    return read_conllu(path, tag_column=data.tag_column)


def _stream_pos(source: BinaryIO, data, name: str | None) -> Iterator[Sentence]:
    from easyfirst.data.conllu import iter_conllu

    return iter_conllu(source, tag_column=data.tag_column, name=name)


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


def _read_qe(path: str | Path, data) -> list[Sentence]:
    from easyfirst.data.qe import read_qe

    return read_qe(path)


def _write_qe(source, out: BinaryIO, predict, data, *, batch_size: int, with_gaps: bool = False, **_) -> int:
    """``source``: the QE sentences to tag (easyfirst.data.qe.QESentence, with ``gaps`` where known)."""
    from easyfirst.data.qe import tag_qe

    return tag_qe(source, out, predict, with_gaps=with_gaps, batch_size=batch_size)


def _score_qe(gold: Tags, predicted: Tags) -> dict:
    from easyfirst.metrics import qe_report

    return qe_report(gold, predicted)


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
            stream=_stream_pos,
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
            # paper §5.2: the POS values but dropout 0.3, N = 5, a CRF output layer; plus the NER word features.
            # N = 5 is Table 2's "maximum number of sketch steps": a sentence of L < 5 words runs L steps
            defaults={
                "model": {
                    "sketch_steps": 5,
                    "steps_beyond_length": False,
                    "dropout": 0.3,
                    "crf": True,
                    "case_dim": 20,
                    "lowercase": True,
                    "word_min_freq": 1,
                    "word_dropout": 0.25,
                },
            },
        ),
        Task(
            "qe",
            "word-level translation quality estimation, OK/BAD per MT word (WMT16 en-de by default)",
            "wmt16-qe-en-de",
            _read_qe,
            _score_qe,
            metric="f1_mult",
            metric_label="F1-MULT",
            breakdown="per_tag",
            write=_write_qe,
            # paper §5.3: the POS values but dropout 0.1, N = 5, the target word ⊕ its aligned source
            # words instead of affixes (64 + 64 dimensions), BAD weighted 5 in the loss; plus the WMT16
            # baseline's context (4 × 64: MT neighbours, aligned words' source neighbours), which took
            # dev F1-MULT above 0.37 here (see README, "Results: WMT16 word-level QE")
            defaults={
                "model": {
                    "sketch_steps": 5,
                    "dropout": 0.1,
                    "affix_dim": 0,
                    "source_dim": 64,
                    "qe_context_dim": 64,
                },
                "loss": {"class_weights": {"BAD": 5.0}},
            },
            prefixed=True,
            columns=(("f1_ok", "F1-OK"), ("f1_bad", "F1-BAD"), ("accuracy", "acc")),
        ),
    )
}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise InputError(f"unknown task {name!r} (known: {', '.join(TASKS)})") from None
