"""``Tagger.tag`` inside a caller's process, with the other core idle and busy: words per CPU second of
this process (``time.process_time``: every thread's CPU, so a thread that spins waiting for another
counts), under two thread settings:

- ``torch``: ``Tagger.load(threads=None)`` in a process at torch's default, one intra-op thread per core
  (``--torch-threads``, default ``os.cpu_count()``): how the library tagged before it held its own count;
- ``library``: ``Tagger.load()``, the library's default (one thread during a call, set back after).

``busy``: a child process spinning in a loop (``while True: pass``) runs for the call, started before
and ended after it (it ends with this process too); ``idle``: nothing of ours runs beside the call. The
four take turns within a round (``--rounds``); each call tags the first ``--sentences`` sentences of
EWT dev (``$EASYFIRST_DATA``) in one call, after a warm-up. Printed: each one's words per CPU second
(the median of the rounds) and wall words per second, and the ratios measured in this run: busy ÷ idle
per setting (the goal: ≥ 0.8× for the library's default) and library ÷ torch per condition
(``--settings library`` times the library's default alone, which is quick). On a
machine shared with other work the "idle" core is not idle: the load average at the start and end is
recorded with the results.

    python benchmarks/speed/library_threads.py --json benchmarks/results/library-threads-cpu-2core-shared.json
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from easyfirst import Tagger
from easyfirst.data.conllu import read_conllu
from easyfirst.parallel.cores import processor


def ewt_dev() -> Path:
    root = Path(os.environ.get("EASYFIRST_DATA", "../shared/data"))
    return root / "ud" / "UD_English-EWT" / "en_ewt-ud-dev.conllu"


def _dies_with_parent() -> None:
    """In the child before it runs: the kernel sends it SIGKILL when this process ends, however it ends."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def start_busy() -> subprocess.Popen:
    """A child that keeps one core busy until it is ended."""
    child = subprocess.Popen(
        [sys.executable, "-c", "while True: pass"], preexec_fn=_dies_with_parent, stdin=subprocess.DEVNULL
    )
    time.sleep(0.3)  # running before the call starts
    return child


def stop(child: subprocess.Popen) -> None:
    child.kill()
    child.wait(timeout=10)


def timed(tagger: Tagger, sentences: list[list[str]]) -> tuple[float, float, list[list[str]]]:
    """Words per CPU second of this process and per wall second of one call, and its tags."""
    words = sum(map(len, sentences))
    cpu, wall = time.process_time(), time.perf_counter()
    tagged = tagger.tag(sentences)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return words / cpu, words / wall, [t.tags for t in tagged]


def measure(args) -> tuple[dict, dict]:
    sentences = [s.words for s in read_conllu(ewt_dev())][: args.sentences]
    torch.set_num_threads(args.torch_threads)  # the caller's process, at torch's default
    made = {"torch": lambda: Tagger.load(threads=None), "library": Tagger.load}
    taggers = {name: made[name]() for name in args.settings}
    for tagger in taggers.values():
        tagger.tag(sentences[:100])  # warm-up
    rates: dict[str, list[tuple[float, float]]] = {}
    tags = {}
    for _ in range(args.rounds):
        for condition in ("idle", "busy"):
            for name, tagger in taggers.items():
                child = start_busy() if condition == "busy" else None
                try:
                    cpu, wall, found = timed(tagger, sentences)
                finally:
                    if child is not None:
                        stop(child)
                rates.setdefault(f"{name} {condition}", []).append((cpu, wall))
                tags.setdefault(name, found)
                assert torch.get_num_threads() == args.torch_threads  # the caller's setting, as it was
    assert all(found == tags[args.settings[0]] for found in tags.values())
    return {key: [cpu for cpu, _ in found] for key, found in rates.items()}, {
        key: [wall for _, wall in found] for key, found in rates.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--torch-threads", type=int, default=os.cpu_count())
    parser.add_argument("--settings", nargs="+", choices=["torch", "library"], default=["torch", "library"])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    load_before = os.getloadavg()
    cpu, wall = measure(args)
    load_after = os.getloadavg()
    median = {key: statistics.median(values) for key, values in cpu.items()}
    ratios = {
        f"{name} busy / idle": median[f"{name} busy"] / median[f"{name} idle"] for name in args.settings
    }
    if len(args.settings) == 2:
        for condition in ("idle", "busy"):
            ratios[f"library / torch, {condition}"] = (
                median[f"library {condition}"] / median[f"torch {condition}"]
            )
    for key, values in cpu.items():
        walls = ", ".join(f"{v:,.0f}" for v in wall[key])
        print(
            f"{key:13} {median[key]:8,.0f} words per CPU second "
            f"({', '.join(f'{v:,.0f}' for v in values)}); wall words/s {walls}"
        )
    for key, value in ratios.items():
        print(f"{key:22} {value:.2f}x")
    print(f"load average (1 min) {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    if args.json:
        found = {
            "command": "python benchmarks/speed/library_threads.py " + " ".join(sys.argv[1:]),
            "machine": f"{processor()}, {os.cpu_count()} cores",
            "torch": torch.__version__,
            "sentences": args.sentences,
            "torch_threads": args.torch_threads,
            "words_per_cpu_second": cpu,
            "words_per_wall_second": wall,
            "median_words_per_cpu_second": median,
            "ratios": ratios,
            "load_average_before": load_before,
            "load_average_after": load_after,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        }
        args.json.write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
