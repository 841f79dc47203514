"""Train BiLSTM, NEF-S N = 5 and NEF-F N = 5 on WMT19 en-de word-level QE (train → dev) with one budget and
seed, predicting MT word, gap and source tags, and print the README's results table (Markdown) from
their metrics.json files.

    python benchmarks/paper/qe19_table.py --epochs 10 --seed 1 --out runs/qe19          # trains
    python benchmarks/paper/qe19_table.py --dropout 0.3 --out runs/qe19-d03              # another dropout
    python benchmarks/paper/qe19_table.py --lr 0.02 --out runs/qe19-lr0.02               # another learning rate
    python benchmarks/paper/qe19_table.py --out runs/qe19 --report-only                  # table only
    python benchmarks/paper/qe19_table.py --save benchmarks/results/qe19 --report-only   # and keep the scores
    python benchmarks/paper/qe19_table.py --from benchmarks/results/qe19                 # table from kept scores
    python benchmarks/paper/qe19_table.py --seeds benchmarks/results/qe19 benchmarks/results/qe19-seed2 \
        benchmarks/results/qe19-seed3                                                # BiLSTM vs NEF-F per seed

Each row is one `easyfirst train --task qe` run on `$EASYFIRST_DATA/qe/wmt19-en-de/{train,dev}` with the
task's defaults (BAD words weighted 5, BAD gaps 10, BAD source words 5; gap and source heads on, since
the data has 2N+1 tags and source tags; best epoch by dev target F1-MULT, words and gaps together). At
most ``--parallel`` runs go at a time, one torch thread each. Rows whose run folder already has a
metrics.json are not trained again. ``--save DIR`` copies each finished run's metrics.json (small JSON) to
DIR/ROW.json, from which ``--from DIR`` rebuilds the table without the run folders.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from pos_table import run_trainings, train_command

ROWS = {
    "bilstm": ("BiLSTM (N = 0)", ["--model", "bilstm"]),
    "nef-s-5": ("NEF-S, N = 5", ["--model", "nef-s", "--sketch-steps", "5"]),
    "nef-f-5": ("NEF-F, N = 5", ["--model", "nef-f", "--sketch-steps", "5"]),
}
PARTS = (("words", ""), ("gaps", "gaps_"), ("target", "target_"), ("source", "source_"))


def data_flags() -> list[str]:
    root = Path(os.environ.get("EASYFIRST_DATA", "/work/shared/data")) / "qe" / "wmt19-en-de"
    return ["--train", str(root / "train"), "--dev", str(root / "dev")]


def train(keys: list[str], args: argparse.Namespace) -> None:
    waiting = [k for k in keys if not (args.out / k / "metrics.json").is_file()]
    extra = data_flags() + [f"--set={assignment}" for assignment in args.set]
    for flag, value in (("--dropout", args.dropout), ("--lr", args.lr)):
        extra += [] if value is None else [flag, str(value)]
    commands = {
        key: train_command(
            ROWS[key][1] + extra, args.epochs, args.seed, args.out, task="qe", output=args.out / key
        )
        for key in waiting
    }
    run_trainings(commands, args.parallel)


def table(metrics: dict[str, dict]) -> str:
    """The README table: per row, F1-MULT and MCC of MT words, gaps, target (words + gaps) and source."""
    head = "| model | " + " | ".join(f"{part} F1-MULT | {part} MCC" for part, _ in PARTS)
    head += " | gaps F1-BAD | best epoch | target F1-MULT at the last epoch | s/epoch |"
    lines = [head, "|---|" + "---:|" * (2 * len(PARTS) + 4)]
    best = max(m["dev"]["target_f1_mult"] for m in metrics.values())
    for key, m in metrics.items():
        dev = m["dev"]
        cells = []
        for part, prefix in PARTS:
            mult = f"{100 * dev[prefix + 'f1_mult']:.2f}"
            cells += [f"**{mult}**" if part == "target" and dev["target_f1_mult"] == best else mult]
            cells += [f"{100 * dev[prefix + 'mcc']:.2f}"]
        lines.append(
            f"| {ROWS[key][0]} | " + " | ".join(cells) + f" | {100 * dev['gaps_f1_bad']:.2f} | "
            f"{m['best_epoch']}/{len(m['epochs'])} | {100 * m['epochs'][-1]['dev_target_f1_mult']:.2f} | "
            f"{m['seconds_per_epoch']:.0f} |"
        )
    return "\n".join(lines)


def seeds_table(folders: list[Path]) -> str:
    """Per kept-scores folder (one seed each): the BiLSTM's and NEF-F N = 5's target F1-MULT (best epoch),
    NEF-F's lead over the BiLSTM of the same seed, and gaps F1-BAD; then the mean ± standard deviation
    over the folders and in how many NEF-F is at or above the BiLSTM (issue #16's acceptance check)."""
    import statistics

    keys = ("bilstm", "nef-f-5")
    lines = [
        "| seed | BiLSTM target F1-MULT | NEF-F N = 5 target F1-MULT | NEF-F − BiLSTM | BiLSTM gaps F1-BAD "
        "| NEF-F gaps F1-BAD |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    scores: dict[str, list[float]] = {key: [] for key in keys}
    for folder in folders:
        runs = {key: json.loads((folder / f"{key}.json").read_text()) for key in keys}
        seed = runs["bilstm"].get("seed", "")
        cells = []
        for key in keys:
            scores[key].append(100 * runs[key]["dev"]["target_f1_mult"])
            cells.append(f"{scores[key][-1]:.2f} ({runs[key]['best_epoch']})")
        cells.append(f"{scores['nef-f-5'][-1] - scores['bilstm'][-1]:+.2f}")
        cells += [f"{100 * runs[key]['dev']['gaps_f1_bad']:.2f}" for key in keys]
        lines.append(f"| {seed or folder.name} | " + " | ".join(cells) + " |")
    if len(folders) > 1:
        leads = [nef - bilstm for bilstm, nef in zip(scores["bilstm"], scores["nef-f-5"], strict=True)]
        spread = [f"{statistics.mean(v):.2f} ± {statistics.stdev(v):.2f}" for v in scores.values()]
        spread.append(f"{statistics.mean(leads):+.2f} ± {statistics.stdev(leads):.2f}")
        ahead = sum(lead >= 0 for lead in leads)
        lines.append(f"| mean ± sd | {spread[0]} | {spread[1]} | {spread[2]} | | |")
        lines.append(f"| NEF-F ≥ BiLSTM | | | {ahead} of {len(leads)} seeds | | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("runs/qe19"))
    parser.add_argument("--rows", nargs="+", choices=list(ROWS), default=list(ROWS))
    parser.add_argument("--dropout", type=float, help="--dropout of every row (default: the task's, 0.1)")
    parser.add_argument("--lr", type=float, help="--lr of every row (default: the task's, 0.1)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help="--set of every row"
    )
    parser.add_argument("--parallel", type=int, default=2, help="trainings at a time (default 2)")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--save", type=Path, help="copy each finished run's metrics.json to SAVE/ROW.json")
    parser.add_argument("--from", dest="source", type=Path, help="build the table from SAVE/ROW.json files")
    parser.add_argument("--seeds", nargs="+", type=Path, help="kept-scores folders, one per seed: compare")
    args = parser.parse_args()
    if args.seeds:
        print(seeds_table(args.seeds))
        return
    if args.source is None and not args.report_only:
        train(args.rows, args)
    found = {}
    for key in args.rows:
        path = args.source / f"{key}.json" if args.source else args.out / key / "metrics.json"
        if path.is_file():
            found[key] = json.loads(path.read_text())
            if args.save:  # the run's metrics.json, with its seed (from config.json) for --seeds
                config = json.loads((path.parent / "config.json").read_text())
                args.save.mkdir(parents=True, exist_ok=True)
                kept = {"seed": config["train"]["seed"], **found[key]}
                (args.save / f"{key}.json").write_text(json.dumps(kept, indent=2) + "\n")
    if found:
        print(table(found))


if __name__ == "__main__":
    main()
