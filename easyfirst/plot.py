"""Raindrop plots: the attention αⁿ of each sketch step over the words (paper Figs. 2–4).

Rows are sketch steps (top: step 1), columns are words, labelled with the predicted tag (and the gold
tag where it differs, marked in red). Words are coloured by tag: for BIO tags B-* light blue, I-* bold
red, O green (the paper's Fig. 3); for quality estimation OK green, BAD bold red (Fig. 4); other tag
sets (e.g. UPOS) get one colour per tag. An optional panel shows the cumulative attention β = Σₙ αⁿ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

TAB20 = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#ff9896",
    "#c5b0d5",
    "#c49c94",
    "#f7b6d2",
    "#c7c7c7",
]


SHADES = " ·░▒▓█"  # terminal glyphs from no attention to full attention (square-root scale)


@dataclass
class Drop:
    """Everything one raindrop plot shows."""

    words: list[str]
    predicted: list[str]
    attention: torch.Tensor  # (N, L)
    gold: list[str] | None = None
    title: str = ""


def tag_style(tag: str, tagset: Sequence[str]) -> tuple[str, bool]:
    """The colour of a word labelled ``tag`` and whether it is drawn bold."""
    if tag == "O" or tag.startswith(("B-", "I-", "E-", "S-")):
        if tag.startswith("B-") or tag.startswith("S-"):
            return "#5dade2", False
        if tag.startswith(("I-", "E-")):
            return "#c0392b", True
        return "#27ae60", False
    if tag in ("OK", "BAD"):
        return ("#27ae60", False) if tag == "OK" else ("#c0392b", True)
    ordered = sorted(tagset)
    index = ordered.index(tag) if tag in ordered else len(ordered)
    return TAB20[index % len(TAB20)], False


def figure(drops: Sequence[Drop], tagset: Sequence[str], show_beta: bool = True):
    """A matplotlib Figure with one raindrop panel per drop, side by side (``--compare``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    length = max(len(d.words) for d in drops)
    steps = max(max(d.attention.shape[0], 1) for d in drops)
    width = max(4.0, 0.42 * length + 1.5)
    height = max(3.0, 0.28 * steps + 2.2) + (0.6 if show_beta else 0)
    rows = 2 if show_beta else 1
    fig, axes = plt.subplots(
        rows,
        len(drops),
        figsize=(width * len(drops), height),
        squeeze=False,
        gridspec_kw={"height_ratios": [max(steps, 1), 1.2][:rows]},
    )
    # a column is ~0.42 inch, about 6 characters at 8 pt: rotate when a word or tag label would overflow it
    longest = max(len(label) for d in drops for label in [*d.words, *d.predicted, *(d.gold or [])])
    rotate = 90 if length > 12 or longest > 6 else 0
    for column, drop in enumerate(drops):
        ax = axes[0][column]
        matrix = (
            drop.attention.float().numpy()
            if drop.attention.numel()
            else torch.zeros(1, len(drop.words)).numpy()
        )
        image = ax.imshow(matrix, aspect="auto", cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_ylabel("sketch step n")
        ax.set_yticks(range(matrix.shape[0]), [str(n + 1) for n in range(matrix.shape[0])], fontsize=7)
        ax.set_title(drop.title, fontsize=10)
        target = axes[1][column] if show_beta else ax
        _label_words(target, drop, tagset, rotate)
        if show_beta:
            ax.set_xticks(range(len(drop.words)), [""] * len(drop.words))
            beta = drop.attention.sum(0).float().numpy() if drop.attention.numel() else matrix[0] * 0
            target.imshow(
                beta[None, :], aspect="auto", cmap="viridis", vmin=0.0, vmax=max(1.0, float(beta.max()))
            )
            target.set_yticks([0], ["β"])
        fig.colorbar(image, ax=[axes[r][column] for r in range(rows)], fraction=0.025, pad=0.01)
    return fig


def _label_words(ax, drop: Drop, tagset, rotate: int) -> None:
    labels = []
    for i, word in enumerate(drop.words):
        label = f"{word}\n{drop.predicted[i]}"
        if drop.gold is not None and drop.gold[i] != drop.predicted[i]:
            label += f"\n✗ {drop.gold[i]}"
        labels.append(label)
    ax.set_xticks(range(len(labels)), labels, rotation=rotate, fontsize=8)
    for i, tick in enumerate(ax.get_xticklabels()):
        wrong = drop.gold is not None and drop.gold[i] != drop.predicted[i]
        colour, bold = tag_style(drop.gold[i] if drop.gold is not None else drop.predicted[i], tagset)
        tick.set_color("#e60000" if wrong else colour)
        tick.set_fontweight("bold" if bold or wrong else "normal")


def save(drops: Sequence[Drop], tagset: Sequence[str], path: Path, show_beta: bool = True) -> None:
    """Write the figure to ``path`` (.png, .svg or .pdf, by its suffix)."""
    import matplotlib.pyplot as plt

    from easyfirst.atomic import atomic_write

    fig = figure(drops, tagset, show_beta)
    fmt = path.suffix.lstrip(".").lower()
    atomic_write(path, lambda out: fig.savefig(out, format=fmt, dpi=150))
    plt.close(fig)


def terminal(drop: Drop, tagset: Sequence[str]):
    """A rich renderable: the attention matrix as coloured blocks, one row per step."""
    from rich.console import Group
    from rich.text import Text

    lines = [Text(drop.title, style="bold")] if drop.title else []
    legend = Text()
    for i, (word, tag) in enumerate(zip(drop.words, drop.predicted, strict=True), 1):
        colour, bold = tag_style(tag, tagset)
        wrong = drop.gold is not None and drop.gold[i - 1] != tag
        legend.append(
            f"{i}:{word}/{tag}", style=("bold " if bold or wrong else "") + ("red" if wrong else colour)
        )
        if wrong:
            legend.append(f"(gold {drop.gold[i - 1]})", style="red")
        legend.append("  ")
    lines.append(legend)
    header = Text("step ")
    for i in range(1, len(drop.words) + 1):
        header.append(f"{i % 100:>2} ")
    lines.append(header)
    for n, row in enumerate(drop.attention.float().tolist(), 1):
        text = Text(f"{n:>4} ")
        for value in row:
            level = max(0.0, min(1.0, value)) ** 0.5
            shade = int(round(255 * level))
            # the glyph carries the value too, so the matrix still reads without colours (pipes, logs)
            glyph = SHADES[min(len(SHADES) - 1, int(level * len(SHADES)))]
            text.append(glyph * 2 + " ", style=f"rgb({shade},{shade},{max(40, shade // 2)})")
        lines.append(text)
    return Group(*lines)
