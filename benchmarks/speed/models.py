"""Tagging speed of several models on one file, as ratios to the first measured in the same run (issue
#44's "en-ner within 20% of the speed before": a model retrained with another recipe against the one it
replaces).

Each round tags the whole file with every model in turn (in this process, one torch thread, no pool,
records without probabilities, as `easyfirst tag` writes a file), after a warm-up of 50 sentences per
model; the rounds alternate the order, so that a neighbour's load falls on all of them alike. Reported:
words per CPU second of the call (time.thread_time: other work on a shared machine inflates it less than
the wall clock), each model's median over the rounds, and its ratio to the first model's median.

    python benchmarks/speed/models.py en-ner runs/ner-old --file $EASYFIRST_DATA/ner/conll2003/eng.testb
    python benchmarks/speed/models.py en-upos runs/pos --rounds 7 --json benchmarks/results/models-NAME.json
    python benchmarks/speed/models.py /tmp/en-ner-old RUN --parts   # and one call of each by part

A model is a bundled name (en-upos, en-ner) or a run or exported folder. The file is read by the first
model's task (CoNLL-U for POS, CoNLL columns for NER); by default EWT test or CoNLL-2003 eng.testb through
``$EASYFIRST_DATA``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

from easyfirst.parallel.cores import processor

DEFAULT_FILES = {"pos": "ud/UD_English-EWT/en_ewt-ud-test.conllu", "ner": "ner/conll2003/eng.testb"}


def read_words(config, path: Path) -> list[list[str]]:
    from easyfirst.tasks import get_task

    return [s.words for s in get_task(config.data.task).read(path, config.data)]


def timed_parts(tagger, sentences) -> dict[str, float]:
    """CPU seconds of one ``tag`` call, whole and by part: each part's function wrapped for the call (the
    batches' ids, the embedder, the BiLSTM, the decoder, the output layer, the best tags), so that the
    parts of two models compare; the wrappers cost a few microseconds a call."""
    from easyfirst.backends import chooser
    from easyfirst.tagging import pool

    spent: dict[str, float] = {}
    model = tagger.model
    targets = [
        (pool, "feature_rows", "ids"),
        (pool, "pack", "ids"),
        (model.embedder, "forward", "embedder"),
        (chooser.Plan, "encode", "BiLSTM"),
        (chooser.Plan, "decode", "decoder"),
        (model.output, "forward", "output layer"),
        (model, "predict", "best tags"),
    ]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in targets]
    spent.update((part, 0.0) for _, _, part in targets)  # printed in this order

    def wrapped(function, part):
        def call(*args, **kwargs):
            began = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[part] += time.thread_time() - began

        return call

    for (owner, name, part), (_, _, function) in zip(targets, originals, strict=True):
        setattr(owner, name, wrapped(function, part))
    try:
        began = time.thread_time()
        tagger.tag(sentences)
        spent["the call"] = time.thread_time() - began
    finally:
        for owner, name, function in originals:
            setattr(owner, name, function)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="bundled names or model folders; ratios are to the first")
    parser.add_argument(
        "--file", type=Path, help="the file to tag (default: the first model's task's test set)"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the measurements here")
    parser.add_argument(
        "--parts", action="store_true", help="then one call per model timed by part (CPU seconds)"
    )
    args = parser.parse_args()

    import torch

    from easyfirst import Tagger

    torch.set_num_threads(1)
    taggers = {name: Tagger.load(name) for name in args.models}
    config = next(iter(taggers.values())).config
    path = args.file or Path(os.environ["EASYFIRST_DATA"]) / DEFAULT_FILES[config.data.task]
    sentences = read_words(config, path)
    words = sum(map(len, sentences))
    for tagger in taggers.values():
        tagger.tag(sentences[:50])
    rates: dict[str, list[float]] = {name: [] for name in taggers}
    for r in range(args.rounds):
        order = list(taggers) if r % 2 == 0 else list(reversed(taggers))
        for name in order:
            began = time.thread_time()
            taggers[name].tag(sentences)
            rates[name].append(words / (time.thread_time() - began))
            print(f"round {r + 1}: {name}: {rates[name][-1]:,.0f} words per CPU second", flush=True)
    first = statistics.median(rates[args.models[0]])
    print(f"\n{path.name}: {len(sentences):,} sentences, {words:,} words; one torch thread")
    print(f"{'model':<40} {'median words/CPU s':>20} {'× first':>8}")
    for name, values in rates.items():
        print(f"{name:<40} {statistics.median(values):>20,.0f} {statistics.median(values) / first:>8.2f}")
    parts = {name: timed_parts(tagger, sentences) for name, tagger in taggers.items()} if args.parts else {}
    for name, spent in parts.items():
        print(f"\n{name}: CPU seconds of one call, by part")
        for part, seconds in spent.items():
            print(f"  {part:<14} {seconds:8.3f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "file": str(path),
                    "words": words,
                    "machine": f"{processor()}, {os.cpu_count()} cores",
                    "torch": torch.__version__,
                    "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "words_per_cpu_second": rates,
                    "ratio_to_first": {n: statistics.median(v) / first for n, v in rates.items()},
                    "parts_cpu_seconds": parts,
                },
                indent=1,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
