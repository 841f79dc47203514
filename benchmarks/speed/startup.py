"""Start-up of the ``easyfirst`` command, this checkout against another, measured side by side.

Each round runs every command once in each checkout, alternating (so that a busy machine's load falls
on both alike), as whole processes (``python -m easyfirst ...`` with the checkout as the working
folder, so that its package is the one imported); the table gives the median wall time per command and
checkout (and the CPU time, user + system, which a busy machine's load inflates less), and
``import torch`` alone as the floor that no change to easyfirst moves.

    git worktree add --detach /tmp/base main
    python benchmarks/speed/startup.py --base /tmp/base --rounds 10 --json benchmarks/results/startup-cpu-2core.json
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

COMMANDS = {
    "tag --text": ["-m", "easyfirst", "tag", "--text", "She reads a book. It is late."],
    "--version": ["-m", "easyfirst", "--version"],
    "tag --help": ["-m", "easyfirst", "tag", "--help"],
    "import torch": ["-c", "import torch"],
}


def seconds(args: list[str], cwd: Path) -> tuple[float, float]:
    """The wall time and the CPU time (user + system, the process and its children) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True)
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} in {cwd} failed: {done.stderr.decode()[-500:]}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="a checkout to compare with (git worktree)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", type=Path, help="write the times here")
    args = parser.parse_args()
    checkouts = {"base": args.base.resolve(), "this": ROOT}
    times = {name: {c: [] for c in checkouts} for name in COMMANDS}
    cpu = {name: {c: [] for c in checkouts} for name in COMMANDS}
    for _ in range(args.rounds):
        for name, command in COMMANDS.items():
            for checkout, folder in checkouts.items():
                wall, used = seconds(command, folder)
                times[name][checkout].append(wall)
                cpu[name][checkout].append(used)
    print(f"medians of {args.rounds} alternating runs, seconds: wall (CPU, user + system)")
    print(f"{'command':<14} {'base':>15} {'this':>15}")
    for name, by in times.items():
        cells = [f"{statistics.median(by[c]):.3f} ({statistics.median(cpu[name][c]):.3f})" for c in checkouts]
        print(f"{name:<14} {cells[0]:>15} {cells[1]:>15}")
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
            "wall_seconds": times,
            "cpu_seconds": cpu,
            "wall_medians": {n: {c: statistics.median(v) for c, v in by.items()} for n, by in times.items()},
            "cpu_medians": {n: {c: statistics.median(v) for c, v in by.items()} for n, by in cpu.items()},
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
