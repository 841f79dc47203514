"""What the decoder looks at, over a data set (the paper's §5.1 remark that its English POS model
focuses first on a verb in 57% of the test sentences, and the "evenness" of §4).

Steps are grouped by their relative position n/N in tenths when N = L (sentences differ in length),
and one by one when N is fixed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import torch

EVEN_TOLERANCE = 1e-3


def analyze(
    tagger,
    words: Sequence[Sequence[str]],
    gold: Sequence[Sequence[str]] | None = None,
    batch_size: int = 256,
    extras: Sequence[dict] | None = None,
) -> dict:
    """Attention statistics of ``tagger`` over the sentences ``words`` (gold tags optional; ``extras``:
    their inputs beside the words, see :meth:`easyfirst.api.Tagger.tag`)."""
    if tagger.model.decoder is None:
        raise ValueError("the model has no sketch steps (N = 0)")
    predicted, attention = tagger.tag(words, return_attention=True, batch_size=batch_size, extras=extras)
    fixed = tagger.model.steps is not None
    first = Counter()
    groups: dict[int, dict[str, float]] = {}
    betas = []
    for k, matrix in enumerate(attention):
        if matrix.numel() == 0:
            continue
        steps, length = matrix.shape
        focus = int(matrix[0].argmax())
        labels = gold[k] if gold is not None and gold[k][focus] != "_" else predicted[k]
        first[labels[focus]] += 1
        betas.append(matrix.sum(0))
        for n in range(steps):
            row = matrix[n].double()
            group = n if fixed else min(9, (10 * n) // steps)
            stats = groups.setdefault(group, {"count": 0, "entropy": 0.0, "support": 0.0, "position": 0.0})
            positive = row[row > 0]
            stats["count"] += 1
            stats["entropy"] += float(-(positive * positive.log()).sum())
            stats["support"] += int((row > 0).sum())
            stats["position"] += int(row.argmax()) / (length - 1) if length > 1 else 0.5
    total = sum(first.values())
    beta = torch.cat(betas) if betas else torch.zeros(0)
    per_step = []
    for group in sorted(groups):
        stats = groups[group]
        label = f"{group + 1}" if fixed else f"{group / 10:.1f}–{(group + 1) / 10:.1f}"
        per_step.append(
            {
                "steps": label,
                "entropy": stats["entropy"] / stats["count"],
                "support": stats["support"] / stats["count"],
                "focus_position": stats["position"] / stats["count"],
                "count": stats["count"],
            }
        )
    return {
        "sentences": total,
        "first_focus": {tag: n / total for tag, n in first.most_common()},
        "first_focus_by": "gold tag" if gold is not None else "predicted tag",
        "per_step": per_step,
        "step_grouping": "step n" if fixed else "n/N in tenths",
        "evenness": {
            "beta_max": float(beta.max()) if beta.numel() else math.nan,
            "beta_mean": float(beta.mean()) if beta.numel() else math.nan,
            "share_beta_one": float(((beta - 1).abs() <= EVEN_TOLERANCE).double().mean())
            if beta.numel()
            else math.nan,
        },
    }


def to_markdown(stats: dict) -> str:
    """The statistics of :func:`analyze` as Markdown tables (for docs/results.md)."""
    lines = [
        f"First focus (argmax of α¹), by {stats['first_focus_by']}, over {stats['sentences']:,} sentences:",
        "",
        "| tag | share |",
        "|---|---:|",
        *(f"| {tag} | {100 * share:.1f}% |" for tag, share in stats["first_focus"].items()),
        "",
        f"Attention per step ({stats['step_grouping']}):",
        "",
        "| steps | entropy (nats) | support (words with α > 0) | focus position (0 = first word, 1 = last) |",
        "|---|---:|---:|---:|",
        *(
            f"| {row['steps']} | {row['entropy']:.3f} | {row['support']:.2f} | {row['focus_position']:.3f} |"
            for row in stats["per_step"]
        ),
        "",
    ]
    even = stats["evenness"]
    lines.append(
        f"Evenness: final β max {even['beta_max']:.4f}, mean {even['beta_mean']:.4f}; "
        f"{100 * even['share_beta_one']:.1f}% of words end with β = 1 (±{EVEN_TOLERANCE:g})."
    )
    return "\n".join(lines) + "\n"
