"""Evaluation metrics: token accuracy and per-tag precision/recall/F1; entity-level F1 (seqeval)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def tag_report(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict:
    """Accuracy (a fraction) and, per gold or predicted tag, precision, recall, F1 and support."""
    correct = total = 0
    tp, pred_count, gold_count = Counter(), Counter(), Counter()
    for gold_tags, pred_tags in zip(gold, predicted, strict=True):
        if len(gold_tags) != len(pred_tags):
            raise ValueError("gold and predicted sentences differ in length")
        for g, p in zip(gold_tags, pred_tags, strict=True):
            total += 1
            gold_count[g] += 1
            pred_count[p] += 1
            if g == p:
                correct += 1
                tp[g] += 1
    per_tag = {}
    for tag in sorted(set(gold_count) | set(pred_count)):
        precision = tp[tag] / pred_count[tag] if pred_count[tag] else 0.0
        recall = tp[tag] / gold_count[tag] if gold_count[tag] else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_tag[tag] = {"precision": precision, "recall": recall, "f1": f1, "support": gold_count[tag]}
    return {"accuracy": correct / total if total else 0.0, "tokens": total, "per_tag": per_tag}


def entity_report(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict:
    """Entity-level precision, recall and F1 (fractions) of BIO tags, micro-averaged and per entity
    type, with seqeval's default (CoNLL evaluation script) reading of tags; plus token accuracy.

    An entity counts as found only if its type and both boundaries match a gold entity.
    """
    from seqeval.metrics.sequence_labeling import get_entities, precision_recall_fscore_support

    gold, predicted = [list(s) for s in gold], [list(s) for s in predicted]
    report = tag_report(gold, predicted)
    types = sorted({kind for tags in (*gold, *predicted) for kind, _, _ in get_entities(tags)})
    entities = sum(len(get_entities(tags)) for tags in gold)
    if not types:
        return {
            "f1": 0.0,
            "precision": 0.0,
            "recall": 0.0,
            "entities": 0,
            "per_type": {},
            "accuracy": report["accuracy"],
            "tokens": report["tokens"],
        }
    micro = precision_recall_fscore_support(gold, predicted, average="micro", zero_division=0)
    per = precision_recall_fscore_support(gold, predicted, average=None, zero_division=0)
    per_type = {
        kind: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(n)}
        for kind, p, r, f, n in zip(types, *per, strict=True)
    }
    return {
        "f1": float(micro[2]),
        "precision": float(micro[0]),
        "recall": float(micro[1]),
        "entities": entities,
        "per_type": per_type,
        "accuracy": report["accuracy"],
        "tokens": report["tokens"],
    }
