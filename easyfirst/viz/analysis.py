"""What the decoder looks at, over a data set (the paper's §5.1 remark that its English POS model
focuses first on a verb in 57% of the test sentences, and the "evenness" of §4).

Steps are grouped by their relative position n/N in tenths when N = L (sentences differ in length),
and one by one when N is fixed. Per group: the mean entropy of αⁿ, its support, the position of its
largest weight, the largest weight itself, the entropy normalised by log(number of words with budget
left before the step), and the share of steps where one word takes at least half of the step.

How sharp ("easy-first") the attention is, in one line (``sharpness``): the largest weight of a step,
averaged over the first half of each sentence's steps (the paper's Figure 2 shows one or two words
taking most of each early step), the share of those steps where one word takes ≥ 0.5, and their mean
normalised entropy (0: all on one word; 1: uniform over the words with budget left).

For NER (``outside``: the tag of words outside any entity), where each sentence's first focus goes
against its entities (``entities``): the paper's Figure 3 attends to the entity words first.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import torch

EVEN_TOLERANCE = 1e-3
HALF = 0.5  # a step is "focused" when one word takes at least this much of it
# attention is "diffuse" when the largest α of a step, averaged over the first half of the steps, is below
# this: the default POS recipe measured 0.365 ± 0.091, its easy-first one 0.736 ± 0.012 (issue #26)
DIFFUSE = 0.5
BUDGET_TOLERANCE = 1e-6  # a word whose remaining budget is below this has none left


def budget_left(matrix: torch.Tensor) -> torch.Tensor:
    """``(N, L)`` bools: which words have attention budget left before each step of the history
    ``matrix`` ``(N, L)``; the budget is refreshed every L steps (u = ⌈n/L⌉ − βⁿ⁻¹, as the decoder does)."""
    steps, length = matrix.shape
    before = torch.cumsum(matrix.double(), 0) - matrix.double()  # βⁿ⁻¹
    refreshed = (torch.arange(steps, dtype=torch.float64) // length + 1).unsqueeze(1)  # ⌈n/L⌉, n from 1
    return refreshed - before > BUDGET_TOLERANCE


def first_half_largest(matrix: torch.Tensor) -> float:
    """The largest α of each step, averaged over the first ⌈N/2⌉ steps of the history ``matrix`` ``(N, L)``
    (one sentence's ``max_weight_first_half``)."""
    early = matrix[: math.ceil(matrix.shape[0] / 2)].double()
    return float(early.max(dim=1).values.mean())


def relative(index: int, length: int) -> float:
    """Word ``index``'s position in a sentence of ``length`` words: 0 the first word, 1 the last."""
    return index / (length - 1) if length > 1 else 0.5


class StepStats:
    """Sums over attention steps αⁿ (rows of a history), and their means for :func:`analyze`."""

    def __init__(self) -> None:
        self.count = self.focused = self.entropy_count = 0
        self.entropy = self.support = self.position = self.max_weight = self.normalized_entropy = 0.0

    @staticmethod
    def measure(row: torch.Tensor, available: int) -> tuple[float, int, float, float, float | None]:
        """Step ``row`` ``(L,)``'s entropy, support, relative position of its largest weight, that weight,
        and the entropy normalised by log(``available``: the words with budget left before it; None for
        one word)."""
        positive = row[row > 0]
        entropy = float(-(positive * positive.log()).sum())
        length = row.numel()
        position = relative(int(row.argmax()), length)
        normalized = entropy / math.log(available) if available > 1 else None
        return entropy, int((row > 0).sum()), position, float(row.max()), normalized

    def add(self, measured: tuple[float, int, float, float, float | None]) -> None:
        """One step, as :meth:`measure` gives it."""
        entropy, support, position, largest, normalized = measured
        self.count += 1
        self.entropy += entropy
        self.support += support
        self.position += position
        self.max_weight += largest
        self.focused += largest >= HALF
        if normalized is not None:
            self.normalized_entropy += normalized
            self.entropy_count += 1

    def means(self) -> dict[str, float]:
        count = self.count or math.nan
        return {
            "entropy": self.entropy / count,
            "support": self.support / count,
            "focus_position": self.position / count,
            "max_weight": self.max_weight / count,
            "normalized_entropy": self.normalized_entropy / self.entropy_count
            if self.entropy_count
            else math.nan,
            "share_focused": self.focused / count,
            "count": self.count,
        }


class EntityFocus:
    """Where each sentence's first focus (argmax of α¹) goes against its entities (NER; the paper's
    Figure 3 attends to the entity words first): sentences without an entity are left out."""

    def __init__(self, outside: str) -> None:
        self.outside = outside
        self.sentences = self.on_entity = self.before = 0
        self.focus = self.first_entity = self.offset = 0.0

    def add(self, focus: int, labels: Sequence[str]) -> None:
        entities = [i for i, tag in enumerate(labels) if tag != self.outside]
        if not entities:
            return
        self.sentences += 1
        self.on_entity += labels[focus] != self.outside
        self.before += focus < entities[0]
        self.focus += relative(focus, len(labels))
        self.first_entity += relative(entities[0], len(labels))
        self.offset += focus - entities[0]

    def means(self) -> dict[str, float]:
        count = self.sentences or math.nan
        return {
            "sentences": self.sentences,
            "share_on_entity": self.on_entity / count,
            "share_before_first_entity": self.before / count,
            "focus_position": self.focus / count,
            "first_entity_position": self.first_entity / count,
            "offset_words": self.offset / count,
        }


def analyze(
    tagger,
    words: Sequence[Sequence[str]],
    gold: Sequence[Sequence[str]] | None = None,
    batch_size: int = 256,
    extras: Sequence[dict] | None = None,
    outside: str | None = None,
) -> dict:
    """Attention statistics of ``tagger`` over the sentences ``words`` (gold tags optional; ``extras``:
    their inputs beside the words, see :meth:`easyfirst.api.Tagger.tag`). With ``outside`` (the tag of
    words outside any entity: "O"), also where the first focus goes against the entities
    (:class:`EntityFocus`, key ``entities``)."""
    if tagger.model.decoder is None:
        raise ValueError("the model has no sketch steps (N = 0)")
    tagged = tagger.tag(words, attention=True, batch_size=batch_size, extras=extras)
    predicted, attention = [t.tags for t in tagged], [t.attention for t in tagged]
    fixed = tagger.model.steps is not None
    first = Counter()
    groups: dict[int, StepStats] = {}
    early = StepStats()  # the first half of each sentence's steps
    betas = []
    entities = EntityFocus(outside) if outside is not None else None
    for k, matrix in enumerate(attention):
        if matrix.numel() == 0:
            continue
        steps = matrix.shape[0]
        focus = int(matrix[0].argmax())
        labels = gold[k] if gold is not None and gold[k][focus] != "_" else predicted[k]
        first[labels[focus]] += 1
        if entities is not None:
            entities.add(focus, labels)
        betas.append(matrix.sum(0))
        available = budget_left(matrix).sum(1).tolist()
        for n in range(steps):
            group = n if fixed else min(9, (10 * n) // steps)
            measured = StepStats.measure(matrix[n].double(), available[n])
            groups.setdefault(group, StepStats()).add(measured)
            if n < math.ceil(steps / 2):
                early.add(measured)
    total = sum(first.values())
    first_half = early.means()
    beta = torch.cat(betas) if betas else torch.zeros(0)
    per_step = []
    for group in sorted(groups):
        label = f"{group + 1}" if fixed else f"{group / 10:.1f}–{(group + 1) / 10:.1f}"
        per_step.append({"steps": label} | groups[group].means())
    stats = {
        "sentences": total,
        "first_focus": {tag: n / total for tag, n in first.most_common()},
        "first_focus_by": "gold tag" if gold is not None else "predicted tag",
        "per_step": per_step,
        "step_grouping": "step n" if fixed else "n/N in tenths",
        "sharpness": {
            f"{key}_first_half": first_half[key]
            for key in ("max_weight", "share_focused", "normalized_entropy")
        },
        "evenness": {
            "beta_max": float(beta.max()) if beta.numel() else math.nan,
            "beta_mean": float(beta.mean()) if beta.numel() else math.nan,
            "share_beta_one": float(((beta - 1).abs() <= EVEN_TOLERANCE).double().mean())
            if beta.numel()
            else math.nan,
        },
    }
    if entities is not None:
        stats["entities"] = entities.means()
    return stats


def to_markdown(stats: dict) -> str:
    """The statistics of :func:`analyze` as Markdown tables (for docs/studies/results.md)."""
    lines = [
        f"First focus (argmax of α¹), by {stats['first_focus_by']}, over {stats['sentences']:,} sentences:",
        "",
        "| tag | share |",
        "|---|---:|",
        *(f"| {tag} | {100 * share:.1f}% |" for tag, share in stats["first_focus"].items()),
        "",
        f"Attention per step ({stats['step_grouping']}):",
        "",
        "| steps | entropy (nats) | entropy / log(words with budget) | support (words with α > 0) "
        "| largest α | steps with a word ≥ 0.5 | focus position (0 = first word, 1 = last) |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {row['steps']} | {row['entropy']:.3f} | {row['normalized_entropy']:.3f} | {row['support']:.2f} "
            f"| {row['max_weight']:.3f} | {100 * row['share_focused']:.1f}% | {row['focus_position']:.3f} |"
            for row in stats["per_step"]
        ),
        "",
        sharpness_line(stats["sharpness"]),
        "",
    ]
    if "entities" in stats:
        lines += [entity_line(stats["entities"]), ""]
    even = stats["evenness"]
    lines.append(
        f"Evenness: final β max {even['beta_max']:.4f}, mean {even['beta_mean']:.4f}; "
        f"{100 * even['share_beta_one']:.1f}% of words end with β = 1 (±{EVEN_TOLERANCE:g})."
    )
    return "\n".join(lines) + "\n"


def sharpness_line(sharp: dict) -> str:
    return (
        f"Sharpness over the first half of each sentence's steps: largest α {sharp['max_weight_first_half']:.3f} "
        f"on average, one word ≥ 0.5 in {100 * sharp['share_focused_first_half']:.1f}% of the steps, "
        f"normalised entropy {sharp['normalized_entropy_first_half']:.3f}."
    )


def entity_line(entities: dict) -> str:
    return (
        f"First focus against the entities, over the {entities['sentences']:,} sentences with one: on an "
        f"entity word in {100 * entities['share_on_entity']:.1f}%, before the first entity in "
        f"{100 * entities['share_before_first_entity']:.1f}%; at position {entities['focus_position']:.3f} "
        f"on average against {entities['first_entity_position']:.3f} for the first entity word (0 = first "
        f"word, 1 = last), {entities['offset_words']:+.2f} words from it."
    )
