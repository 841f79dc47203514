"""Where CoNLL-2003 test F1 is lost: entities seen in training against unseen ones, dev against test
(issue #36: the NER recipe stays about 6 F1 under its dev score on test, where published systems lose
about 3.5).

    python benchmarks/analyses/ner_unseen.py                                  # the bundled en-ner model
    python benchmarks/analyses/ner_unseen.py -m runs/ner-glove-s2 -m runs/ner-bilstm-crf-glove-s1
    python benchmarks/analyses/ner_unseen.py --report                         # the table from the kept JSON

An entity is "seen" when the same words with the same type are an entity of the training file. Per
model and split: F1 (seqeval, strict spans as the project scores them), the share of gold entities
that are unseen, the recall of seen and of unseen entities, and how many seen ones were missed and
which of those were found with their span under another type (``seen_retyped``, in the JSON); then the dev–test gap in recall taken
apart (:func:`gap_report`). Each model's result goes to benchmarks/results/ner-unseen/NAME.json;
``--report`` prints the Markdown tables from those files.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

from seqeval.metrics.sequence_labeling import get_entities

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "ner-unseen"
SPLITS = {"dev": "eng.testa", "test": "eng.testb"}


def entities(words: list[str], tags: list[str]) -> set[tuple[str, str, int, int]]:
    """The (type, words, start, end) of each BIO entity of one sentence."""
    return {(kind, " ".join(words[start : end + 1]), start, end) for kind, start, end in get_entities(tags)}


def measure(model: str, data: Path) -> dict:
    from easyfirst import Tagger
    from easyfirst.data.conll import read_conll
    from easyfirst.metrics import entity_report

    tagger = Tagger.load(model)
    known = {
        (kind, text) for s in read_conll(data / "eng.train") for kind, text, _, _ in entities(s.words, s.tags)
    }
    result = {"model": model, "splits": {}}
    for split, name in SPLITS.items():
        sentences = read_conll(data / name)
        predicted = [t.tags for t in tagger.tag([s.words for s in sentences])]
        counts = {"seen": [0, 0], "unseen": [0, 0]}  # gold entities, of which found
        retyped: Counter = Counter()  # seen entities found with their span and another type: gold → found
        for sentence, tags in zip(sentences, predicted, strict=True):
            found = entities(sentence.words, list(tags))
            spans = {(start, end): kind for kind, _, start, end in found}
            for entity in entities(sentence.words, sentence.tags):
                group = counts["seen" if entity[:2] in known else "unseen"]
                group[0] += 1
                group[1] += entity in found
                if entity[:2] in known and entity not in found and entity[2:] in spans:
                    retyped[f"{entity[0]} as {spans[entity[2:]]}"] += 1
        total = counts["seen"][0] + counts["unseen"][0]
        result["splits"][split] = {
            "f1": entity_report([s.tags for s in sentences], [list(t) for t in predicted])["f1"],
            "entities": total,
            "unseen_share": counts["unseen"][0] / total,
            "recall_seen": counts["seen"][1] / counts["seen"][0],
            "recall_unseen": counts["unseen"][1] / counts["unseen"][0],
            "seen_missed": counts["seen"][0] - counts["seen"][1],
            "seen_retyped": dict(retyped.most_common()),
        }
    return result


def report() -> str:
    lines = [
        "| model | split | F1 | entities | unseen | recall, seen | recall, unseen |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for path in sorted(RESULTS.glob("*.json")):
        result = json.loads(path.read_text())
        for split, s in result["splits"].items():
            lines.append(
                f"| {path.stem} | {split} | {100 * s['f1']:.2f} | {s['entities']:,} | "
                f"{100 * s['unseen_share']:.1f}% | {100 * s['recall_seen']:.2f} | {100 * s['recall_unseen']:.2f} |"
            )
    return "\n".join(lines)


def recall(share: float, seen: float, unseen: float) -> float:
    """The recall of all entities when a share ``share`` of them is unseen."""
    return (1 - share) * seen + share * unseen


def gap_report() -> str:
    """The dev–test gap in entity recall, taken apart: test's recall at dev's share of unseen entities
    (its own seen and unseen recalls, reweighted) says how much of the gap is test's larger share of
    new names, and the rest is each group found less often on test than on dev."""
    lines = [
        "| model | recall, dev | recall, test | test at dev's unseen share | gap from the share | "
        "gap within the groups (seen, unseen) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for path in sorted(RESULTS.glob("*.json")):
        dev, test = (json.loads(path.read_text())["splits"][split] for split in ("dev", "test"))
        on_dev, on_test = (
            recall(s["unseen_share"], s["recall_seen"], s["recall_unseen"]) for s in (dev, test)
        )
        mixed = recall(dev["unseen_share"], test["recall_seen"], test["recall_unseen"])
        within = (
            f"{100 * (on_dev - mixed):.2f} ({100 * (dev['recall_seen'] - test['recall_seen']):.2f}, "
            f"{100 * (dev['recall_unseen'] - test['recall_unseen']):.2f})"
        )
        lines.append(
            f"| {path.stem} | {100 * on_dev:.2f} | {100 * on_test:.2f} | {100 * mixed:.2f} | "
            f"{100 * (mixed - on_test):.2f} | {within} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-m", "--model", action="append", help="a model name or run folder (default: en-ner)")
    parser.add_argument("--report", action="store_true", help="print the table from the kept JSON only")
    args = parser.parse_args()
    if not args.report:
        data = Path(os.environ.get("EASYFIRST_DATA", ROOT.parent / "shared" / "data")) / "ner" / "conll2003"
        RESULTS.mkdir(parents=True, exist_ok=True)
        for model in args.model or ["en-ner"]:
            result = measure(model, data)
            (RESULTS / f"{Path(model).name}.json").write_text(json.dumps(result, indent=2) + "\n")
            print(f"{model}: kept in {RESULTS / Path(model).name}.json", file=sys.stderr)
    print(report())
    print()
    print(gap_report())


if __name__ == "__main__":
    main()
