"""Hogwild scaling: words/s of `easyfirst train --workers K` for each K, in one run, on the same data
and seed, with the dev accuracy each reached (easyfirst.training.hogwild).

    python benchmarks/speed/workers.py --sentences 3000 --epochs 2 \\
        --json benchmarks/results/workers-cpu-2core.json

Reads UD English EWT through EASYFIRST_DATA: the first ``--sentences`` sentences of the training file
(written to ``--out``, outside the repository) are the training set, the full dev file the dev set. Each
K trains the POS default (NEF-F, N = L, one sentence per update, lr 0.05) for ``--epochs`` epochs from
the same seed in a fresh `python -m easyfirst train` process; words/s is the training words of an epoch
over that epoch's training seconds (dev evaluation and start-up not counted), as `train.log` reports
it. The K's run one after the other, in the order given, so give the machine to this script alone
(nothing else running) and repeat it to see the noise.

    python benchmarks/speed/workers.py --table benchmarks/results/hogwild-pos-ewt/seed{1,2,3}.json \
        --json benchmarks/results/hogwild-pos-ewt/table.json

prints the accuracy table of finished full runs instead (one `easyfirst train --task pos` run folder
per seed, or a copy of its metrics.json named seedK.json): each run's seed, workers, best epoch, dev
and test accuracy and seconds per epoch, and the mean ± sample standard deviation over the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from easyfirst.data.datasets import resolve_split
from easyfirst.tasks import get_task


def first_sentences(source: Path, count: int, target: Path) -> int:
    """Copy the first ``count`` sentences (blank-line separated blocks) of a CoNLL-U file; their words."""
    blocks = source.read_text(encoding="utf-8").split("\n\n")[:count]
    target.write_text("\n\n".join(blocks).strip("\n") + "\n\n", encoding="utf-8")
    return sum(
        1
        for block in blocks
        for line in block.splitlines()
        if line and not line.startswith("#") and line.split("\t")[0].isdigit()
    )


def train_command(
    workers: int, args: argparse.Namespace, train_file: Path, output: Path, *extra: str
) -> list[str]:
    """`python -m easyfirst train` of the POS default on ``train_file`` with ``workers`` processes."""
    dev = resolve_split(get_task("pos").dataset, "dev")
    return [
        *(sys.executable, "-m", "easyfirst", "train", "--task", "pos", "--train", str(train_file)),
        *("--dev", str(dev), "--workers", str(workers), "--epochs", str(args.epochs)),
        *("--seed", str(args.seed), "--overwrite", "--output", str(output), *extra),
    ]


def outcome(output: Path, command: list[str], wall: float) -> dict:
    """A finished run's per-epoch speeds and dev accuracy (its metrics.json)."""
    metrics = json.loads((output / "metrics.json").read_text())
    speeds = [row["tokens_per_second"] for row in metrics["epochs"]]
    return {
        "workers": metrics["workers"],
        "threads": metrics["threads"],
        "words_per_second": sum(speeds) / len(speeds),
        "words_per_second_by_epoch": speeds,
        "seconds_by_epoch": [row["seconds"] for row in metrics["epochs"]],
        "dev_accuracy_by_epoch": [row["dev_accuracy"] for row in metrics["epochs"]],
        "dev_accuracy": metrics["dev"]["accuracy"],
        "wall_seconds": wall,
        "command": " ".join(command[1:]),
    }


def train(workers: int, args: argparse.Namespace, train_file: Path) -> dict:
    """One `easyfirst train` run with ``workers`` processes; its per-epoch speeds and dev accuracy."""
    output = args.out / f"workers{workers}"
    command = train_command(workers, args, train_file, output)
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return outcome(output, command, time.perf_counter() - started)


def independent(args: argparse.Namespace, train_file: Path) -> list[dict]:
    """The machine without Hogwild: one single-process run (one torch thread) alone, then two such runs
    at once, sharing nothing; what the second core gives two processes that do not share a model."""
    rows = []
    for outputs in ([args.out / "alone"], [args.out / "together-a", args.out / "together-b"]):
        commands = [train_command(1, args, train_file, o, "--threads", "1") for o in outputs]
        started = time.perf_counter()
        processes = [subprocess.Popen(c, stdout=subprocess.DEVNULL) for c in commands]
        if any(p.wait() != 0 for p in processes):
            sys.exit("a training run failed")
        wall = time.perf_counter() - started
        rows += [
            dict(outcome(o, c, wall), at_once=len(outputs)) for o, c in zip(outputs, commands, strict=True)
        ]
    return rows


def table(folders: list[Path], json_path: Path | None) -> None:
    """The accuracy table of finished runs: run folders (their metrics.json and config.json), or kept
    copies of a run's metrics.json named ``seedK.json`` (benchmarks/results/hogwild-pos-ewt/)."""
    rows = []
    for folder in folders:
        if folder.is_file():
            metrics, seed = json.loads(folder.read_text()), folder.stem.removeprefix("seed")
        else:
            metrics = json.loads((folder / "metrics.json").read_text())
            seed = json.loads((folder / "config.json").read_text())["train"]["seed"]
        rows.append(
            {
                "run": str(folder),
                "seed": int(seed),
                "workers": metrics["workers"],
                "best_epoch": metrics["best_epoch"],
                "dev_accuracy": metrics["dev"]["accuracy"],
                "test_accuracy": metrics["test"]["accuracy"],
                "seconds_per_epoch": metrics["seconds_per_epoch"],
                "epochs": len(metrics["epochs"]),
            }
        )
    print("| seed | workers | epochs | best epoch | dev | test | s/epoch |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['seed']} | {r['workers']} | {r['epochs']} | {r['best_epoch']} | {100 * r['dev_accuracy']:.2f} | "
            f"{100 * r['test_accuracy']:.2f} | {r['seconds_per_epoch']:.0f} |"
        )
    summary = {}
    for key in ("dev_accuracy", "test_accuracy"):
        values = [100 * r[key] for r in rows]
        summary[key] = (statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0)
    print(
        f"mean ± sd over {len(rows)}: dev {summary['dev_accuracy'][0]:.2f} ± {summary['dev_accuracy'][1]:.2f}, "
        f"test {summary['test_accuracy'][0]:.2f} ± {summary['test_accuracy'][1]:.2f}"
    )
    if json_path:
        json_path.write_text(json.dumps({"rows": rows, "mean_sd_percent": summary}, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=3000, help="training sentences (from the top)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="the K's to measure")
    parser.add_argument("--out", type=Path, default=Path("runs/workers"), help="run folders")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--table", type=Path, nargs="+", default=None, help="finished run folders")
    parser.add_argument(
        "--independent", action="store_true", help="also: one single-process run alone, then two at once"
    )
    args = parser.parse_args()
    if args.table:
        return table(args.table, args.json)
    args.out.mkdir(parents=True, exist_ok=True)
    train_file = args.out / "train.conllu"
    words = first_sentences(resolve_split(get_task("pos").dataset, "train"), args.sentences, train_file)
    machine = {
        "node": platform.node(),
        "cpus": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)),
        "torch": torch.__version__,
        "load_average_before": os.getloadavg(),
    }
    print(
        f"{args.sentences} EWT training sentences ({words:,} words), {args.epochs} epochs, seed {args.seed}"
    )
    rows = [train(k, args, train_file) for k in args.workers]
    pairs = independent(args, train_file) if args.independent else []
    machine["load_average_after"] = os.getloadavg()
    base = rows[0]["words_per_second"]
    print("| workers | words/s | × first | dev accuracy |")
    print("|---:|---:|---:|---:|")
    for row in rows:
        row["speedup"] = row["words_per_second"] / base
        print(
            f"| {row['workers']} | {row['words_per_second']:,.0f} | {row['speedup']:.2f} | "
            f"{100 * row['dev_accuracy']:.2f} |"
        )
    for row in pairs:
        print(
            f"one process, one thread, {row['at_once']} at once: {row['words_per_second']:,.0f} words/s, "
            f"dev {100 * row['dev_accuracy']:.2f}"
        )
    if args.json:
        results = {
            "sentences": args.sentences,
            "words": words,
            "epochs": args.epochs,
            "seed": args.seed,
            "machine": machine,
            "rows": rows,
            "independent": pairs,
        }
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
