"""The reference BiLSTM's padded path in tagging against its packed one, in one process (issue #44).

Each round tags the whole file twice with one model, once with the reference encoder's padded path
switched off (``BiLSTMEncoder.padded`` replaced by ``packed``: ``nn.LSTM`` over packed sequences, as
training runs it) and once with it on (each direction over the padded batch, oneDNN's LSTM); the order
alternates between rounds, so that a neighbour's load falls on both. Only a model whose BiLSTM the
chooser gives to the reference (wider than numba's, such as en-ner's) takes either path; the decoder is
the chooser's in both. (Until backend fused was removed, the padded path was its encoder.) One torch
thread, records without probabilities; the memos of the words' ids are warm (a first call, untimed). Reported: words per CPU
second, medians over the rounds, and the ratio padded / packed; the tags of the two paths are compared.

    python benchmarks/speed/padded_bilstm.py en-ner --rounds 6
    python benchmarks/speed/padded_bilstm.py en-upos --file $EASYFIRST_DATA/ud/UD_English-EWT/en_ewt-ud-test.conllu
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import DEFAULT_FILES, read_words  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a bundled name or a model folder")
    parser.add_argument("--file", type=Path, help="the file to tag (default: the model's task's test set)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--json", type=Path, help="write the measurements here")
    args = parser.parse_args()

    import torch

    from easyfirst import Tagger
    from easyfirst.model.encoder import BiLSTMEncoder

    torch.set_num_threads(1)
    tagger = Tagger.load(args.model)
    path = args.file or Path(os.environ["EASYFIRST_DATA"]) / DEFAULT_FILES[tagger.config.data.task]
    sentences = read_words(tagger.config, path)
    words = sum(map(len, sentences))
    padded = BiLSTMEncoder.padded
    paths = {"packed": BiLSTMEncoder.packed, "padded": padded}
    rates: dict[str, list[float]] = {name: [] for name in paths}
    tags = {}
    try:
        for r in range(args.rounds + 1):  # round 0 untimed: the memos, torch's first calls
            for name in paths if r % 2 == 0 else reversed(paths):
                BiLSTMEncoder.padded = paths[name]
                began = time.thread_time()
                tags[name] = [t.tags for t in tagger.tag(sentences)]
                if r:
                    rates[name].append(words / (time.thread_time() - began))
    finally:
        BiLSTMEncoder.padded = padded
    medians = {name: statistics.median(values) for name, values in rates.items()}
    differ = sum(
        a != b for x, y in zip(tags["packed"], tags["padded"], strict=True) for a, b in zip(x, y, strict=True)
    )
    print(f"{path.name}: {len(sentences):,} sentences, {words:,} words; {args.model}; one torch thread")
    print(f"backend: {tagger.chosen_backend}")
    for name, median in medians.items():
        print(f"{name:<8} {median:>12,.0f} words per CPU second (median of {args.rounds})")
    print(f"padded / packed: {medians['padded'] / medians['packed']:.3f}; tags that differ: {differ}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        record = {"model": args.model, "file": str(path), "words": words, "rates": rates}
        record |= {"ratio": medians["padded"] / medians["packed"], "tags_differ": differ}
        args.json.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
