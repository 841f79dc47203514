"""What a transformer's vectors cost (issue #61): tagging words per CPU second with and without
``--transformer all-minilm-l6-v2``, the memory the transformer adds to a tagging process, and what a
frozen run spends computing each training sentence's vectors once.

Two POS models that differ only in the transformer are trained for one epoch on the first
``--sentences`` sentences of EWT train (their weights do not matter for speed), in processes of their own
(``--threads 1``); the training logs give the time the frozen run spent on the vectors and the MB it
kept. Then this process (one torch thread) loads both and tags the first ``--tag`` sentences of EWT dev
with each in turn, ``--rounds`` times, measuring CPU seconds (``time.process_time``): the printed ratio is
of two measurements made in one run. Memory: the growth of this process's peak RSS when the model
with the transformer is loaded after the static one (and has tagged).

    EASYFIRST_DATA=/work/shared/data OMP_NUM_THREADS=1 python benchmarks/speed/transformer.py \\
        --json benchmarks/results/transformer-speed-cpu-2core-shared.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from easyfirst.parallel.cores import processor

TRANSFORMER = "all-minilm-l6-v2"


def ewt(split: str) -> Path:
    root = Path(os.environ.get("EASYFIRST_DATA", "../shared/data"))
    return root / "ud" / "UD_English-EWT" / f"en_ewt-ud-{split}.conllu"


def first_blocks(path: Path, count: int) -> list[str]:
    return path.read_text(encoding="utf-8").strip().split("\n\n")[:count]


def train(folder: Path, train_file: Path, dev_file: Path, extra: list[str]) -> dict:
    command = [sys.executable, "-m", "easyfirst", "train", "--task", "pos", "--train", str(train_file)]
    command += ["--dev", str(dev_file), "--epochs", "1", "--threads", "1", "-o", str(folder), *extra]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    metrics = json.loads((folder / "metrics.json").read_text())
    out = {"train_seconds_per_epoch": metrics["seconds_per_epoch"]}
    warmed = re.search(
        r"the vectors of ([\d,]+) sentences computed in ([\d.]+) s.*?\(([\d,]+) MB", done.stderr
    )
    if warmed:
        out["vectors_sentences"] = int(warmed[1].replace(",", ""))
        out["vectors_seconds"] = float(warmed[2])
        out["vectors_cache_mb"] = int(warmed[3].replace(",", ""))
    return out


def words_of(blocks: list[str]) -> list[list[str]]:
    rows = [[line.split("\t") for line in b.splitlines() if not line.startswith("#")] for b in blocks]
    return [[r[1] for r in sentence if r[0].isdigit()] for sentence in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=300, help="training sentences (one epoch)")
    parser.add_argument("--tag", type=int, default=400, help="EWT dev sentences tagged per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    from easyfirst.api import Tagger

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "train.conllu").write_text(
            "\n\n".join(first_blocks(ewt("train"), options.sentences)) + "\n\n"
        )
        (folder / "dev.conllu").write_text("\n\n".join(first_blocks(ewt("dev"), 100)) + "\n\n")
        trained = {
            name: train(folder / name, folder / "train.conllu", folder / "dev.conllu", extra)
            for name, extra in (("static", []), ("minilm", ["--transformer", TRANSFORMER]))
        }
        sentences = words_of(first_blocks(ewt("dev"), options.tag))
        words = sum(map(len, sentences))
        static = Tagger.load(folder / "static")
        static.tag(sentences[:8], processes=1)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        minilm = Tagger.load(folder / "minilm")
        minilm.tag(sentences[:8], processes=1)
        grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        seconds: dict[str, list[float]] = {"static": [], "minilm": []}
        for _ in range(options.rounds):
            for name, tagger in (("static", static), ("minilm", minilm)):
                started = time.process_time()
                tagger.tag(sentences, processes=1)
                seconds[name].append(time.process_time() - started)
    speed = {name: words / statistics.median(s) for name, s in seconds.items()}
    result = {
        "machine": f"{os.cpu_count()}-core {processor()}, torch {torch.__version__}",
        "command": "OMP_NUM_THREADS=1 python benchmarks/speed/transformer.py " + " ".join(sys.argv[1:]),
        "transformer": TRANSFORMER,
        "tagged_sentences": len(sentences),
        "tagged_words": words,
        "cpu_seconds": seconds,
        "words_per_cpu_second": speed,
        "minilm_over_static": speed["minilm"] / speed["static"],
        "peak_rss_growth_mb_loading_minilm": grown_mb,
        "training": trained,
    }
    print(json.dumps(result, indent=2))
    if options.json:
        options.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
