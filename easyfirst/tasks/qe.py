"""Word-level translation quality estimation: OK/BAD per MT word (WMT16 en-de by default), and as
WMT18–20 scored it, per gap and per source word (two extra outputs: easyfirst.data.outputs).

A data set is a path prefix of parallel files (easyfirst.data.qe); `easyfirst tag` takes the prefix,
or the files one by one with --src, --mt and --alignments, and never reads gold tags.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from easyfirst.data.outputs import OutputHead
from easyfirst.data.qe import QE_TAGS, QESentence
from easyfirst.errors import InputError
from easyfirst.tasks import Task
from easyfirst.tasks.parts import Format, Predict, Scoring, Tags

# the outputs beside the MT word tags, WMT18–20's ([model] gaps and source_tags), with their parameters'
# names in a model.pt saved before the heads had a module each (easyfirst.model.heads)
GAPS = OutputHead(
    name="gaps",
    labels=QE_TAGS,
    over="gaps",
    what="gap tags",
    gold=lambda sentence: sentence.gaps,
    gold_from="gap tags (a 2N+1 .tags file)",
    empty="OK",  # the one gap of an empty MT sentence: nothing is missing from nothing
    switch="gaps",
    weights="gap_class_weights",
    saved_before=(("gap_boundaries", "boundaries"), ("gap_hidden", "hidden"), ("gap_output", "output")),
)
SOURCE_TAGS = OutputHead(
    name="source_tags",
    labels=QE_TAGS,
    over="aligned",
    aligned="source",
    what="source tags",
    gold=lambda sentence: sentence.source_tags,
    gold_from="source tags (a .source_tags file)",
    empty="BAD",  # the source words of an empty MT sentence: nothing translates them
    switch="source_tags",
    weights="source_class_weights",
    saved_before=(("unaligned", "unaligned"), ("source_encoder", "encoder"), ("source_output", "output")),
)
# the per-epoch log's columns for a model with heads: (report key, label)
HEAD_COLUMNS = {
    "gaps": (
        ("f1_mult", "F1-MULT"),
        ("mcc", "MCC"),
        ("gaps_f1_mult", "gaps MULT"),
        ("gaps_mcc", "gaps MCC"),
        ("target_f1_mult", "target MULT"),
        ("target_mcc", "target MCC"),
    ),
    "source_tags": (("source_f1_mult", "source MULT"), ("source_mcc", "source MCC")),
}
SCORE_LABELS = {"f1_mult": "F1-MULT", "f1_ok": "F1-OK", "f1_bad": "F1-BAD", "mcc": "MCC"}


@dataclass
class QEOptions:
    """The files of a QE input given one by one, and the output format."""

    src: Path | None = field(default=None, metadata={"help": "QE: source sentences, one per line."})
    mt: Path | None = field(default=None, metadata={"help": "QE: machine translations to tag, one per line."})
    alignments: Path | None = field(
        default=None, metadata={"help": "QE: Pharaoh source-MT alignments (i-j, source index first)."}
    )
    gaps: bool | None = field(
        default=None,
        metadata={
            "help": "QE: write 2N+1 tags with the predicted gap tags, or one per MT word (default: 2N+1 "
            "when the model predicts gaps; --gaps with a model that does not writes every gap OK)."
        },
    )


def source_tags_path(output: Path) -> Path:
    """Where `easyfirst tag -o OUT` writes source tags: ``out.tags`` → ``out.source_tags``, else
    OUT.source_tags."""
    name = output.name[: -len(".tags")] if output.name.endswith(".tags") else output.name
    return output.with_name(name + ".source_tags")


def score_label(key: str) -> str:
    """A report key's short name: ``target_f1_mult`` → ``target F1-MULT``."""
    part, _, score = key.partition("_")
    if part in ("gaps", "target", "source") and score in SCORE_LABELS:
        return f"{part} {SCORE_LABELS[score]}"
    return SCORE_LABELS.get(key, key)


class QEFormat(Format[QESentence]):
    """A QE data set: a path prefix of parallel files (easyfirst.data.qe); `easyfirst tag` takes the
    prefix or the files one by one, and writes a tags file (and OUT.source_tags)."""

    input_kind = "QE file prefixes: PREFIX.src, .mt, .src-mt.alignments, .tags (.source_tags)"
    refuses_text = "a qe model needs the source and alignment: plot --input PREFIX"
    unclaimed_input = "a qe model tags sentence pairs: give --src, --mt and --alignments (or a PREFIX)"
    TagOptions = QEOptions
    extra = ("source", "alignment")

    def text_column(self, data) -> None:
        return None  # a QE model tags sentence pairs, not one text

    def exists(self, path: str | Path) -> bool:
        from easyfirst.data.qe import is_qe_prefix

        return Path(path).is_file() or is_qe_prefix(path)

    def check_exists(self, path: str | Path, split: str) -> None:
        """Fail unless ``path`` is a QE prefix with its files (the error names each missing one)."""
        from easyfirst.data.qe import QEFiles

        QEFiles.from_prefix(path)

    def read(self, path: str | Path, data) -> list[QESentence]:
        from easyfirst.data.qe import read_qe

        return read_qe(path)

    def claim_input(self, input: str | None, options: dict[str, Any]) -> list[QESentence] | None:
        """The QE sentences to tag, from --src/--mt/--alignments or a PREFIX; None when the input is not
        a QE data set. Read here, before the model is loaded, so that input errors come first. Only the
        inputs are read: never a .tags or .source_tags file beside them."""
        from easyfirst.data.qe import QEFiles, is_qe_prefix, read_qe

        src, mt, alignments = (options.get(k) for k in ("src", "mt", "alignments"))
        given = {"--src": src, "--mt": mt, "--alignments": alignments}
        if all(path is None for path in given.values()):
            if input is None or input == "-" or Path(input).is_file() or not is_qe_prefix(input):
                return None
            files = QEFiles.from_prefix(input, need_tags=False)
        else:
            missing = [flag for flag, path in given.items() if path is None]
            if missing:
                raise InputError(
                    f"QE input needs --src, --mt and --alignments together; missing {', '.join(missing)}"
                )
            if input is not None:
                raise InputError("give either an input file or --src/--mt/--alignments, not both")
            for path in (src, mt, alignments):
                if not path.is_file():
                    raise InputError("no such file", path)
            files = QEFiles(src, mt, alignments)
        return read_qe(files, with_tags=False)

    def write(
        self,
        source: list[QESentence],
        out: BinaryIO,
        predict: Predict,
        data,
        options: QEOptions,
        *,
        name: str,
        output: Path | None = None,
    ) -> int:
        """``source``: the sentences :meth:`claim_input` read. The tags go to ``out``; the source tags, when
        the model predicts them and there is an ``output`` file, to OUT.source_tags (written first, and
        atomically, so that a failure leaves neither)."""
        from easyfirst.atomic import atomic_write
        from easyfirst.data.qe import tag_qe

        def write_source_tags(text: bytes) -> None:
            if output is None:  # stdout holds the MT tags alone
                sys.stderr.write(
                    "note: the predicted source tags are written with -o OUT only (OUT.source_tags)\n"
                )
            else:
                atomic_write(source_tags_path(output), lambda stream: stream.write(text))

        return tag_qe(
            source,
            out,
            predict,
            gaps=options.gaps,
            write_source_tags=write_source_tags,
        )


class QEScoring(Scoring):
    """WMT's word-level scores: F1-OK, F1-BAD, their product F1-MULT and MCC, of the MT words and, for a
    model with the extra outputs, of the gaps, of words and gaps together and of the source words."""

    metric, metric_label = "f1_mult", "F1-MULT"
    columns = (("f1_ok", "F1-OK"), ("f1_bad", "F1-BAD"), ("accuracy", "acc"))
    selectable = ("mcc",)

    def score(self, gold: Tags, predicted: Tags) -> dict:
        from easyfirst.metrics import qe_report

        return qe_report(gold, predicted)

    def title(self, name: str, report: dict) -> str:
        return (
            f"{name}: F1-MULT {100 * report['f1_mult']:.2f} (F1-OK {100 * report['f1_ok']:.2f} × F1-BAD "
            f"{100 * report['f1_bad']:.2f}), MCC {100 * report['mcc']:.2f}, accuracy "
            f"{100 * report['accuracy']:.2f}% over {report['tokens']:,} MT words"
        )

    def selection(self, config) -> tuple[str, str]:
        """``[train] best_metric``, else the F1-MULT of MT words and gaps together (WMT19's target score)
        for a model that predicts gaps, else the MT words' F1-MULT (WMT16)."""
        if config.train.best_metric is None and config.model.output.gaps:
            return "target_f1_mult", score_label("target_f1_mult")
        key, label = super().selection(config)
        return key, score_label(key) if key != self.metric else label

    def report_columns(self, config) -> tuple[tuple[str, str], ...]:
        heads = (
            c for name, columns in HEAD_COLUMNS.items() if getattr(config.model.output, name) for c in columns
        )
        return self.columns + tuple(heads)

    def score_outputs(self, gold_words, predicted_words, gold, predicted, heads) -> dict:
        """The ``gaps_*``, ``target_*`` (MT words and gaps pooled) and ``source_*`` scores, for the parts
        both the model and the gold sentences have."""
        from easyfirst.metrics import qe_heads_report

        return qe_heads_report(gold_words, predicted_words, gold, predicted)


QE = Task(
    name="qe",
    help=(
        "word-level translation quality estimation, OK/BAD per MT word, and per gap and source word "
        "when the data has those tags (WMT16 en-de by default)"
    ),
    summary="word-level translation quality estimation (WMT files)",
    dataset="wmt16-qe-en-de",
    format=QEFormat(),
    scoring=QEScoring(),
    outputs=(GAPS, SOURCE_TAGS),
    # paper §5.3: the POS values but dropout 0.1, N = 5, the target word ⊕ its aligned source words
    # instead of affixes (64 + 64 dimensions), BAD weighted 5 in the loss; plus the WMT16 baseline's
    # context (4 × 64: MT neighbours, aligned words' source neighbours), which took dev F1-MULT above
    # 0.37 here (see README, "Results: WMT16 word-level QE"). WMT18+ data: gaps and source words get
    # heads of their own; BAD gaps are ~2% of the gaps (BAD words 12%), so they are weighted more
    defaults={
        # no "data" entry: QE keeps the built-in 50-word training cap, though N = 5 costs only O(5L):
        # without it dev target F1-MULT fell in 3 of 3 WMT19 seeds and 2 of 3 WMT16 seeds
        # (docs/studies/length-cap.md, "Before and after"); it drops < 0.1% of those sets
        "model": {
            "sketch_steps": 5,
            "dropout": 0.1,
            "affix_dim": 0,
            "source_dim": 64,
            "qe_context_dim": 64,
        },
        "loss": {
            "class_weights": {"BAD": 5.0},
            "gap_class_weights": {"BAD": 10.0},
            "source_class_weights": {"BAD": 5.0},
        },
    },
)
