"""How long pretrained vectors take to load (issue #36): the named set glove-6b-50d read from its
package's own files, against the same 400,000 vectors written out as a GloVe text file, the way a user
had to before. Each does what `easyfirst train --pretrained` does with them: open the set, add its first
50,000 words to a vocabulary of UD English EWT's training words (lower-cased: the set is uncased), and
copy the rows of the vocabulary's words into an embedding table.

    python benchmarks/speed/vectors_load.py [--rounds 3] [--json benchmarks/results/vectors-load.json]

Needs the extra `vectors` (pip install 'easyfirst[vectors]') and EWT through EASYFIRST_DATA. The text
file is written once into a temporary folder (not timed) and removed afterwards. Each round times both,
taking turns; the fastest round of each is reported, with wall-clock and CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from easyfirst.data.conllu import read_conllu
from easyfirst.data.datasets import resolve_split
from easyfirst.data.vectors import open_vectors
from easyfirst.data.vocab import Vocabularies
from easyfirst.model.embedder import Embedder
from easyfirst.tasks import get_task


def load(source: str | Path, train: list) -> dict:
    """Time what training does with ``source``: open, vocabulary, embedding rows."""
    start, cpu = time.perf_counter(), time.process_time()
    vectors = open_vectors(source)
    vocabs = Vocabularies.build(((s.words, s.tags) for s in train), lowercase=vectors.uncased)
    vocabs.add_pretrained_words(vectors.first_words(50_000))
    covered = Embedder(vocabs, vectors.dim, 0).load_pretrained(vectors, vocabs)
    return {
        "wall_s": time.perf_counter() - start,
        "cpu_s": time.process_time() - cpu,
        "words": len(vocabs.words) - 2,
        "covered": covered,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    train = read_conllu(resolve_split(get_task("pos").dataset, "train"))
    named = open_vectors("glove-6b-50d")
    with tempfile.TemporaryDirectory() as folder:
        text = Path(folder) / "glove.6B.50d.txt"
        matrix = np.asarray(named.matrix)
        with open(text, "w", encoding="utf-8") as out:  # as Stanford's glove.6B.50d.txt: word v1 … v50
            for word, row in zip(named.words, matrix, strict=True):
                out.write(word + " " + " ".join(f"{x:.5g}" for x in row) + "\n")
        best: dict[str, dict] = {}
        for _ in range(args.rounds):
            for name, source in (("glove-6b-50d (package)", "glove-6b-50d"), ("GloVe text file", text)):
                found = load(source, train)
                if name not in best or found["wall_s"] < best[name]["wall_s"]:
                    best[name] = found
    results = {
        "machine": f"{platform.node()}: {platform.processor() or platform.machine()}",
        "rounds": args.rounds,
        "vectors": len(named.words),
        "loads": best,
    }
    for name, row in best.items():
        print(
            f"{name}: {row['wall_s']:.2f} s wall, {row['cpu_s']:.2f} s CPU; "
            f"{row['covered']:,} of {row['words']:,} words covered"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
