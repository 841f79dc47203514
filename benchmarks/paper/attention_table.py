"""Train the attention variants and ablations on UD English EWT (UPOS) with one budget and seed, and
write the paper's Table 1 (English column) and Table 4 as Markdown from their metrics.json files.

    nice -n 10 python benchmarks/paper/attention_table.py --epochs 2 --seed 1 --out runs/attention \\
        --markdown runs/attention/tables.md                    # trains 14 rows, --jobs at a time
    python benchmarks/paper/attention_table.py --out runs/attention --report-only

Each row is one `easyfirst train --task pos` run on one torch thread; rows shared by the two tables
(vanilla easy-first with N = L) are trained once, and a row whose run folder already holds a finished
metrics.json with the requested epochs is not trained again (so an interrupted benchmark resumes).
Rows run --jobs at a time, so seconds per epoch are comparable within one invocation only.

The paper's Table 4 is an NER ablation (CoNLL-2003 F1, with a CRF); here the same ablations are run on
EWT POS tagging, so its "paper" column is a reference for the ordering, not for the values.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pos_table import BATCHED, folder, run_trainings, train_command

# name: (flags, the paper's number: Table 1 English UPOS accuracy / Table 4 NER F1; None if not there)
ROWS: dict[str, tuple[list[str], float | None]] = {
    "BiLSTM": (["--model", "bilstm"], 94.94),
    "Vanilla easy-first, N = L": (["--attention", "hard"], 94.78),
    "NEF-S, csoftmax": (["--model", "nef-s", "--attention", "csoftmax"], 94.91),
    "NEF-F, softmax": (["--attention", "softmax"], 95.15),
    "NEF-F, sparsemax": (["--attention", "sparsemax"], 93.97),
    "NEF-F, csoftmax": (["--attention", "csoftmax"], 95.01),
    "NEF-F, csparsemax": (["--attention", "csparsemax"], None),
    "NEF-F, entmax15": (["--attention", "entmax15"], None),
    "NEF-F, csoftmax, N = 5": (["--attention", "csoftmax", "--sketch-steps", "5"], 88.01),
    "NEF-F w/out concat, N = 5": (["--attention", "csoftmax", "--sketch-steps", "5", "--no-concat"], 87.47),
    "Uniform attention, N = 5": (["--attention", "uniform", "--sketch-steps", "5"], 87.46),
    "Vanilla EF, N = 5": (["--attention", "hard", "--sketch-steps", "5"], 87.17),
    "Left-to-right, N = L": (["--attention", "left-to-right"], 87.57),
    "Right-to-left, N = L": (["--attention", "right-to-left"], 87.53),
}
TABLE1 = [
    "BiLSTM",
    "Vanilla easy-first, N = L",
    "NEF-S, csoftmax",
    "NEF-F, softmax",
    "NEF-F, sparsemax",
    "NEF-F, csoftmax",
    "NEF-F, csparsemax",
    "NEF-F, entmax15",
]
TABLE4 = [
    "NEF-F, csoftmax, N = 5",
    "NEF-F w/out concat, N = 5",
    "Uniform attention, N = 5",
    "Vanilla EF, N = 5",
    "Vanilla easy-first, N = L",
    "Left-to-right, N = L",
    "Right-to-left, N = L",
]
PAPER_TABLE4 = {"Vanilla easy-first, N = L": 87.46}  # the shared row's number in the paper's Table 4


def finished(out: Path, flags: list[str], epochs: int, seed: int) -> bool:
    try:
        metrics = json.loads((folder(out, flags) / "metrics.json").read_text())
        config = json.loads((folder(out, flags) / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return len(metrics["epochs"]) == epochs and config["train"]["seed"] == seed


def train_rows(names: list[str], epochs: int, seed: int, out: Path, jobs: int) -> None:
    """Run the rows' trainings, at most ``jobs`` at a time, the slowest (N = L, NEF-F) first."""
    todo = [n for n in names if not finished(out, ROWS[n][0], epochs, seed)]
    todo.sort(key=lambda n: ("--sketch-steps" in ROWS[n][0] or "bilstm" in ROWS[n][0], names.index(n)))
    run_trainings(
        {name: train_command(ROWS[name][0], epochs, seed, out, regime=BATCHED) for name in todo}, jobs
    )


def table(names: list[str], out: Path, paper: dict[str, float | None], paper_header: str) -> list[str]:
    rows = []
    for name in names:
        path = folder(out, ROWS[name][0]) / "metrics.json"
        metrics = json.loads(path.read_text()) if path.is_file() else None
        rows.append((name, metrics))
    measured = [m["test"]["accuracy"] for _, m in rows if m]
    lines = [
        f"| model | flags | dev acc. | test acc. | rank | {paper_header} | paper rank | best epoch | s/epoch |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    known = [v for v in paper.values() if v is not None]
    for name, metrics in rows:
        reference = paper.get(name)
        paper_cells = (
            f"{reference:.2f} | {1 + sum(v > reference for v in known)}" if reference is not None else "— | —"
        )
        flags = " ".join(ROWS[name][0])
        if metrics is None:
            lines.append(f"| {name} | `{flags}` | not run | | | {paper_cells} | | |")
            continue
        test = metrics["test"]["accuracy"]
        lines.append(
            f"| {name} | `{flags}` | {100 * metrics['dev']['accuracy']:.2f} | {100 * test:.2f} | "
            f"{1 + sum(v > test for v in measured)} | {paper_cells} | "
            f"{metrics['best_epoch']}/{len(metrics['epochs'])} | {metrics['seconds_per_epoch']:.0f} |"
        )
    return lines


def report(out: Path) -> str:
    table1 = table(TABLE1, out, {n: ROWS[n][1] for n in TABLE1}, "paper (UD 1.4 en)")
    table4 = table(TABLE4, out, {n: PAPER_TABLE4.get(n, ROWS[n][1]) for n in TABLE4}, "paper (NER F1, CRF)")
    return "\n".join(
        ["**Table 1** (English column): UD English EWT UPOS accuracy (%)", "", *table1, ""]
        + [
            "**Table 4** (ablations): UD English EWT UPOS accuracy (%); the paper's are NER F1",
            "",
            *table4,
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2, help="trainings at a time (one thread each)")
    parser.add_argument("--out", type=Path, default=Path("runs/attention-table"))
    parser.add_argument("--markdown", type=Path, help="also write the tables to this file")
    parser.add_argument("--report-only", action="store_true", help="only print the tables of finished runs")
    args = parser.parse_args()
    if not args.report_only:
        names = list(dict.fromkeys(TABLE1 + TABLE4))
        train_rows(names, args.epochs, args.seed, args.out, args.jobs)
    text = report(args.out)
    print(text)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(text + "\n")


if __name__ == "__main__":
    main()
