"""Evaluation metrics: token accuracy and per-tag precision/recall/F1."""

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


def qe_report(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict:
    """Word-level QE scores (WMT16): F1 of OK, F1 of BAD, F1-MULT = F1_OK × F1_BAD, and accuracy.

    F1-MULT, the official WMT16 word-level score, is the product of the two classes' F1 (each 0 when
    the class is never predicted or never gold). All values are fractions.
    """
    report = tag_report(gold, predicted)
    f1 = {tag: report["per_tag"].get(tag, {"f1": 0.0})["f1"] for tag in ("OK", "BAD")}
    return {
        "f1_mult": f1["OK"] * f1["BAD"],
        "f1_ok": f1["OK"],
        "f1_bad": f1["BAD"],
        "accuracy": report["accuracy"],
        "tokens": report["tokens"],
        "per_tag": report["per_tag"],
    }
