"""The training-length cap per task (issue #29): train each set's default model twice, with the 50-word
cap (``[data] max_train_length = 50``, sentences longer than 50 words dropped from training) and with no
cap (NER's default; QE's too until these runs showed it scored lower), and keep both runs' metrics.json.

    python benchmarks/analyses/train_length.py --out runs/train-length                 # trains, one run at a time
    python benchmarks/analyses/train_length.py --out runs/train-length --sets conll03  # some sets
    python benchmarks/analyses/train_length.py --from benchmarks/results/train-length  # the table from kept scores
    python benchmarks/analyses/train_length.py --sets conll03 --seed 2 --out runs/train-length-seed2 \
        --save benchmarks/results/train-length-seed2                          # another seed
    python benchmarks/analyses/train_length.py --sets conll03 --from benchmarks/results/train-length{,-seed2}  # mean ± sd
    python benchmarks/analyses/train_length.py --count  # what a 50-word cap drops from each training set (no training)

Each run is `easyfirst train --task TASK` with the task's defaults (NER: those of then, the §5.2
values, NER_SECTION_5_2), one seed, 20 epochs, one torch
thread; the runs go one at a time. A run whose folder has a metrics.json is done; one with a checkpoint
but no metrics.json (interrupted) is continued with ``--resume``, so the command can be run again until
every run is done. Each finished run's metrics.json is copied to ``--save`` DIR/SET-CAP.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "paper"))  # pos_table.py

from pos_table import NER_SECTION_5_2, cell  # noqa: E402

# set → (task, files under $EASYFIRST_DATA)
SETS = {
    "ewt": ("pos", {"train": "ud/UD_English-EWT/en_ewt-ud-train.conllu",
                    "dev": "ud/UD_English-EWT/en_ewt-ud-dev.conllu",
                    "test": "ud/UD_English-EWT/en_ewt-ud-test.conllu"}),
    "conll03": ("ner", {"train": "ner/conll2003/eng.train", "dev": "ner/conll2003/eng.testa",
                        "test": "ner/conll2003/eng.testb"}),
    "wmt19": ("qe", {"train": "qe/wmt19-en-de/train", "dev": "qe/wmt19-en-de/dev"}),
    "wmt16": ("qe", {"train": "qe/wmt16-en-de/train", "dev": "qe/wmt16-en-de/dev"}),
}  # fmt: skip
# "default": no cap, the NER default ("default" names the files of the runs made when it was QE's too)
CAPS = {"default": ["--set", "data.max_train_length=0"], "cap50": ["--set", "data.max_train_length=50"]}
TRAINED = ["conll03", "wmt16", "wmt19"]  # POS keeps the paper's cap: its default run is the cap50 run
LIMIT = 50


def count(names: list[str]) -> dict[str, dict]:
    """Per set: its training sentences, how many are longer than 50 words, and their share (the words
    as the task reads them: a QE sentence's MT words)."""
    from easyfirst.config import Config
    from easyfirst.tasks import get_task

    counts = {}
    for name in names:
        task, files = SETS[name]
        config = Config.for_task(task)
        sentences = get_task(task).read(data_path(files["train"]), config.data)
        lengths = [len(s.words) for s in sentences if s.words]
        longer = sum(n > LIMIT for n in lengths)
        counts[name] = {
            "task": task,
            "file": files["train"],
            "sentences": len(lengths),
            "words": sum(lengths),
            "longest": max(lengths),
            f"longer_than_{LIMIT}": longer,
            "percent_dropped": round(100 * longer / len(lengths), 2),
            "percent_words_dropped": round(100 * sum(n for n in lengths if n > LIMIT) / sum(lengths), 2),
            "default_cap": config.data.max_train_length,
        }
    return counts


def data_path(path: str) -> Path:
    return Path(os.environ.get("EASYFIRST_DATA", "/work/shared/data")) / path


def command(name: str, cap: str, folder: Path, epochs: int, seed: int) -> list[str]:
    if (folder / "checkpoint.pt").is_file():
        return [sys.executable, "-m", "easyfirst", "train", "--resume", str(folder), "--threads", "1"]
    task, files = SETS[name]
    flags = [item for split, path in files.items() for item in (f"--{split}", str(data_path(path)))]
    flags += NER_SECTION_5_2 if task == "ner" else []  # the NER defaults when these runs were made
    return [
        sys.executable, "-m", "easyfirst", "train", "--task", task, *flags, *CAPS[cap],
        "--epochs", str(epochs), "--seed", str(seed), "--threads", "1", "--overwrite", "--output", str(folder),
    ]  # fmt: skip


def train(args: argparse.Namespace) -> None:
    for name in args.sets:
        for cap in CAPS:
            folder = args.out / f"{name}-{cap}"
            if not (folder / "metrics.json").is_file():
                run = command(name, cap, folder, args.epochs, args.seed)
                print(f"{time.strftime('%H:%M:%S')} {' '.join(run[1:])}", file=sys.stderr, flush=True)
                if subprocess.run(run, stdout=subprocess.DEVNULL).returncode:
                    sys.exit(f"training failed: see {folder / 'train.log'}")
            if args.save:
                args.save.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(folder / "metrics.json", args.save / f"{name}-{cap}.json")


def table(scores: dict[str, list[dict]]) -> str:
    """Per set and cap: the training sentences and those dropped, the best dev (and test) score, the
    best epoch and s/epoch; mean ± sd where several seeds were kept."""
    lines = [
        "| set | cap | seeds | training sentences | dropped | dev score | best dev | test | best epoch | s/epoch |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for key, runs in scores.items():
        name, cap = key.rsplit("-", 1)
        first, metric = runs[0], runs[0]["best_metric"]
        dev = [m["dev"][metric] for m in runs]
        test = [m.get("test", {}).get(metric) for m in runs]
        best = ", ".join(f"{m['best_epoch']}/{len(m['epochs'])}" for m in runs)
        lines.append(
            f"| {name} | {'50 words' if cap == 'cap50' else 'none'} | {len(runs)} | "
            f"{first['train_sentences']:,} | {first['dropped_long_sentences']} | {metric} | {cell(dev)} | "
            f"{cell(test)} | {best} | "
            f"{statistics.mean(m['seconds_per_epoch'] for m in runs):.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/train-length"))
    parser.add_argument("--sets", type=lambda s: s.split(","), default=None)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save", type=Path, default=Path("benchmarks/results/train-length"))
    parser.add_argument(
        "--from",
        dest="sources",
        type=Path,
        nargs="+",
        help="print the table from kept scores only (a folder per seed)",
    )
    parser.add_argument("--count", action="store_true", help="count what the cap drops; write counts.json")
    args = parser.parse_args()
    if args.count:
        counts = count(args.sets or list(SETS))
        args.save.mkdir(parents=True, exist_ok=True)
        (args.save / "counts.json").write_text(json.dumps(counts, indent=2) + "\n")
        print(json.dumps(counts, indent=2))
        return
    args.sets = args.sets or TRAINED
    if args.sources is None:
        train(args)
    folders = args.sources or [args.save]
    keys = [f"{name}-{cap}" for name in args.sets for cap in CAPS]
    scores = {
        k: [json.loads((f / f"{k}.json").read_text()) for f in folders if (f / f"{k}.json").is_file()]
        for k in keys
    }
    print(table({k: runs for k, runs in scores.items() if runs}))


if __name__ == "__main__":
    main()
