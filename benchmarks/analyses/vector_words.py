"""What a trained model gains from more of its vectors' words, without training again (issue #44).

    python benchmarks/analyses/vector_words.py en-ner --words 100000 200000 400000      # CoNLL-2003
    python benchmarks/analyses/vector_words.py en-upos --words 200000 400000           # UD English EWT
    python benchmarks/analyses/vector_words.py en-ner --coverage     # where the entity words' vectors are

A word that no training sentence has takes no gradient, so the rows of the vectors' words added to the
vocabulary are what training leaves them: as read (easyfirst.model.embedder keeps them beside the
trained table). Appending more of the set's words (its first K) to a trained model is therefore what
training with ``--pretrained-words K`` gives, up to the random draws and the epoch dev picks. Each K
is scored on the task's dev and test files of ``$EASYFIRST_DATA`` (the model's own data paths' file
names), one after another in one process; the result goes to benchmarks/results/vector-words/NAME.json.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch

from easyfirst.api import Tagger
from easyfirst.cli.common import task_of
from easyfirst.data.vectors import open_vectors

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "vector-words"
FILES = {  # the shared data's dev and test files, by task, and the training file
    "ner": ("ner/conll2003/eng.testa", "ner/conll2003/eng.testb", "ner/conll2003/eng.train"),
    "pos": (
        "ud/UD_English-EWT/en_ewt-ud-dev.conllu",
        "ud/UD_English-EWT/en_ewt-ud-test.conllu",
        "ud/UD_English-EWT/en_ewt-ud-train.conllu",
    ),
}


def add_vector_words(tagger: Tagger, vectors, count: int) -> int:
    """Append the first ``count`` words of ``vectors`` that ``tagger`` lacks, with their rows as read
    (the trained rows untouched: only the new words are looked up); returns how many were new."""
    vocabs, embedder = tagger.vocabs, tagger.model.embedder
    before = len(vocabs.words)
    added = vocabs.add_pretrained_words(vectors.first_words(count))
    extra = torch.zeros(added, embedder.words.embedding_dim)
    kept = embedder.vector_words if embedder.vector_words is not None else extra[:0]
    embedder.vector_words = torch.cat([kept, extra])
    new = {word: i for word, i in vocabs.words.stoi.items() if i >= before}
    embedder.load_pretrained(vectors, vocabs, found=vectors.lookup(new, vocabs.lowercase))
    return added


def scores(tagger: Tagger, data: Path) -> dict[str, float]:
    task, config = task_of(tagger)
    out = {}
    for split, file in zip(("dev", "test"), FILES[task.name][:2], strict=True):
        sentences = task.read(data / file, config)
        tagged = tagger.tag([s.words for s in sentences])
        report = task.scoring.score([s.tags for s in sentences], [t.tags for t in tagged])
        out[split] = report[task.scoring.metric]
    return out


def where(word: str, training: set[str], rank: int | None) -> str:
    """Which of coverage's four groups ``word`` falls in (``rank``: its place in the vectors, if any)."""
    if word in training:
        return "training"
    if rank is None:
        return "neither"
    return "first 50,000" if rank < 50_000 else "past 50,000"


def coverage(tagger: Tagger, vectors, data: Path) -> dict:
    """Per split, the share of the words inside entities (NER) or of all words (other tasks) that the
    training vocabulary has, that only the vectors' first 50,000 words have, that only their words past
    the 50,000th have, and that neither has (lower-cased as the model looks words up)."""
    task, config = task_of(tagger)
    lower = tagger.vocabs.lowercase
    training = {
        w.lower() if lower else w for s in task.read(data / FILES[task.name][2], config) for w in s.words
    }
    rank = {w: i for i, w in enumerate(vectors.first_words(10**9))}
    out = {}
    for split, file in zip(("dev", "test"), FILES[task.name][:2], strict=True):
        counts = dict.fromkeys(("training", "first 50,000", "past 50,000", "neither"), 0)
        for sentence in task.read(data / file, config):
            for word, tag in zip(sentence.words, sentence.tags, strict=True):
                if task.name == "ner" and tag == "O":
                    continue
                word = word.lower() if lower else word
                counts[where(word, training, rank.get(word))] += 1
        total = sum(counts.values())
        out[split] = {key: count / total for key, count in counts.items()} | {"words": total}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("model", help="a bundled model's name or a run folder")
    parser.add_argument("--words", type=int, nargs="+", default=[], help="the vectors' first K words")
    parser.add_argument("--coverage", action="store_true", help="where the words of dev and test are")
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = Path(os.environ.get("EASYFIRST_DATA", ROOT.parent / "shared" / "data"))
    tagger = Tagger.load(args.model)
    e = tagger.config.model.embedder
    vectors = open_vectors(e.pretrained)
    if args.coverage:
        for split, shares in coverage(tagger, vectors, data).items():
            print(split, {k: round(100 * v, 2) if k != "words" else v for k, v in shares.items()})
        return
    rows = [{"words": e.pretrained_words, "vocabulary": len(tagger.vocabs.words)} | scores(tagger, data)]
    print(rows[-1], flush=True)
    for count in sorted(args.words):
        add_vector_words(tagger, vectors, count)
        rows.append({"words": count, "vocabulary": len(tagger.vocabs.words)} | scores(tagger, data))
        print(rows[-1], flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = Path(args.model).name
    result = {"model": args.model, "vectors": e.pretrained, "rows": rows}
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
