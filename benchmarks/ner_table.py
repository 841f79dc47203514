"""Train the English rows of the paper's Table 2 (CoNLL-2003 NER) with one budget and seed, and print
the README's results table (Markdown) from their metrics.json files.

    python benchmarks/ner_table.py --epochs 10 --seed 1 --out runs/ner-table          # all 8 rows
    python benchmarks/ner_table.py --rows nef-crf-f-5,bilstm-crf --epochs 10 ...       # some rows
    python benchmarks/ner_table.py --out runs/ner-table --report-only                  # table only

Each row is one `easyfirst train --task ner` run (configs/ner.toml's settings: dropout 0.3, the NER
word features, no pretrained vectors), selected on eng.testa (dev F1), reported on eng.testb. At most
``--jobs`` runs go side by side, one torch thread each, so seconds per epoch are comparable only
within a table. Rows not run (yet) are printed as such.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pos_table import run_trainings, train_command

ROWS = [
    ("bilstm", "BiLSTM", ["--model", "bilstm", "--no-crf"]),
    ("nef-s-5", "NEF-S, N = 5", ["--model", "nef-s", "--sketch-steps", "5", "--no-crf"]),
    ("nef-f-5", "NEF-F, N = 5", ["--model", "nef-f", "--sketch-steps", "5", "--no-crf"]),
    ("nef-f-L", "NEF-F, N = L", ["--model", "nef-f", "--sketch-steps", "L", "--no-crf"]),
    ("bilstm-crf", "BiLSTM-CRF", ["--model", "bilstm", "--crf"]),
    ("nef-crf-s-5", "NEF-CRF-S, N = 5", ["--model", "nef-s", "--sketch-steps", "5", "--crf"]),
    ("nef-crf-f-5", "NEF-CRF-F, N = 5", ["--model", "nef-f", "--sketch-steps", "5", "--crf"]),
    ("nef-crf-f-L", "NEF-CRF-F, N = L", ["--model", "nef-f", "--sketch-steps", "L", "--crf"]),
]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("runs/ner-table"))
    parser.add_argument(
        "--rows",
        default="",
        help="comma-separated row keys (default: all): " + ", ".join(k for k, _, _ in ROWS),
    )
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    chosen = [row for row in ROWS if not args.rows or row[0] in args.rows.split(",")]
    if args.rows and len(chosen) != len(args.rows.split(",")):
        sys.exit(f"unknown row in --rows; known: {', '.join(k for k, _, _ in ROWS)}")
    if not args.report_only:
        run_trainings(
            {
                key: train_command(flags, args.epochs, args.seed, args.out, "ner", output=args.out / key)
                for key, _, flags in chosen
            },
            args.jobs,
        )
    print("| model | dev F1 (eng.testa) | test F1 (eng.testb) | test P / R | best epoch | s/epoch |")
    print("|---|---:|---:|---:|---:|---:|")
    for key, name, _ in ROWS:
        path = args.out / key / "metrics.json"
        if not path.is_file():
            print(f"| {name} | not run | | | | |")
            continue
        m = json.loads(path.read_text())
        dev, test = m["dev"], m["test"]
        print(
            f"| {name} | {100 * dev['f1']:.2f} | {100 * test['f1']:.2f} | "
            f"{100 * test['precision']:.2f} / {100 * test['recall']:.2f} | "
            f"{m['best_epoch']}/{len(m['epochs'])} | {m['seconds_per_epoch']:.0f} |"
        )


if __name__ == "__main__":
    main()
