"""Tags and probabilities of the bundled en-upos on UD English EWT dev + test (through $EASYFIRST_DATA):
the reference (backend forced, batches of 256 and one sentence at a time) against backend numba's loops
(batches of 256, groups of 13 as the server gathers them, one sentence at a time). Prints, for each
pair, how many sentences got other tags and the largest difference of a probability. (Its results of
issue #46 compared backend fused's batches, since removed, in the place of the reference's.)

    python benchmarks/speed/numba_tagging_exact.py > benchmarks/results/numba-tagging-exact-issue46-DATE.json
"""

from __future__ import annotations

import json
import os


def compare(x: list, y: list) -> dict:
    return {
        "sentences_with_other_tags": sum(p.tags != q.tags for p, q in zip(x, y, strict=True)),
        "max_probability_difference": max(
            float((p.probabilities - q.probabilities).abs().max())
            for p, q in zip(x, y, strict=True)
            if p.tokens
        ),
    }


def main() -> None:
    import torch

    from easyfirst import Tagger
    from easyfirst.backends.chooser import load_tagging_loops
    from easyfirst.data.conllu import read_conllu

    torch.set_num_threads(1)
    data = os.path.join(os.environ["EASYFIRST_DATA"], "ud", "UD_English-EWT", "en_ewt-ud-")
    sentences = [s.words for part in ("dev", "test") for s in read_conllu(data + part + ".conllu")]
    tagger = Tagger.load("en-upos")

    def tag(batch_size: int = 256, group: int | None = None) -> list:
        size, found = group or len(sentences), []
        for first in range(0, len(sentences), size):
            chunk = sentences[first : first + size]
            found += tagger.tag(chunk, probabilities=True, batch_size=batch_size)
        return found

    tagger.backend = "reference"
    before = {"whole": tag(), "one": tag(batch_size=1)}
    tagger.backend = "auto"
    assert load_tagging_loops(tagger.model), "Numba is not installed"
    after = {"whole": tag(), "groups13": tag(13, group=13), "one": tag(batch_size=1)}
    result = {"sentences": len(sentences), "tokens": sum(map(len, sentences))}
    for b, x in before.items():
        for a, y in after.items():
            result[f"{b} (reference) vs {a} (numba)"] = compare(x, y)
    result["reference: whole vs one at a time"] = compare(before["whole"], before["one"])
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
