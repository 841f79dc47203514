"""Train the paper's Table 3 systems on WMT16 en-de word-level QE with one budget and seed, and print the
README's results table (Markdown) from their metrics.json files.

    python benchmarks/paper/qe_table.py --epochs 6 --seed 1 --out runs/qe-table             # trains
    python benchmarks/paper/qe_table.py --out runs/qe-table --report-only                   # table only
    python benchmarks/paper/qe_table.py --rows bilstm nef-f-5 --epochs 6                    # some rows

Each row is one `easyfirst train --task qe` run (configs/qe.toml: BAD weighted 5, dropout 0.1, context words),
scored on the dev set (the evaluation set here: the WMT16 test source is not available). At most
``--parallel`` runs go at a time, one torch thread each, so seconds per epoch are comparable within a
table. Rows whose run folder already has a metrics.json are not trained again (delete it to redo).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pos_table import folder, run_trainings, train_command

# name, flags, the paper's F1-MULT (Table 3, WMT16 test, with pretrained embeddings)
ROWS = {
    "bilstm": ("BiLSTM (N = 0)", ["--model", "bilstm"], 39.71),
    "nef-s-5": ("NEF-S, N = 5", ["--model", "nef-s", "--sketch-steps", "5"], 40.91),
    "nef-s-L": ("NEF-S, N = L", ["--model", "nef-s", "--sketch-steps", "L"], 40.99),
    "nef-f-5": ("NEF-F, N = 5", ["--model", "nef-f", "--sketch-steps", "5"], 41.18),
    "nef-f-L": ("NEF-F, N = L", ["--model", "nef-f", "--sketch-steps", "L"], 40.84),
    # the paper's exact input (MT word ⊕ aligned source words, 128 dimensions), without context words
    "nef-f-5-128": (
        "NEF-F, N = 5, no context words",
        ["--model", "nef-f", "--sketch-steps", "5", "--qe-context-dim", "0"],
        None,
    ),
}


def train(keys: list[str], args: argparse.Namespace) -> None:
    """Run the rows' trainings, ``args.parallel`` at a time."""
    waiting = [k for k in keys if not (folder(args.out, ROWS[k][1]) / "metrics.json").is_file()]
    run_trainings(
        {key: train_command(ROWS[key][1], args.epochs, args.seed, args.out, task="qe") for key in waiting},
        args.parallel,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("runs/qe-table"))
    parser.add_argument("--rows", nargs="+", choices=list(ROWS), default=list(ROWS))
    parser.add_argument("--parallel", type=int, default=2, help="trainings at a time (default 2)")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    if not args.report_only:
        train(args.rows, args)
    print(
        "| model | dev F1-MULT | dev F1-OK | dev F1-BAD | dev accuracy | best epoch | s/epoch | paper (test) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for key in args.rows:
        path = folder(args.out, ROWS[key][1]) / "metrics.json"
        if not path.is_file():
            continue
        metrics = json.loads(path.read_text())
        dev = metrics["dev"]
        name, _, paper = ROWS[key]
        print(
            f"| {name} | {100 * dev['f1_mult']:.2f} | {100 * dev['f1_ok']:.2f} | {100 * dev['f1_bad']:.2f} | "
            f"{100 * dev['accuracy']:.2f} | {metrics['best_epoch']}/{len(metrics['epochs'])} | "
            f"{metrics['seconds_per_epoch']:.0f} | {'' if paper is None else f'{paper:.2f}'} |"
        )


if __name__ == "__main__":
    main()
