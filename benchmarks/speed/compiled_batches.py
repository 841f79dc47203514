"""Training batches of many sentences on the CPU: the compiled path (backend numba's autograd Functions,
each sentence on its own rows) against the reference (nn.LSTM over packed sequences and the generic
step loop), in one process. It once decided that backend fused's batched torch loop, since removed, no
longer paid for itself on the CPU (docs/architecture.md, "Where the paper's equations live"; its
results, benchmarks/results/compiled-batches-*.json, name that loop "chooser").

    python benchmarks/speed/compiled_batches.py [--batch-size 16] [--batches 40] [--rounds 3] [--json FILE]

Reads EWT train through EASYFIRST_DATA; a fresh NEF-F model (the POS defaults, seed 1) takes the same
``--batches`` length-bucketed batches with each plan in turn, ``--rounds`` times (the turns alternate, so
that a shared machine's load falls on both), one torch thread. Reported: training words per CPU second
of this process, the median of the rounds, and the ratio compiled / reference.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import torch

from easyfirst.backends.chooser import BACKENDS, Plan
from easyfirst.config import Config
from easyfirst.data.batching import collate, encode
from easyfirst.data.conllu import read_conllu
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.training.loop import build_vocabularies
from easyfirst.training.optim import clip_gradients, make_optimizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    root = Path(os.environ["EASYFIRST_DATA"]) / "ud" / "UD_English-EWT"
    sentences = [s for s in read_conllu(root / "en_ewt-ud-train.conllu") if len(s.words) <= 50]
    config = Config.for_task("pos")
    vocabs = build_vocabularies(config, sentences)
    torch.manual_seed(1)
    model = EasyFirstTagger(config.model, config.loss, vocabs)
    model.train()
    chosen = sorted(sentences[: args.batch_size * args.batches], key=lambda s: len(s.words))
    items = [encode(vocabs, s.words, s.tags) for s in chosen]
    batches = [
        collate(items[i : i + args.batch_size], list(range(args.batch_size)))
        for i in range(0, len(items), args.batch_size)
    ]
    words = sum(len(s.words) for s in chosen)
    plans = {
        "reference": Plan(BACKENDS["reference"], BACKENDS["reference"]),
        "compiled": Plan(BACKENDS["numba"], BACKENDS["numba"]),
    }
    optimizer = make_optimizer("adam", 0.001, model)
    parameters = list(model.parameters())
    speeds: dict[str, list[float]] = {name: [] for name in plans}
    for _ in range(args.rounds):
        for name, plan in plans.items():
            start = time.process_time()
            for batch in batches:
                scores, _ = model(batch, plan=plan)
                loss = model.loss(scores, batch.tags, batch.mask, "mean")
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                clip_gradients(parameters, 5.0)
                optimizer.step()
            speeds[name].append(words / (time.process_time() - start))
    median = {name: statistics.median(found) for name, found in speeds.items()}
    result = {
        "batch_size": args.batch_size,
        "batches": len(batches),
        "words": words,
        "rounds": args.rounds,
        "words_per_cpu_second": speeds,
        "median": median,
        "compiled_over_reference": median["compiled"] / median["reference"],
        "torch": torch.__version__,
    }
    for name, value in median.items():
        print(f"{name:9} {value:9,.0f} words per CPU second (median of {args.rounds})")
    print(f"compiled / reference: {result['compiled_over_reference']:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
