"""Two checkouts side by side: is one slower than the other? (issue #45's acceptance; issue #46's bisection)

Each round runs, for every tree in turn (its code through PYTHONPATH, one torch thread, a fresh process):

- ``tag``: the bundled en-upos model (the tree's own copy; ``--model DIR``: that model folder, or a
  bundled name, for every tree, so that only the code differs) tagging EWT test (``--file``: another,
  read by the model's task) in this process (no pool), in words per CPU second of the call (after a
  warm-up of 50 sentences);
- ``tag13``: the same in groups of 13 sentences, one call a group (what a server gathers from one-sentence
  requests; benchmarks/speed/serve_groups.py);
- ``train1``: one epoch at one sentence per update (the paper's regime, `--workers 1`) on the first
  ``--sentences`` sentences of EWT train, dev on 100 of EWT dev, in training words per second of the
  epoch (metrics.json);
- ``train16``: the same at 16 sentences per update;
- ``hogwild``: the same as ``train1`` with two Hogwild workers (`--workers 2`, one thread each), the
  paper's POS training on this project's two cores (issue #45's acceptance).

Rounds alternate the trees, so that a neighbour's load falls on both; the table gives each tree's
median and the ratio to the first tree. A ratio is of one run; run it again before trusting 5%.

    python benchmarks/speed/trees.py OLD_TREE NEW_TREE --rounds 5 --json benchmarks/results/trees-NAME.json
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

TAG = """
import json, os, sys, time, torch
torch.set_num_threads(1)
from easyfirst.api import Tagger
from easyfirst.data.conllu import read_conllu
tagger = Tagger.load(sys.argv[2] if len(sys.argv) > 2 else None)
tagger.processes = 1
try:  # the model's own task reads the file (CoNLL columns for NER); a tree before tasks read CoNLL-U
    from easyfirst.tasks import get_task
    read = get_task(tagger.config.data.task).read(sys.argv[1], tagger.config.data)
except ImportError:
    read = read_conllu(sys.argv[1])
sentences = [s.words for s in read]
import inspect  # a tree before issue #45's records takes no records=
asked = {"records": True} if "records" in inspect.signature(tagger.tag).parameters else {}
tagger.tag(sentences[:50], **asked)
group = int(os.environ["GROUP"]) or len(sentences)
start = time.process_time()
for first in range(0, len(sentences), group):
    tagger.tag(sentences[first : first + group], **asked)
import easyfirst
rate = sum(map(len, sentences)) / (time.process_time() - start)
print(json.dumps({"rate": rate, "package": easyfirst.__file__}))
"""


def ewt(name: str) -> Path:
    root = Path(os.environ.get("EASYFIRST_DATA", "../shared/data")).resolve()
    return root / "ud" / "UD_English-EWT" / f"en_ewt-ud-{name}.conllu"


def first_sentences(path: Path, count: int, out: Path) -> Path:
    """The first ``count`` sentences (blank-line separated: CoNLL-U, CoNLL) of a file, written to ``out``."""
    blocks = [b for b in path.read_text(encoding="utf-8").split("\n\n") if b.strip()][:count]
    out.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return out


def measure(tree: Path, what: str, files: dict[str, Path], scratch: Path, model: Path | None = None) -> float:
    # run in the tree: `python -c` and `-m` put the working directory first on sys.path, ahead of
    # PYTHONPATH, so run from another checkout they imported that one's package (every comparison
    # before 2026-11-29 that ran from a checkout timed that checkout against itself)
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "OMP_NUM_THREADS": "1",
        "GROUP": "13" if what == "tag13" else "0",
    }
    if what in ("tag", "tag13"):
        done = subprocess.run(
            [sys.executable, "-c", TAG, str(files["test"]), *([str(model)] if model else [])],
            env=env,
            cwd=tree,
            capture_output=True,
            text=True,
            check=True,
        )
        found = json.loads(done.stdout.strip().splitlines()[-1])
        if not Path(found["package"]).resolve().is_relative_to(tree):
            raise SystemExit(f"{tree}: the tagging process imported {found['package']}, another checkout's")
        return found["rate"]
    run = scratch / f"{tree.name}-{what}"
    batch, workers = {"train1": ("1", "1"), "train16": ("16", "1"), "hogwild": ("1", "2")}[what]
    command = [sys.executable, "-m", "easyfirst", "train", "--train", files["train"], "--dev", files["dev"]]
    command += ["--epochs", "1", "--threads", "1", "--workers", workers, "--batch-size", batch, "--seed", "1"]
    subprocess.run(
        [*map(str, command), "-o", str(run), "--overwrite"],
        env=env,
        cwd=tree,
        capture_output=True,
        check=True,
    )
    metrics = json.loads((run / "metrics.json").read_text())
    lines = files["train"].read_text(encoding="utf-8").splitlines()
    words = sum(
        line.split("\t", 1)[0].isdigit() for line in lines
    )  # word lines (not ranges, not empty nodes)
    return words / metrics["epochs"][0]["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path, help="checkouts to compare (the first is the base)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sentences", type=int, default=600)
    parser.add_argument(
        "--only",
        nargs="*",
        choices=["tag", "tag13", "train1", "train16", "hogwild"],
        default=["tag", "train1", "train16"],
    )
    parser.add_argument(
        "--model", type=Path, help="tag, tag13: this model folder (or bundled name) in every tree"
    )
    parser.add_argument(
        "--file", type=Path, help="tag, tag13: this file (default: EWT test), read by the model's task"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.model is not None and args.model.exists():  # a folder (else a bundled name)
        args.model = args.model.resolve()
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        files = {
            "test": args.file.resolve() if args.file else ewt("test"),
            "train": first_sentences(ewt("train"), args.sentences, scratch / "train.conllu"),
            "dev": first_sentences(ewt("dev"), 100, scratch / "dev.conllu"),
        }
        found = {str(t): {w: [] for w in args.only} for t in args.trees}
        for round_ in range(args.rounds):
            for what in args.only:
                for tree in args.trees if round_ % 2 == 0 else args.trees[::-1]:
                    found[str(tree)][what].append(measure(tree.resolve(), what, files, scratch, args.model))
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    base = str(args.trees[0])
    print(f"{'tree':<30}" + "".join(f"{w:>22}" for w in args.only))
    for tree, rates in found.items():
        cells = []
        for what in args.only:
            median = statistics.median(rates[what])
            ratio = median / statistics.median(found[base][what])
            cells.append(f"{median:>12,.0f} ({ratio:.3f}×)")
        print(f"{tree:<30}" + "".join(f"{c:>22}" for c in cells))
    if args.json:
        record = {"rounds": args.rounds, "model": str(args.model) if args.model else None, "rates": found}
        record |= {"file": str(args.file)} if args.file else {}
        args.json.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
