"""How `easyfirst serve` should tag a gathered group of one-sentence requests: one batch, length-sorted
sub-batches of at most T padded words, or one sentence at a time; where Numba is installed, with the
compiled tagging loops of backend numba loaded as the server loads them, and one batch through the
reference beside (the results of issue #46 had backend fused's batched loop there, since removed).

The sentences (UD English EWT dev through ``$EASYFIRST_DATA``, else the bundled sample) are cut into
groups of G in file order, as the clients of benchmarks/speed/serve_load.py send them, and every group is
tagged by each policy in turn (the order alternating between groups), so that the machine's noise
falls on all of them alike. Reported: tokens/s of each policy and its ratio to one batch (Tagger.tag
with tag's cap of 1,024 padded words), with one torch thread, as each worker of ``serve --workers``
runs.

    python benchmarks/speed/serve_groups.py --json benchmarks/results/serve_groups-cpu-2core-shared.json
    python benchmarks/speed/serve_groups.py --cpu --groups 8 16 32 --caps 256   # CPU time, and the whole file

``--cpu`` times each policy by the CPU time of this thread (time.thread_time) rather than the wall
clock, which other work on the machine stretches, and first tags the whole file as ``easyfirst tag``
does in each of its processes (batches of 256 sentences, at most 1,024 padded words): each row's
``× whole file`` is then what a server whose groups are that size can reach per core, before HTTP.
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


def policies(tagger, caps: list[int], reference: bool) -> dict:
    found = {"one batch (1,024)": lambda group: tagger.tag(group, batch_size=len(group))}
    if reference:  # the path where the compiled loops do not run: one batch through the reference
        found["one batch, reference"] = lambda group: forced(tagger, "reference", group)
    found["one sentence at a time"] = lambda group: tagger.tag(group, batch_size=1)
    for cap in caps:
        found[f"sub-batches ≤ {cap}"] = lambda group, cap=cap: tagger.tag(
            group, batch_size=len(group), max_tokens=cap
        )
    return found


def forced(tagger, backend: str, group):
    tagger.backend = backend
    try:
        return tagger.tag(group, batch_size=len(group))
    finally:
        tagger.backend = "auto"


CLOCK = time.perf_counter  # --cpu: time.thread_time


def measure(
    tagger, sentences: list[list[str]], size: int, caps: list[int], repeats: int, reference: bool
) -> dict:
    tried = policies(tagger, caps, reference)
    seconds = dict.fromkeys(tried, 0.0)
    for _ in range(repeats):
        for number, first in enumerate(range(0, len(sentences), size)):
            group = sentences[first : first + size]
            order = list(tried.items())
            for name, policy in order if number % 2 else reversed(order):
                start = CLOCK()
                policy(group)
                seconds[name] += CLOCK() - start
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
    parser.add_argument("--cpu", action="store_true", help="CPU time of this thread, and the whole file")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.cpu else time.perf_counter
    import torch

    from easyfirst import Tagger
    from easyfirst.backends.chooser import load_tagging_loops

    torch.set_num_threads(1)
    sentences, source = sentences_to_tag(args.sentences)
    tagger = Tagger.load()
    tagger.tag(sentences[:64])  # warm-up
    result = {
        "command": "python benchmarks/speed/serve_groups.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__} (1 thread)",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "sentences": source,
        "groups": {},
    }
    whole = None
    if args.cpu:  # the file as `easyfirst tag` tags it in one of its processes
        tagger.processes = 1
        start = CLOCK()
        for _ in range(args.repeats):
            tagger.tag(sentences, batch_size=256)
        whole = args.repeats * sum(map(len, sentences)) / (CLOCK() - start)
        result |= {"clock": "thread CPU time", "whole_file_tokens_per_s": round(whole, 1)}
        print(f"whole file, batches of 256: {whole:,.0f} tokens per CPU second")
    # the server's path: each group's sentences one by one in numba's compiled loops, where Numba is
    # installed (easyfirst serve loads them; `easyfirst tag`, measured above, does not)
    reference = loops = load_tagging_loops()
    result["numba_tagging_loops"] = loops
    if loops and args.cpu:
        start = CLOCK()
        for _ in range(args.repeats):
            tagger.tag(sentences, batch_size=256)
        rate = args.repeats * sum(map(len, sentences)) / (CLOCK() - start)
        result["whole_file_numba_tokens_per_s"] = round(rate, 1)
        print(f"whole file, batches of 256, numba's loops: {rate:,.0f} tokens per CPU second")
    print("| group | policy | tokens/s | × one batch | × whole file |\n|---:|---|---:|---:|---:|")
    for size in args.groups:
        rows = measure(tagger, sentences, size, args.caps, args.repeats, reference)
        result["groups"][str(size)] = rows
        for name, row in rows.items():
            if whole:
                row["ratio_to_whole_file"] = round(row["tokens_per_s"] / whole, 3)
            print(
                f"| {size} | {name} | {row['tokens_per_s']:,.0f} | {row['ratio']:.2f} | "
                f"{row.get('ratio_to_whole_file', float('nan')):.2f} |",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
