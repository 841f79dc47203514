"""Train NEF-F (csoftmax, N = L) on UD English EWT with each output objective, one budget and seed, and
print the docs/studies/results.md table "Output objectives" (Markdown): α ∈ {1, 1.5, 2} × label smoothing
ε ∈ {0, 0.01, 0.1}, plus softmax tempering T = 2 for α = 1 (T = 1 is the α = 1, ε = 0 row).

    python benchmarks/paper/loss_table.py --epochs 2 --seed 1 --out runs/loss-table     # trains 10 runs
    python benchmarks/paper/loss_table.py --out runs/loss-table --report-only           # table from finished runs

Each row is one `easyfirst train --task pos` run with one torch thread; ``--jobs`` of them run at a time.
Test accuracy, expected calibration error (10 equal-width bins on the predicted tag's probability) and
the mean support size of the output distributions are those of the best dev epoch's model, as written
to its metrics.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pos_table import BATCHED, folder, run_trainings, train_command

LOSSES = [("softmax", "1"), ("entmax15", "1.5"), ("sparsemax", "2")]
ROWS = [
    (alpha, epsilon, "1", ["--loss", loss, "--label-smoothing", epsilon])
    for loss, alpha in LOSSES
    for epsilon in ("0", "0.01", "0.1")
] + [("1", "0", "2", ["--loss", "softmax", "--label-smoothing", "0", "--temperature", "2"])]
# training order: the ε = 0 row of each α first, so that a table cut short still compares the losses
RUN_ORDER = [0, 1, 6, 3, 2, 8, 5, 9, 7, 4]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (one thread each)")
    parser.add_argument("--out", type=Path, default=Path("runs/loss-table"))
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    if not args.report_only:
        # a row whose metrics.json exists is done: rerunning the command continues an interrupted table
        waiting = [ROWS[i][-1] for i in RUN_ORDER]
        waiting = [flags for flags in waiting if not (folder(args.out, flags) / "metrics.json").is_file()]
        nef_f = ["--model", "nef-f", "--attention", "csoftmax"]
        run_trainings(
            {
                " ".join(flags): train_command(
                    [*nef_f, *flags],
                    args.epochs,
                    args.seed,
                    args.out,
                    output=folder(args.out, flags),
                    regime=BATCHED,
                )
                for flags in waiting
            },
            args.jobs,
        )
    print("| α | ε | T | dev acc. | test acc. | test ECE | test mean support | s/epoch |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for alpha, epsilon, temperature, flags in ROWS:
        path = folder(args.out, flags) / "metrics.json"
        if not path.is_file():  # --report-only while runs are still going or after one failed
            print(f"| {alpha} | {epsilon} | {temperature} | not finished | | | | |")
            continue
        metrics = json.loads(path.read_text())
        test = metrics["test"]
        print(
            f"| {alpha} | {epsilon} | {temperature} | {100 * metrics['dev']['accuracy']:.2f} | "
            f"{100 * test['accuracy']:.2f} | {100 * test['ece']:.2f} | {test['mean_support']:.2f} | "
            f"{metrics['seconds_per_epoch']:.0f} |"
        )


if __name__ == "__main__":
    main()
