"""A tagger's errors on a CoNLL-U file: the most frequent (gold, predicted) confusions and the sentences
with errors, from the gold file and `easyfirst tag`'s output of it (the model card's "Known errors").

    easyfirst tag $EASYFIRST_DATA/ud/UD_English-EWT/en_ewt-ud-dev.conllu -o /tmp/dev.pred.conllu
    python benchmarks/analyses/tag_errors.py $EASYFIRST_DATA/ud/UD_English-EWT/en_ewt-ud-dev.conllu \
        /tmp/dev.pred.conllu --top 15 --sentences 25 --max-words 14

Multiword-token ranges and empty nodes are skipped, as `easyfirst evaluate` scores words only.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter

from easyfirst.data.conllu import read_conllu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gold")
    parser.add_argument("predicted", help="`easyfirst tag`'s output for the gold file")
    parser.add_argument("--top", type=int, default=15, help="confusions to list")
    parser.add_argument("--sentences", type=int, default=25, help="sentences with errors to show")
    parser.add_argument("--max-words", type=int, default=14, help="only sentences this short")
    parser.add_argument("--seed", type=int, default=0, help="which sentences are sampled")
    args = parser.parse_args()

    gold, predicted = read_conllu(args.gold), read_conllu(args.predicted)
    confusions, words, wrong = Counter(), 0, []
    for g, p in zip(gold, predicted, strict=True):
        if g.words != p.words:
            parser.error(
                f"{args.predicted}:{p.line}: not the gold file's sentence (tag the gold file itself)"
            )
        errors = [(w, a, b) for w, a, b in zip(g.words, g.tags, p.tags, strict=True) if a != b]
        confusions.update((a, b) for _, a, b in errors)
        words += len(g.words)
        if errors and len(g.words) <= args.max_words:
            wrong.append((" ".join(g.words), errors))
    total = sum(confusions.values())
    print(f"{words:,} words, {total:,} errors, accuracy {100 * (1 - total / words):.2f}%")
    print("\n| gold | predicted | words |\n|---|---|---:|")
    for (a, b), n in confusions.most_common(args.top):
        print(f"| {a} | {b} | {n} |")
    print()
    for sentence, errors in random.Random(args.seed).sample(wrong, min(args.sentences, len(wrong))):
        shown = ", ".join(f"{w} {a}→{b}" for w, a, b in errors)
        print(f"- {sentence}  ({shown})")


if __name__ == "__main__":
    main()
