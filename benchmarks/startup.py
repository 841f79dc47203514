"""Start-up of the ``easyfirst`` command, this checkout against another, measured side by side.

Each round runs every command once in each checkout, alternating (so that a busy machine's load falls
on both alike), as whole processes (``python -m easyfirst ...`` with the checkout as the working
folder, so that its package is the one imported); the table gives the median wall time per command and
checkout, and ``import torch`` alone as the floor that no change to easyfirst moves.

    git worktree add --detach /tmp/base main
    python benchmarks/startup.py --base /tmp/base --rounds 10 --json benchmarks/results/startup-cpu-2core.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

COMMANDS = {
    "tag --text": ["-m", "easyfirst", "tag", "--text", "She reads a book. It is late."],
    "--version": ["-m", "easyfirst", "--version"],
    "tag --help": ["-m", "easyfirst", "tag", "--help"],
    "import torch": ["-c", "import torch"],
}


def seconds(args: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} in {cwd} failed: {done.stderr.decode()[-500:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="a checkout to compare with (git worktree)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", type=Path, help="write the times here")
    args = parser.parse_args()
    checkouts = {"base": args.base.resolve(), "this": ROOT}
    times = {name: {c: [] for c in checkouts} for name in COMMANDS}
    for _ in range(args.rounds):
        for name, command in COMMANDS.items():
            for checkout, folder in checkouts.items():
                times[name][checkout].append(seconds(command, folder))
    print(f"medians of {args.rounds} alternating runs, seconds")
    print(f"{'command':<14} {'base':>7} {'this':>7}")
    for name, by in times.items():
        print(f"{name:<14} {statistics.median(by['base']):>7.3f} {statistics.median(by['this']):>7.3f}")
    if args.json:
        commits = {
            c: subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"], cwd=f, capture_output=True, text=True
            ).stdout.strip()
            for c, f in checkouts.items()
        }
        result = {
            "machine": platform.processor() or platform.machine(),
            "python": platform.python_version(),
            "rounds": args.rounds,
            "commits": commits,
            "seconds": times,
            "medians": {n: {c: statistics.median(v) for c, v in by.items()} for n, by in times.items()},
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
