"""``easyfirst evaluate``: tag a gold file and score it with the task's report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from easyfirst.cli.app import app
from easyfirst.cli.common import (
    BackendOption,
    BatchOption,
    DeviceOption,
    ModelOption,
    check_input,
    check_option,
    console,
    err,
    given_path,
    load_tagger,
    say_backend,
    task_of,
)
from easyfirst.fields import at_least
from easyfirst.fields import encoding as known_encoding
from easyfirst.tasks import TASKS


@app.command()
def evaluate(
    gold: Annotated[
        Path,
        typer.Argument(
            parser=given_path,
            metavar="FILE",
            help="File with gold tags in the format of the model's task ("
            + "; ".join(f"{t.name}: {t.format.input_kind}" for t in TASKS.values())
            + ").",
        ),
    ],
    model: ModelOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    batch_size: BatchOption = 256,
    device: DeviceOption = "cpu",
    backend: BackendOption = "auto",
    encoding: Annotated[
        str | None, typer.Option(help="Column files: the file's encoding (default: the model's).")
    ] = None,
) -> None:
    """Tag a gold file and score the predictions.

    Accuracy and per-tag precision, recall and F1 (pos), or entity precision, recall and F1, micro-averaged and per entity type (ner), or for qe F1-OK, F1-BAD, F1-MULT =
    F1-OK × F1-BAD and MCC of the MT words, and, when the model predicts them and the gold files have them,
    of the gaps, of MT words and gaps together (WMT19's target score) and of the source words;
    calibration (ECE) and sparsity (mean support size of the output distributions)."""
    check_option("--batch-size", batch_size, at_least(1))
    check_option("--encoding", encoding, known_encoding())
    check_input(gold, "no such file (nor a QE prefix: PREFIX.mt is missing too)")
    tagger = load_tagger(model, device, note=True, backend=backend)
    task, data = task_of(tagger)
    if encoding is not None:
        data.encoding = encoding
    sentences = task.read(gold, data)
    say_backend(tagger)  # once the gold file is read: a refused file says that alone
    report = score(tagger, task, sentences, batch_size)
    if as_json:
        print(json.dumps(report, indent=2))
        return
    print_report(report, task, str(gold), len(tagger.tags))


def score(tagger, task, sentences, batch_size: int) -> dict:
    """The task's report of the tagger's predictions against the sentences' gold tags, with calibration
    and sparsity, and the gold labels the model never saw (``unknown_gold_tags``)."""
    import torch

    from easyfirst.data.schemes import convert, learned_scheme
    from easyfirst.metrics import distribution_report
    from easyfirst.tagging.tagged import heads_by_name

    tagged = tagger.tag(
        [s.words for s in sentences],
        probabilities=True,
        heads=True,
        batch_size=batch_size,
        extras=[s.extra for s in sentences],
    )
    predicted, distributions = [t.tags for t in tagged], [t.probabilities for t in tagged]
    heads = heads_by_name(tagged)
    report = task.scoring.score([s.tags for s in sentences], predicted)
    if heads:  # the extra outputs (easyfirst.data.outputs; QE: gap and source tags)
        report |= task.score_outputs(sentences, predicted, heads)
    ids, scheme = tagger.vocabs.tags.stoi, learned_scheme(tagger.tags)

    def as_ids(tags: list[str]) -> torch.Tensor:
        """BIO tags (predicted and gold, as scored) as ids of the model's own tags: a BIOES model's
        distributions are over BIOES, so B-PER read out of S-PER is S-PER's probability."""
        tags = tags if scheme == "bio" else convert(tags, "bio", scheme)
        return torch.tensor([ids.get(t, -1) for t in tags], dtype=torch.long)

    report |= distribution_report(
        distributions, [as_ids(t) for t in predicted], [as_ids(s.tags) for s in sentences]
    )
    known = task.scoring.known_labels(tagger.tags)
    report["unknown_gold_tags"] = {
        t: v["support"] for t, v in report[task.scoring.breakdown].items() if t not in known and v["support"]
    }
    return report


def print_report(report: dict, task, name: str, n_tags: int) -> None:
    from rich.table import Table

    out = console()
    out.print(task.scoring.title(name, report), markup=False, highlight=False)
    table = Table(show_edge=False)
    label = task.scoring.breakdown_label
    for column in (label, "precision", "recall", "F1", "support"):
        table.add_column(column, justify="left" if column == label else "right")
    for row_name, row in sorted(report[task.scoring.breakdown].items(), key=lambda item: -item[1]["support"]):
        table.add_row(
            row_name,
            f"{100 * row['precision']:.2f}",
            f"{100 * row['recall']:.2f}",
            f"{100 * row['f1']:.2f}",
            f"{row['support']:,}",
        )
    out.print(table)
    if "mcc" in report:  # QE: the WMT word-level scores of each part the report has
        out.print(qe_scores_table(report))
    out.print(
        f"calibration: ECE {100 * report['ece']:.2f}% (10 equal-width bins on the predicted tag's "
        f"probability); sparsity: {report['mean_support']:.2f} of {n_tags} tags with p > 0 per word"
    )
    unseen = report["unknown_gold_tags"]
    if unseen:
        listed = ", ".join(f"{t} ({n})" for t, n in sorted(unseen.items()))
        err.print(f"[yellow]note:[/] gold tags the model never saw, counted as errors: {listed}")


def qe_scores_table(report: dict):
    """F1-MULT, F1-OK, F1-BAD and MCC of MT words, gaps, both and source words, where the report has them."""
    from rich.table import Table

    from easyfirst.metrics import QE_PARTS, QE_SCORES

    table = Table(title="WMT word-level scores (BAD is the positive class of MCC)", show_edge=False)
    names = {"f1_mult": "F1-MULT", "f1_ok": "F1-OK", "f1_bad": "F1-BAD", "mcc": "MCC"}
    for name in ("part", *(names[key] for key in QE_SCORES), "tags"):
        table.add_column(name, justify="left" if name == "part" else "right")
    what = {"words": "MT words", "gaps": "gaps", "target": "MT words + gaps", "source": "source words"}
    for part, prefix in QE_PARTS.items():
        if prefix + "f1_mult" in report:
            count = report["tokens"] if part == "words" else report[prefix + "tokens"]
            table.add_row(
                what[part], *(f"{100 * report[prefix + key]:.2f}" for key in QE_SCORES), f"{count:,}"
            )
    return table
