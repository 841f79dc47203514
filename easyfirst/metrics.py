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
