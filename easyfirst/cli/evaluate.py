"""``easyfirst evaluate``: tag a gold file and score it with the task's report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from easyfirst.cli import app
from easyfirst.cli.common import (
    BatchOption,
    DeviceOption,
    ModelOption,
    check_device,
    check_input,
    console,
    err,
    load_tagger,
    task_of,
)
from easyfirst.errors import InputError
from easyfirst.tasks import TASKS


@app.command()
def evaluate(
    gold: Annotated[
        Path,
        typer.Argument(
            help="File with gold tags in the format of the model's task ("
            + "; ".join(f"{t.name}: {t.input_kind}" for t in TASKS.values())
            + ")."
        ),
    ],
    model: ModelOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    batch_size: BatchOption = 256,
    device: DeviceOption = "cpu",
    encoding: Annotated[
        str | None, typer.Option(help="Column files: the file's encoding (default: the model's).")
    ] = None,
) -> None:
    """Tag a gold file and score it: accuracy and per-tag precision, recall and F1 (pos), or entity
    precision, recall and F1, micro-averaged and per entity type (ner), or F1-MULT = F1-OK × F1-BAD (the
    WMT16 word-level score), F1 of OK and of BAD, and accuracy (qe); calibration (ECE) and sparsity
    (mean support size of the output distributions)."""
    check_input(gold, "no such file (nor a QE prefix: PREFIX.mt is missing too)")
    check_device(device)
    tagger = load_tagger(model, device)
    task, data = task_of(tagger)
    if encoding is not None:
        try:
            "".encode(encoding)
        except LookupError:
            raise InputError(f"--encoding: unknown encoding {encoding!r}") from None
        data.encoding = encoding
    sentences = task.read(gold, data)
    report = score(tagger, task, sentences, batch_size)
    if as_json:
        print(json.dumps(report, indent=2))
        return
    print_report(report, task, str(gold), len(tagger.tags))


def score(tagger, task, sentences, batch_size: int) -> dict:
    """The task's report of the tagger's predictions against the sentences' gold tags, with calibration
    and sparsity, and the gold labels the model never saw (``unknown_gold_tags``)."""
    import torch

    from easyfirst.metrics import distribution_report

    predicted, distributions = tagger.tag(
        [s.words for s in sentences],
        return_probabilities=True,
        batch_size=batch_size,
        extras=[s.extra for s in sentences],
    )
    report = task.score([s.tags for s in sentences], predicted)
    ids = tagger.vocabs.tags.stoi

    def as_ids(tags: list[str]) -> torch.Tensor:
        return torch.tensor([ids.get(t, -1) for t in tags], dtype=torch.long)

    report |= distribution_report(
        distributions, [as_ids(t) for t in predicted], [as_ids(s.tags) for s in sentences]
    )
    known = task.known_labels(tagger.tags)
    report["unknown_gold_tags"] = {
        t: v["support"] for t, v in report[task.breakdown].items() if t not in known and v["support"]
    }
    return report


def print_report(report: dict, task, name: str, n_tags: int) -> None:
    from rich.table import Table

    out = console()
    out.print(task.title(name, report), markup=False, highlight=False)
    table = Table(show_edge=False)
    label = task.breakdown_label
    for column in (label, "precision", "recall", "F1", "support"):
        table.add_column(column, justify="left" if column == label else "right")
    for row_name, row in sorted(report[task.breakdown].items(), key=lambda item: -item[1]["support"]):
        table.add_row(
            row_name,
            f"{100 * row['precision']:.2f}",
            f"{100 * row['recall']:.2f}",
            f"{100 * row['f1']:.2f}",
            f"{row['support']:,}",
        )
    out.print(table)
    out.print(
        f"calibration: ECE {100 * report['ece']:.2f}% (10 equal-width bins on the predicted tag's "
        f"probability); sparsity: {report['mean_support']:.2f} of {n_tags} tags with p > 0 per word"
    )
    unseen = report["unknown_gold_tags"]
    if unseen:
        listed = ", ".join(f"{t} ({n})" for t, n in sorted(unseen.items()))
        err.print(f"[yellow]note:[/] gold tags the model never saw, counted as errors: {listed}")
