"""Word-level translation quality estimation: OK/BAD per MT word (WMT16 en-de by default).

A data set is a path prefix of parallel files (easyfirst.data.qe); `easyfirst tag` takes the prefix,
or the files one by one with --src, --mt and --alignments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from easyfirst.data.sentence import Sentence
from easyfirst.errors import InputError
from easyfirst.tasks import Predict, Tags, Task, names_task


@dataclass
class QEOptions:
    """The files of a QE input given one by one, and the output format."""

    src: Path | None = field(default=None, metadata={"help": "QE: source sentences, one per line."})
    mt: Path | None = field(default=None, metadata={"help": "QE: machine translations to tag, one per line."})
    alignments: Path | None = field(
        default=None, metadata={"help": "QE: Pharaoh source-MT alignments (i-j, source index first)."}
    )
    tags: Path | None = field(
        default=None,
        metadata={"help": "QE: a tags file for these sentences; the output takes its format and gap tags."},
    )
    gaps: bool = field(
        default=False, metadata={"help": "QE: write 2N+1 tags (gap tags OK) rather than one per word."}
    )


class QE(Task):
    name = "qe"
    help = "word-level translation quality estimation, OK/BAD per MT word (WMT16 en-de by default)"
    dataset = "wmt16-qe-en-de"
    metric, metric_label = "f1_mult", "F1-MULT"
    columns = (("f1_ok", "F1-OK"), ("f1_bad", "F1-BAD"), ("accuracy", "acc"))
    input_kind = "QE file prefixes: PREFIX.src, .mt, .src-mt.alignments, .tags"
    refuses_text = "a qe model needs the source and alignment: plot --input PREFIX"
    unclaimed_input = "a qe model tags sentence pairs: give --src, --mt and --alignments (or a PREFIX)"
    TagOptions = QEOptions
    # paper §5.3: the POS values but dropout 0.1, N = 5, the target word ⊕ its aligned source words
    # instead of affixes (64 + 64 dimensions), BAD weighted 5 in the loss; plus the WMT16 baseline's
    # context (4 × 64: MT neighbours, aligned words' source neighbours), which took dev F1-MULT above
    # 0.37 here (see README, "Results: WMT16 word-level QE")
    defaults = {
        "model": {
            "sketch_steps": 5,
            "dropout": 0.1,
            "affix_dim": 0,
            "source_dim": 64,
            "qe_context_dim": 64,
        },
        "loss": {"class_weights": {"BAD": 5.0}},
    }

    def text_column(self, data) -> None:
        return None  # a QE model tags sentence pairs, not one text

    def exists(self, path: str | Path) -> bool:
        from easyfirst.data.qe import is_qe_prefix

        return Path(path).is_file() or is_qe_prefix(path)

    def check_exists(self, path: str | Path, split: str) -> None:
        """Nothing to check before reading: :func:`~easyfirst.data.qe.read_qe` names each missing file."""

    @names_task
    def read(self, path: str | Path, data) -> list[Sentence]:
        from easyfirst.data.qe import read_qe

        return read_qe(path)

    def claim_input(self, input: str | None, options: dict[str, Any]):
        """The QE files to tag, from --src/--mt/--alignments/--tags or a PREFIX; None when the input is
        not a QE data set. Read here, before the model is loaded, so that input errors come first."""
        from easyfirst.data.qe import QEFiles, is_qe_prefix, read_qe

        src, mt, alignments, tags = (options.get(k) for k in ("src", "mt", "alignments", "tags"))
        given = {"--src": src, "--mt": mt, "--alignments": alignments}
        if all(path is None for path in given.values()):
            if tags is not None:
                raise InputError("--tags goes with --src, --mt and --alignments (QE)")
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
            for path in (src, mt, alignments, tags):
                if path is not None and not path.is_file():
                    raise InputError("no such file", path)
            files = QEFiles(src, mt, alignments, tags)
        return read_qe(files, with_tags=files.tags is not None)

    @names_task
    def write(
        self, source, out: BinaryIO, predict: Predict, data, options: QEOptions, *, batch_size: int, name: str
    ) -> int:
        """``source``: the sentences :meth:`claim_input` read (QESentence, with ``gaps`` where known)."""
        from easyfirst.data.qe import GAP_FORMAT, tag_qe, tags_format

        with_gaps = options.gaps or tags_format(source) == GAP_FORMAT  # read with a 2N+1 tags file
        return tag_qe(source, out, predict, with_gaps=with_gaps, batch_size=batch_size)

    def score(self, gold: Tags, predicted: Tags) -> dict:
        from easyfirst.metrics import qe_report

        return qe_report(gold, predicted)

    def title(self, name: str, report: dict) -> str:
        return (
            f"{name}: F1-MULT {100 * report['f1_mult']:.2f} (F1-OK {100 * report['f1_ok']:.2f} × F1-BAD "
            f"{100 * report['f1_bad']:.2f}), accuracy {100 * report['accuracy']:.2f}% over {report['tokens']:,} words"
        )
