"""How `easyfirst serve` should tag a gathered group of one-sentence requests: one batch, length-sorted
sub-batches of at most T padded words, or one sentence at a time (the NumPy fast path).

The sentences (UD English EWT dev through ``$EASYFIRST_DATA``, else the bundled sample) are cut into
groups of G in file order, as the clients of benchmarks/speed/serve_load.py send them, and every group is
tagged by each policy in turn (the order alternating between groups), so that the machine's noise
falls on all of them alike. Reported: tokens/s of each policy and its ratio to one batch (Tagger.tag
with tag's cap of 1,024 padded words), with one torch thread, as each worker of ``serve --workers``
runs.

    python benchmarks/speed/serve_groups.py --json benchmarks/results/serve_groups-cpu-2core-shared.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from serve_load import sentences_to_tag


def policies(tagger, caps: list[int]) -> dict:
    found = {"one batch (1,024)": lambda group: tagger.tag(group, batch_size=len(group), records=True)}
    found["one sentence at a time"] = lambda group: tagger.tag(group, batch_size=1, records=True)
    for cap in caps:
        found[f"sub-batches ≤ {cap}"] = lambda group, cap=cap: tagger.tag(
            group, batch_size=len(group), max_tokens=cap, records=True
        )
    return found


def measure(tagger, sentences: list[list[str]], size: int, caps: list[int], repeats: int) -> dict:
    tried = policies(tagger, caps)
    seconds = dict.fromkeys(tried, 0.0)
    for _ in range(repeats):
        for number, first in enumerate(range(0, len(sentences), size)):
            group = sentences[first : first + size]
            order = list(tried.items())
            for name, policy in order if number % 2 else reversed(order):
                start = time.perf_counter()
                policy(group)
                seconds[name] += time.perf_counter() - start
    tokens = repeats * sum(map(len, sentences))
    rates = {name: tokens / spent for name, spent in seconds.items()}
    base = rates["one batch (1,024)"]
    return {
        name: {"tokens_per_s": round(rate, 1), "ratio": round(rate / base, 3)} for name, rate in rates.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, nargs="+", default=[4, 16, 25])
    parser.add_argument("--caps", type=int, nargs="+", default=[64, 128, 256, 512])
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import torch

    from easyfirst import Tagger

    torch.set_num_threads(1)
    sentences, source = sentences_to_tag(args.sentences)
    tagger = Tagger.load()
    tagger.tag(sentences[:64], records=True)  # warm-up
    result = {
        "command": "python benchmarks/speed/serve_groups.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__} (1 thread)",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "sentences": source,
        "groups": {},
    }
    print("| group | policy | tokens/s | × one batch |\n|---:|---|---:|---:|")
    for size in args.groups:
        rows = measure(tagger, sentences, size, args.caps, args.repeats)
        result["groups"][str(size)] = rows
        for name, row in rows.items():
            print(f"| {size} | {name} | {row['tokens_per_s']:,.0f} | {row['ratio']:.2f} |", flush=True)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
