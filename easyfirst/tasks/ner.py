"""Named entity recognition on CoNLL column files (CoNLL-2003 English by default): the column format
scored by entity F1."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from easyfirst.data.sentence import Sentence
from easyfirst.errors import InputError
from easyfirst.tasks import Task
from easyfirst.tasks.parts import Format, Predict, Scoring, Tags

SCHEMES = ("bio", "iob1", "bioes")


@dataclass
class ColumnOptions:
    """What `easyfirst tag` may change about writing a column file."""

    replace: bool = field(
        default=False,
        metadata={"help": "Column files: put the tags in place of the tag column, not after the last."},
    )
    encoding: str | None = field(
        default=None, metadata={"help": "Column files: encoding to read and write (default: the model's)."}
    )
    scheme: str | None = field(
        default=None,
        metadata={"help": "Column files: write tags in bio, iob1 or bioes (default: the input's, else bio)."},
    )

    def __post_init__(self) -> None:
        if self.scheme is not None and self.scheme not in SCHEMES:
            raise InputError(f"--scheme must be bio, iob1 or bioes, not {self.scheme!r}")
        if self.encoding is not None:
            try:
                "".encode(self.encoding)
            except LookupError:
                raise InputError(f"--encoding: unknown encoding {self.encoding!r}") from None


class Columns(Format[Sentence]):
    """CoNLL column files: the words in ``[data] token_column``, the BIO tags in ``label_column``."""

    input_kind = "column files"
    TagOptions = ColumnOptions

    def text_column(self, data) -> str:
        return "misc:NER"  # CoNLL-U has no column for entity tags: NER=B-PER in MISC

    def configure(self, data, options: ColumnOptions) -> None:
        if options.encoding is not None:
            data.encoding = options.encoding

    def read(self, path: str | Path | BinaryIO, data) -> list[Sentence]:
        from easyfirst.data.conll import read_conll

        return read_conll(
            path, token_column=data.token_column, tag_column=data.label_column, encoding=data.encoding
        )

    def write(
        self, source, out: BinaryIO, predict: Predict, data, options: ColumnOptions, *, name: str, **_
    ) -> int:
        from easyfirst.data.conll import tag_conll

        return tag_conll(
            source,
            out,
            predict,
            token_column=data.token_column,
            tag_column=data.label_column,
            encoding=data.encoding,
            replace=options.replace,
            scheme=options.scheme,
            name=name,
        )


class EntityScoring(Scoring):
    """Entity precision, recall and F1 (exact spans, seqeval's), per entity type."""

    metric, metric_label = "f1", "F1"
    breakdown, breakdown_label = "per_type", "type"
    outside = "O"

    def score(self, gold: Tags, predicted: Tags) -> dict:
        from easyfirst.metrics import entity_report

        return entity_report(gold, predicted)

    def title(self, name: str, report: dict) -> str:
        return (
            f"{name}: entity F1 {100 * report['f1']:.2f} (precision {100 * report['precision']:.2f}, "
            f"recall {100 * report['recall']:.2f}) over {report['entities']:,} entities; "
            f"token accuracy {100 * report['accuracy']:.2f}%"
        )

    def known_labels(self, tags: Sequence[str]) -> set[str]:
        return {t[2:] for t in tags if t != "O"}


NER = Task(
    name="ner",
    help="named entity recognition on CoNLL column files (CoNLL-2003 English by default)",
    summary="named entity recognition (CoNLL column files)",
    dataset="conll2003-en",
    format=Columns(),
    scoring=EntityScoring(),
    # with [data] scheme = "bioes" the model learns BIOES tags: the training sentences' BIO tags are
    # converted (Task.prepare), the model's converted back to BIO wherever they are read out
    # (easyfirst.data.schemes.to_bio)
    schemes=("bio", "bioes"),
    # issue #44: Ma & Hovy (2016)'s BLSTM-CNN-CRF settings (a character CNN of 30 filters, 200 units,
    # dropout 0.5, SGD with momentum 0.9 at 0.015 decayed by 1 / (1 + 0.05 t), 10 sentences per update
    # with the loss summed, clipping at 5, BIOES) in the paper's NEF-CRF-F (N = 5, a CRF output layer,
    # §5.2), with the NER word features (affix n-grams, a case feature, lower-cased lookup, word dropout).
    # CoNLL-2002 Dutch, no vectors, 30 epochs, test F1: 79.92 +- 0.30 (seeds 1-5) against the §5.2
    # values' 75.76 +- 0.09, the defaults before (rows nl-mh-sum, nl-nef-crf; docs/studies/ner.md)
    defaults={
        # N = 5 costs O(5L) per sentence (not POS's O(L²)): train on every sentence (docs/configuration.md)
        "data": {"max_train_length": 0, "scheme": "bioes"},
        "model": {
            "sketch_steps": 5,
            "steps_beyond_length": False,
            "crf": True,
            "case_dim": 20,
            "lowercase": True,
            "word_min_freq": 1,
            "word_dropout": 0.25,
            "char_dim": 30,
            "char_filters": 30,
            "hidden_dim": 200,
            "dropout": 0.5,
        },
        "train": {
            "epochs": 30,
            "optimizer": "sgd",
            "lr": 0.015,
            "momentum": 0.9,
            "lr_decay": 0.05,
            "batch_size": 10,
            "clip": 5.0,
            "reduction": "sum",
        },
    },
    # with word vectors (--pretrained), the English recipe (docs/studies/ner.md, "The English recipe"): the same
    # without affix n-grams (with the vectors they cost 1.5 test F1, the recall of entities unseen in
    # training most: rows ner-glove, ner-glove-noaffix) and 50 epochs (CoNLL-2003 with GloVe 6B 50-d,
    # NEF-CRF-F, test F1: 89.89 +- 0.08 at 30 epochs, seeds 1-5, row ner-mh-sum; row ner-recipe at 50),
    # with the vectors' first 200,000 words in the vocabulary, not 50,000: names are rare words, and
    # 10.8% of eng.testb's entity words are GloVe's 50,001st to 400,000th (eng.testa: 6.5%), UNK without
    # them (row ner-recipe-pw200k; they are kept as read beside the trained table: easyfirst.model.embedder)
    with_vectors={"model": {"affix_dim": 0, "pretrained_words": 200_000}, "train": {"epochs": 50}},
    # `--easy-first` (issue #44, item 4): the constrained sparsemax (§4) at attention temperature 0.5. Under
    # the English recipe at 30 epochs the csoftmax attention is diffuse (largest α over the first half of
    # the steps 0.32, five seeds), and lower temperatures did not sharpen it (0.35 at 0.25 with R1); this
    # makes it sharp (0.652 +- 0.148, every seed of five above 0.5) at csoftmax's F1 (dev 94.17 +- 0.14 and
    # test 89.86 +- 0.05 against 94.20 +- 0.15 and 89.89 +- 0.08; row ner-mh-sum-csparsemax-t0.5, docs/studies/ner.md)
    easy_first={"model": {"attention": "csparsemax", "attention_temperature": 0.5}},
    easy_first_note=" (measured with --pretrained glove-6b-50d: docs/studies/ner.md)",
)
