"""Train the English rows of the paper's Table 2 (CoNLL-2003 NER) with one budget and seed, and print
the README's results table (Markdown) from their metrics.json files.

    python benchmarks/paper/ner_table.py --epochs 10 --seed 1 --out runs/ner-table          # all 8 rows
    python benchmarks/paper/ner_table.py --rows nef-crf-f-5,bilstm-crf --epochs 10 ...       # some rows
    python benchmarks/paper/ner_table.py --out runs/ner-table --report-only                  # table only
    python benchmarks/paper/ner_table.py --out runs/ner-table --report-only --keep DIR       # and keep JSON
    python benchmarks/paper/ner_table.py --out benchmarks/results/ner20-now-s1 --report-only # from kept JSON
    python benchmarks/paper/ner_table.py --rows bilstm-crf,nef-crf-f-5 --dropout 0.5 ...     # another dropout
    python benchmarks/paper/ner_table.py --rows nef-crf-f-5,bilstm-crf --epochs 20 --seeds 1,2,3 \
        --out 'runs/ner20-s{seed}'               # several seeds: a table per seed, then mean ± sd

Each row is one `easyfirst train --task ner` run with the paper's §5.2 values (NER_SECTION_5_2: the
task's defaults before issue #44; dropout 0.3), the NER word features and no pretrained vectors,
selected on eng.testa (dev F1), reported on eng.testb. At most ``--jobs`` runs go side by side, one
torch thread each, so seconds per epoch are comparable only within a table. Rows not run (yet) are
printed as such.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pos_table import NER_SECTION_5_2, run_trainings, train_command

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
# run only when named in --rows: N = 5 as earlier versions ran it, where a sentence shorter than 5 words
# still runs 5 steps (a fresh unit of attention budget every L steps); the rows above run min(5, L)
# steps (configs/ner.toml: Table 2's "maximum number of sketch steps", as the paper's own code does)
EXTRA_ROWS = [
    (
        "nef-crf-f-5fixed",
        "NEF-CRF-F, N = 5 beyond L",
        ["--model", "nef-f", "--sketch-steps", "5", "--steps-beyond-length", "--crf"],
    ),
]


def seed_folder(out: Path, seed: int, several: bool) -> Path:
    """The runs of one seed: ``out`` with ``{seed}`` filled in, else ``out`` (one seed) or ``out/seed-S``."""
    if "{seed}" in str(out):
        return Path(str(out).format(seed=seed))
    return out / f"seed-{seed}" if several else out


def read_metrics(folder: Path, key: str) -> dict | None:
    """Row ``key``'s metrics: a run folder's ``folder/key/metrics.json``, or one kept by ``--keep`` as
    ``folder/key.json`` (benchmarks/results/ner20-now-s1/, so a fresh clone rebuilds the table)."""
    for path in (folder / key / "metrics.json", folder / f"{key}.json"):
        if path.is_file():
            return json.loads(path.read_text())
    return None


def keep(folders: dict[int, Path], kept: Path, rows: list, several: bool) -> None:
    """Copy each finished row's metrics.json to ``kept/ROW.json`` (``{seed}`` in ``kept`` filled in)."""
    for seed, folder in folders.items():
        target = seed_folder(kept, seed, several)
        for key, _, _ in rows:
            metrics = folder / key / "metrics.json"
            if metrics.is_file():
                target.mkdir(parents=True, exist_ok=True)
                (target / f"{key}.json").write_text(metrics.read_text())
                print(f"kept {target / f'{key}.json'}", file=sys.stderr)


def print_table(out: Path, rows: list) -> None:
    print("| model | dev F1 (eng.testa) | test F1 (eng.testb) | test P / R | best epoch | s/epoch |")
    print("|---|---:|---:|---:|---:|---:|")
    for key, name, _ in rows:
        m = read_metrics(out, key)
        if m is None:
            print(f"| {name} | not run | | | | |")
            continue
        dev, test = m["dev"], m["test"]
        print(
            f"| {name} | {100 * dev['f1']:.2f} | {100 * test['f1']:.2f} | "
            f"{100 * test['precision']:.2f} / {100 * test['recall']:.2f} | "
            f"{m['best_epoch']}/{len(m['epochs'])} | {m['seconds_per_epoch']:.0f} |"
        )


def mean_sd(values: list[float]) -> str:
    """``mean ± sample sd`` (the mean alone for one value)."""
    mean = sum(values) / len(values)
    if len(values) == 1:
        return f"{mean:.2f}"
    sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
    return f"{mean:.2f} ± {sd:.2f}"


def print_summary(folders: dict[int, Path], rows: list) -> None:
    """Mean ± sample standard deviation of dev and test F1 over the seeds each row was run with."""
    print(
        f"| model | seeds | dev F1 mean ± sd | test F1 mean ± sd | test F1 per seed ({', '.join(map(str, folders))}) |"
    )
    print("|---|---:|---:|---:|---|")
    for key, name, _ in rows:
        runs = {seed: read_metrics(folder, key) for seed, folder in folders.items()}
        done = {seed: m for seed, m in runs.items() if m is not None}
        if not done:
            continue

        per_seed = ", ".join(f"{100 * m['test']['f1']:.2f}" if m else "–" for m in runs.values())
        dev, test = ([100 * m[split]["f1"] for m in done.values()] for split in ("dev", "test"))
        print(f"| {name} | {len(done)} | {mean_sd(dev)} | {mean_sd(test)} | {per_seed} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--seeds",
        default="",
        help="comma-separated seeds (instead of --seed); the runs of seed S go to --out with {seed} "
        "replaced by S, or to OUT/seed-S",
    )
    parser.add_argument("--out", type=Path, default=Path("runs/ner-table"))
    parser.add_argument(
        "--rows",
        default="",
        help="comma-separated row keys (default: the paper's eight): "
        + ", ".join(k for k, _, _ in ROWS + EXTRA_ROWS),
    )
    parser.add_argument("--dropout", type=float, help="every row's dropout (default: §5.2's 0.3)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time")
    parser.add_argument("--report-only", action="store_true", help="the table from --out's files")
    parser.add_argument(
        "--keep",
        type=Path,
        help="copy each finished row's metrics.json to KEEP/ROW.json ({seed} as in --out), which "
        "--report-only --out KEEP reads back",
    )
    args = parser.parse_args()
    known = ROWS + EXTRA_ROWS
    chosen = [row for row in known if row[0] in args.rows.split(",")] if args.rows else ROWS
    if args.rows and len(chosen) != len(args.rows.split(",")):
        sys.exit(f"unknown row in --rows; known: {', '.join(k for k, _, _ in known)}")
    extra = [] if args.dropout is None else ["--dropout", str(args.dropout)]
    try:
        seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else [args.seed]
    except ValueError:
        sys.exit(f"--seeds: comma-separated integers, not {args.seeds!r}")
    folders = {seed: seed_folder(args.out, seed, len(seeds) > 1) for seed in seeds}
    if not args.report_only:
        run_trainings(
            {
                f"{key} (seed {seed})": train_command(
                    flags + extra,
                    args.epochs,
                    seed,
                    args.out,
                    "ner",
                    output=folders[seed] / key,
                    regime=NER_SECTION_5_2,
                )
                for seed in seeds
                for key, _, flags in chosen
            },
            args.jobs,
        )
    if args.keep:
        keep(folders, args.keep, chosen, len(seeds) > 1)
    for seed, folder in folders.items():
        if len(seeds) > 1:
            print(f"\nseed {seed} ({folder}):\n")
        print_table(folder, ROWS + [row for row in chosen if row in EXTRA_ROWS])
    if len(seeds) > 1:
        print(f"\nover seeds {', '.join(map(str, seeds))}:\n")
        print_summary(folders, chosen)


if __name__ == "__main__":
    main()
