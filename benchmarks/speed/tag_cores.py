"""`easyfirst tag` with its defaults (every core: easyfirst.tagging.pool) against the same command on one
core (`taskset -c 0`), on a CoNLL-U file of about ``--words`` words; wall-clock seconds and whether the
two outputs are byte for byte the same.

    python benchmarks/speed/tag_cores.py --words 100000 --rounds 2 \\
        --json benchmarks/results/tag-cores-cpu-2core.json

The file is the first sentences of UD English EWT's training set (through EASYFIRST_DATA) up to
``--words`` words, written to ``--out`` (outside the repository); the model is the bundled one unless
``--model``. The two commands take turns for ``--rounds`` rounds; each time includes starting Python and
loading the model, as a user's command does, and that start alone is timed on a one-sentence file.
The package's bytecode is compiled first, as pip compiles an installed package's: the machines here set
PYTHONDONTWRITEBYTECODE, under which an editable install would compile its modules at every start.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from easyfirst.data.datasets import resolve_split
from easyfirst.tasks import get_task


def first_words(source: Path, words: int, target: Path) -> tuple[int, int]:
    """The first sentences of ``source`` up to ``words`` words, to ``target``: (sentences, words)."""
    kept, count = [], 0
    for block in source.read_text(encoding="utf-8").split("\n\n"):
        if count >= words or not block.strip():
            break
        kept.append(block)
        count += sum(1 for line in block.splitlines() if line and line.split("\t")[0].isdigit())
    target.write_text("\n\n".join(kept) + "\n\n", encoding="utf-8")
    return len(kept), count


def compile_package() -> None:
    """Write the bytecode of the easyfirst that ``python -m easyfirst`` runs from here."""
    where = "import easyfirst, os; print(os.path.dirname(easyfirst.__file__))"
    package = subprocess.run([sys.executable, "-c", where], capture_output=True, text=True, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", package.stdout.strip()], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--model", default=None, help="model folder (default: the bundled one)")
    parser.add_argument("--out", type=Path, default=Path("runs/tag-cores"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if shutil.which("taskset") is None:
        sys.exit("tag_cores.py needs taskset (util-linux) for the one-core run")
    args.out.mkdir(parents=True, exist_ok=True)
    source = args.out / "input.conllu"
    sentences, words = first_words(resolve_split(get_task("pos").dataset, "train"), args.words, source)
    small = args.out / "one-sentence.conllu"
    first_words(source, 1, small)
    compile_package()
    model = ["-m", args.model] if args.model else []
    commands = {"one core": ["taskset", "-c", "0"], "defaults": []}
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    startup: dict[str, list[float]] = {name: [] for name in commands}
    load = [os.getloadavg()]
    for _ in range(args.rounds):
        for name, prefix in commands.items():
            for file, times in ((source, seconds), (small, startup)):  # startup: Python, torch, the model
                output = args.out / f"{name.replace(' ', '-')}-{file.stem}.conllu"
                started = time.perf_counter()
                command = [
                    *prefix,
                    sys.executable,
                    "-m",
                    "easyfirst",
                    "tag",
                    str(file),
                    *model,
                    "-o",
                    str(output),
                ]
                subprocess.run(command, check=True)
                times[name].append(time.perf_counter() - started)
    load.append(os.getloadavg())
    same = filecmp.cmp(args.out / "one-core-input.conllu", args.out / "defaults-input.conllu", shallow=False)
    best = {name: min(times) for name, times in seconds.items()}
    fixed = {name: min(times) for name, times in startup.items()}
    speedup = best["one core"] / best["defaults"]
    tagging = (best["one core"] - fixed["one core"]) / (best["defaults"] - fixed["defaults"])
    print(f"{sentences} sentences, {words:,} words; cores available: {len(os.sched_getaffinity(0))}")
    for name, times in seconds.items():
        print(
            f"{name:>9}: " + ", ".join(f"{t:.1f} s" for t in times) + f"  ({words / best[name]:,.0f} words/s)"
        )
    print(f"defaults / one core: {speedup:.2f}×; outputs byte for byte the same: {same}")
    print(f"starting (a one-sentence file): {fixed}; without it, defaults / one core: {tagging:.2f}×")
    if args.json:
        results = {
            "sentences": sentences,
            "words": words,
            "rounds": args.rounds,
            "seconds": seconds,
            "words_per_second": {name: words / t for name, t in best.items()},
            "speedup": speedup,
            "startup_seconds": startup,
            "speedup_without_startup": tagging,
            "identical_output": same,
            "commit": subprocess.run(  # of the code that ran: the working directory's
                ["git", "describe", "--always", "--dirty"], capture_output=True, text=True
            ).stdout.strip(),
            "commands": {
                name: " ".join([*p, "python -m easyfirst tag FILE", *model]) for name, p in commands.items()
            },
            "machine": {
                "node": platform.node(),
                "cpus": os.cpu_count(),
                "affinity": len(os.sched_getaffinity(0)),
                "load_average": load,
            },
        }
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
