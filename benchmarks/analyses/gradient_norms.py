"""Gradient norms of trained models on a data file: does training through the attention explode?

    python benchmarks/analyses/gradient_norms.py RUN [RUN ...] --data dev.conllu --sentences 320

For each run folder, the model (in training mode, dropout on, as during training) takes batches of
--batch-size sentences from the first --sentences sentences of --data, and the script prints the mean
loss and the median and largest global gradient norm over the batches, before any clipping (training
clips at `train.clip`, 5 by default: a norm far above it means the updates are scaled far down).
With --fresh, each run's configuration and vocabularies are used with freshly initialised weights
(seeded with --seed), to compare with the norms at the start of training.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch

from easyfirst.data.batching import encode, iterate_batches
from easyfirst.data.conllu import read_conllu
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.runs import load_model


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--sentences", type=int, default=320)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fresh", action="store_true", help="freshly initialised weights instead")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("| run | attention | mean loss | median grad norm | max grad norm |")
    print("|---|---|---:|---:|---:|")
    for run in args.runs:
        model, config, vocabs = load_model(run)
        torch.manual_seed(args.seed)
        if args.fresh:
            model = EasyFirstTagger(config.model, config.loss, vocabs)
        model.train()
        sentences = read_conllu(args.data, tag_column=config.data.tag_column)[: args.sentences]
        items = [encode(vocabs, s.words, s.tags) for s in sentences]
        losses, norms = [], []
        for batch in iterate_batches(items, args.batch_size):
            model.zero_grad(set_to_none=True)
            scores, _ = model(batch)
            loss = model.loss(scores, batch.tags)
            loss.backward()
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            norms.append(torch.sqrt(sum((g.double() ** 2).sum() for g in grads)).item())
            losses.append(loss.item())
        print(
            f"| {run.name} | {config.model.decoder.attention} | {statistics.fmean(losses):.3f} | "
            f"{statistics.median(norms):.3g} | {max(norms):.3g} |"
        )


if __name__ == "__main__":
    main()
