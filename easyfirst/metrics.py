"""Evaluation metrics: token accuracy, per-tag precision/recall/F1, entity-level F1 (seqeval), calibration
(ECE) and sparsity."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import torch


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


def expected_calibration_error(confidence: torch.Tensor, correct: torch.Tensor, bins: int = 10) -> float:
    """ECE over equal-width confidence bins: Σ_b (n_b / n) · |accuracy_b − mean confidence_b|.

    ``confidence`` ``(N,)``: the probability the model gives its predicted tag; ``correct`` ``(N,)``
    bool. Bin b holds confidences in ((b − 1)/bins, b/bins]; a confidence of exactly 0 goes to bin 1.
    """
    if confidence.numel() == 0:
        return 0.0
    confidence = confidence.double().flatten()
    correct = correct.double().flatten()
    index = (torch.ceil(confidence * bins).long() - 1).clamp(0, bins - 1)
    count = torch.zeros(bins, dtype=torch.float64).index_add_(0, index, torch.ones_like(confidence))
    gap = torch.zeros(bins, dtype=torch.float64).index_add_(0, index, correct - confidence)
    return float(gap.abs().sum() / count.sum())


def mean_support(probabilities: torch.Tensor) -> float:
    """Mean number of tags with probability > 0 per word: ``probabilities`` ``(N, K)``."""
    if probabilities.numel() == 0:
        return 0.0
    return float((probabilities > 0).sum(-1).double().mean())


def distribution_report(
    probabilities: Sequence[torch.Tensor], predicted: Sequence[torch.Tensor], gold: Sequence[torch.Tensor]
) -> dict:
    """``ece`` and ``mean_support`` over sentences: per sentence ``(n, K)`` output distributions and
    ``(n,)`` predicted and gold tag ids (a gold id the model does not have, e.g. −100, counts as wrong).
    """
    if not probabilities:
        return {"ece": 0.0, "mean_support": 0.0}
    p = torch.cat(list(probabilities)).float()
    y_hat, y = torch.cat(list(predicted)), torch.cat(list(gold))
    confidence = p.gather(1, y_hat.unsqueeze(1)).squeeze(1)
    return {"ece": expected_calibration_error(confidence, y_hat == y), "mean_support": mean_support(p)}


def qe_report(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict:
    """Word-level QE scores (WMT16): F1 of OK, F1 of BAD, F1-MULT = F1_OK × F1_BAD, and accuracy.

    F1-MULT, the official WMT16 word-level score, is the product of the two classes' F1 (each 0 when
    the class is never predicted or never gold); MCC is Matthews' correlation coefficient (see
    :func:`binary_scores`). All values are fractions.
    """
    report = tag_report(gold, predicted)
    f1 = {tag: report["per_tag"].get(tag, {"f1": 0.0})["f1"] for tag in ("OK", "BAD")}
    return {
        "f1_mult": f1["OK"] * f1["BAD"],
        "f1_ok": f1["OK"],
        "f1_bad": f1["BAD"],
        "mcc": binary_scores(gold, predicted)["mcc"],
        "accuracy": report["accuracy"],
        "tokens": report["tokens"],
        "per_tag": report["per_tag"],
    }


def binary_scores(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict:
    """The WMT word-level scores of OK/BAD tags pooled over all sentences: ``f1_ok``, ``f1_bad``,
    ``f1_mult`` = F1-OK × F1-BAD and ``mcc``, Matthews' correlation coefficient (WMT20's primary word-level
    score), (TP·TN − FP·FN) / √((TP + FP)(TP + FN)(TN + FP)(TN + FN)) with BAD as the positive class
    (0 when a factor of the denominator is 0); plus ``tokens``, the number of tags scored."""
    import math

    counts = Counter()
    for gold_tags, pred_tags in zip(gold, predicted, strict=True):
        if len(gold_tags) != len(pred_tags):
            raise ValueError("gold and predicted sentences differ in length")
        counts.update(zip(gold_tags, pred_tags, strict=True))
    tp, fn = counts["BAD", "BAD"], counts["BAD", "OK"]
    fp, tn = counts["OK", "BAD"], counts["OK", "OK"]
    f1_bad = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    f1_ok = 2 * tn / (2 * tn + fn + fp) if tn else 0.0
    denominator = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    mcc = (tp * tn - fp * fn) / math.sqrt(denominator) if denominator else 0.0
    return {
        "f1_mult": f1_ok * f1_bad,
        "f1_ok": f1_ok,
        "f1_bad": f1_bad,
        "mcc": mcc,
        "tokens": sum(counts.values()),
    }


# the parts of a WMT18–20 word-level QE output that are scored, each with F1-OK, F1-BAD, F1-MULT and MCC:
# the MT words (unprefixed report keys, as for WMT16), the gaps, the target (MT words and gaps together:
# WMT19's target score) and the source words
QE_PARTS = {"words": "", "gaps": "gaps_", "target": "target_", "source": "source_"}
QE_SCORES = ("f1_mult", "f1_ok", "f1_bad", "mcc")


def qe_heads_report(
    gold_words: Sequence[Sequence[str]],
    predicted_words: Sequence[Sequence[str]],
    gold: dict[str, Sequence[Sequence[str]]],
    predicted: dict[str, Sequence[Sequence[str]]],
) -> dict:
    """The scores of the gap and source tags (``gold`` and ``predicted``: ``gaps``/``source_tags`` → tags
    per sentence) and of words and gaps together, as report keys ``gaps_*``, ``target_*``, ``source_*``
    (``*`` in :data:`QE_SCORES`, and ``*_tokens``); a part is scored when both sides have it."""
    report: dict = {}

    def add(prefix: str, scores: dict) -> None:
        report.update({prefix + key: value for key, value in scores.items()})

    if "gaps" in gold and "gaps" in predicted:
        add("gaps_", binary_scores(gold["gaps"], predicted["gaps"]))
        add(
            "target_",
            binary_scores(
                [[*w, *g] for w, g in zip(gold_words, gold["gaps"], strict=True)],
                [[*w, *g] for w, g in zip(predicted_words, predicted["gaps"], strict=True)],
            ),
        )
    if "source_tags" in gold and "source_tags" in predicted:
        add("source_", binary_scores(gold["source_tags"], predicted["source_tags"]))
    return report
