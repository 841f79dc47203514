"""Threads that do not spin (issue #46): a NER training alone and two side by side, under each thread
setting, in training words per second (metrics.json: the epoch's training words over its seconds).

A run: ``easyfirst train --task ner --pretrained glove-6b-50d`` with the classic recipe's shape (2 BiLSTM
layers of 100 units, Adam, 32 sentences per update) for one epoch on the first ``--sentences`` sentences of
CoNLL-2003 train, dev on 300 of testa. Settings:

- ``torch``: ``--threads 0`` (torch's choice: one per core) with the OpenMP runtime's default waiting
  (threads spin before they sleep): what training did before issue #46;
- ``passive``: the same threads with ``OMP_WAIT_POLICY=PASSIVE`` (waiting threads sleep at once);
- ``one``: ``--threads 1``;
- ``default``: the flags left out, whatever the checkout's default is now.

Each setting runs alone, then as two copies started together. Printed: words/s of each, and each
copy's ratio to the ``one`` setting alone (issue #46's goal: two side by side each ≥ 0.8× one alone at
1 thread). Settings take turns within a round; ``--rounds`` repeats.

    python benchmarks/speed/threads.py --rounds 2 --json benchmarks/results/threads-cpu-2core.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from trees import first_sentences  # this folder is on the path (python benchmarks/speed/threads.py)

SETTINGS = {
    "torch": (["--threads", "0"], {"OMP_WAIT_POLICY": None}),
    "passive": (["--threads", "0"], {"OMP_WAIT_POLICY": "PASSIVE"}),
    "one": (["--threads", "1"], {"OMP_WAIT_POLICY": None}),
    "default": ([], {}),
}
RECIPE = ["--task", "ner", "--pretrained", "glove-6b-50d", "--encoder-layers", "2", "--hidden-dim", "100"]
RECIPE += ["--set", 'train.optimizer="adam"', "--lr", "0.002", "--batch-size", "32", "--epochs", "1"]


def conll(name: str) -> Path:
    return Path(os.environ.get("EASYFIRST_DATA", "../shared/data")) / "ner" / "conll2003" / name


def start(setting: str, files: dict[str, Path], run: Path) -> subprocess.Popen:
    flags, variables = SETTINGS[setting]
    env = {**os.environ}
    env.pop("OMP_NUM_THREADS", None)
    for key, value in variables.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    command = [sys.executable, "-m", "easyfirst", "train", "--train", str(files["train"]), "--dev"]
    command += [str(files["dev"]), *RECIPE, *flags, "-o", str(run), "--overwrite"]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def words_per_second(run: Path, train: Path) -> float:
    metrics = json.loads((run / "metrics.json").read_text())
    lines = train.read_text(encoding="utf-8").splitlines()
    words = sum(bool(line.strip()) and not line.startswith("-DOCSTART-") for line in lines)
    return words / metrics["epochs"][0]["seconds"]


def together(setting: str, copies: int, files: dict[str, Path], scratch: Path) -> list[float]:
    """Words/s of ``copies`` trainings of ``setting`` started at once."""
    runs = [scratch / f"{setting}-{copies}-{k}" for k in range(copies)]
    processes = [start(setting, files, run) for run in runs]
    for process in processes:
        _, error = process.communicate()
        if process.returncode:
            raise SystemExit(f"{setting}: easyfirst train failed\n{error.decode()[-2000:]}")
    return [words_per_second(run, files["train"]) for run in runs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=3000)
    parser.add_argument("--settings", nargs="*", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    found: dict[str, dict[str, list[float]]] = {s: {"alone": [], "pair": []} for s in args.settings}
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        files = {
            "train": first_sentences(conll("eng.train"), args.sentences, scratch / "train.txt"),
            "dev": first_sentences(conll("eng.testa"), 300, scratch / "dev.txt"),
        }
        for round_ in range(args.rounds):
            order = args.settings if round_ % 2 == 0 else args.settings[::-1]
            for setting in order:
                found[setting]["alone"] += together(setting, 1, files, scratch)
                found[setting]["pair"] += together(setting, 2, files, scratch)
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    base = statistics.median(found["one"]["alone"]) if "one" in found else None
    print(f"{'setting':<10}{'alone words/s':>16}{'each of two':>16}{'two / one alone':>18}")
    for setting, rates in found.items():
        alone, pair = statistics.median(rates["alone"]), statistics.median(rates["pair"])
        ratio = f"{min(rates['pair']) / base:.2f}× (worst)" if base else "-"
        print(f"{setting:<10}{alone:>16,.0f}{pair:>16,.0f}{ratio:>18}")
    if args.json:
        record = {"sentences": args.sentences, "recipe": RECIPE, "rounds": args.rounds, "rates": found}
        args.json.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
