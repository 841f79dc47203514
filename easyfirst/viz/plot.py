"""Raindrop plots: the attention αⁿ of each sketch step over the words (paper Figs. 2–4).

Rows are sketch steps (top: step 1), columns are words, labelled with the predicted tag (and, where the
input has gold tags, the gold tag where it differs, marked ✗, the whole label bold red). High attention
is yellow, low dark blue (viridis, as in the paper). Words are coloured by (gold) tag: for BIO tags B-*
blue, I-* bold purple, O green (the paper's Fig. 3, whose red for I-* is left to mistakes here); for
quality estimation OK green, BAD bold purple (Fig. 4); other tag sets (e.g. UPOS) get one colour per tag.
Red is for mistakes only: no tag colour is near it. Every label colour reads on white (contrast ≥ 4.5:1)
and on a dark terminal (≥ 3:1).
An optional panel shows the cumulative attention β = Σₙ αⁿ, with its values written in the cells and
a title that says what a flat β means (csoftmax with N = L spends every word's budget of 1).

The figure grows with the sentence (a fixed size per word and per step), so labels keep their size at
40+ words, and it is laid out with matplotlib's constrained layout, so that no label is cut off.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

# one colour per tag of a tag set without BIO/QE structure, by the tag's place in the sorted tag set:
# distinct hues, each with a contrast of at least 4.5:1 against white and 3:1 against black (tab10's
# hues, darkened where light), ordered so that UPOS's frequent tags differ most: NOUN blue, VERB green,
# ADJ ochre, ADP brown, ADV olive, AUX teal, DET grey, PRON purple, PROPN magenta. No tag is red: red is
# MISTAKE's alone (every tag colour is at least 20 CIEDE2000 units from it; tests/viz/test_plot.py)
PALETTE = [
    "#a86400",  # ADJ
    "#7a5c58",  # ADP
    "#5a7a1e",  # ADV
    "#0f7f8a",  # AUX
    "#7f6a3f",  # CCONJ
    "#707070",  # DET
    "#b5007a",  # INTJ
    "#1f77b4",  # NOUN
    "#767600",  # NUM
    "#a83262",  # PART
    "#8f60ba",  # PRON
    "#cf2b9c",  # PROPN
    "#5a7080",  # PUNCT
    "#7a50b0",  # SCONJ
    "#00789a",  # SYM
    "#248424",  # VERB
    "#4a5fd0",  # X
    "#6b6b9a",
]
# the paper's light blue, red and green, darker; I-* and BAD purple instead of the paper's red, which
# would read as a mistake
BEGIN, INSIDE, OUTSIDE = "#2079b4", "#8e44ad", "#1e8449"
MISTAKE = "#e60000"  # a predicted tag that differs from gold: red, bold, with the gold tag after ✗
CELL = 0.3  # inches per word (column) and per sketch step (row)
MATRIX_HEIGHT = 7.0  # inches at most for the steps: many steps get thinner rows (the paper's Fig. 2)
LABEL_PT = 9
ANNOTATE_BETA_UP_TO = 30  # words: β's values are written in its cells for sentences up to this length


SHADES = " ·░▒▓█"  # terminal glyphs from no attention to full attention (square-root scale)


@dataclass
class Drop:
    """Everything one raindrop plot shows."""

    words: list[str]
    predicted: list[str]
    attention: torch.Tensor  # (N, L)
    gold: list[str] | None = None
    title: str = ""
    model: str = ""  # the model's name (a run folder's), for the interactive page
    task: str = ""
    text: str = ""  # the sentence as written, where known (the text it was split from, ``# text``)

    def sentence(self, limit: int = 80) -> str:
        """The sentence for a title: as written where known, else its words detokenized; cut at a
        space before ``limit`` characters, with "…"."""
        from easyfirst.data.text import detokenize

        text = self.text or detokenize(self.words)
        if len(text) <= limit:
            return text
        cut = text.rfind(" ", 0, limit)
        return text[: cut if cut > 0 else limit] + " …"


def tag_style(tag: str, tagset: Sequence[str]) -> tuple[str, bool]:
    """The colour of a word labelled ``tag`` and whether it is drawn bold."""
    if tag == "O" or tag.startswith(("B-", "I-", "E-", "S-")):
        if tag.startswith("B-") or tag.startswith("S-"):
            return BEGIN, False
        if tag.startswith(("I-", "E-")):
            return INSIDE, True
        return OUTSIDE, False
    if tag in ("OK", "BAD"):
        return (OUTSIDE, False) if tag == "OK" else (INSIDE, True)
    ordered = sorted(tagset)
    index = ordered.index(tag) if tag in ordered else len(ordered)
    return PALETTE[index % len(PALETTE)], False


def _labels(drop: Drop) -> list[str]:
    labels = []
    for i, word in enumerate(drop.words):
        label = f"{word}\n{drop.predicted[i]}"
        if drop.gold is not None and drop.gold[i] != drop.predicted[i]:
            label += f"\n✗ {drop.gold[i]}"
        labels.append(label)
    return labels


def words_caption(drop: Drop) -> str:
    """What the word labels show: the ✗ is explained only where the input has gold tags."""
    if drop.gold is None:
        return "words, with the predicted tag"
    if drop.gold == list(drop.predicted):
        return "words, with the predicted tag (the same as the gold tag for every word)"
    return "words, with the predicted tag (in red with ✗: the gold tag, where it differs)"


def beta_title(beta: Sequence[float]) -> str:
    """What the β panel shows, and why it may be one flat colour."""
    title = "β = Σₙ αⁿ, the attention each word got over all steps"
    if len(beta) and all(abs(b - 1.0) < 0.005 for b in beta):
        return title + ": 1.00 for every word (its whole budget of 1 used up)"
    if len(beta):
        return title + f" (from {min(beta):.2f} to {max(beta):.2f})"
    return title


def figure(drops: Sequence[Drop], tagset: Sequence[str], show_beta: bool = True):
    """A matplotlib Figure with one raindrop panel per drop, side by side (``--compare``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    length = max(len(d.words) for d in drops)
    steps = max(max(d.attention.shape[0], 1) for d in drops)
    labels = [_labels(d) for d in drops]
    longest = max(len(line) for panel in labels for label in panel for line in label.split("\n"))
    lines = max(label.count("\n") + 1 for panel in labels for label in panel)
    character = LABEL_PT * 0.62 / 72  # inches, about
    rotate = 90 if longest * character > CELL * 1.5 else 0  # a label wider than its column: upright
    label_height = (longest * character if rotate else lines * LABEL_PT * 1.25 / 72) + 0.45
    width = max(5.5, CELL * length + 2.6)
    beta_height = CELL + 0.6 if show_beta else 0.0
    row = min(CELL, MATRIX_HEIGHT / steps)
    height = row * steps + 1.1 + beta_height + label_height
    rows = 2 if show_beta else 1
    fig, axes = plt.subplots(
        rows,
        len(drops),
        figsize=(width * len(drops), height),
        squeeze=False,
        layout="constrained",
        gridspec_kw={"height_ratios": [row * steps, CELL][:rows]},
    )
    for column, drop in enumerate(drops):
        ax = axes[0][column]
        matrix = (
            drop.attention.float().numpy()
            if drop.attention.numel()
            else torch.zeros(1, len(drop.words)).numpy()
        )
        image = ax.imshow(matrix, aspect="auto", cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_ylabel("sketch step n (step 1 at the top)", fontsize=LABEL_PT)
        every = max(1, (matrix.shape[0] + 24) // 25)  # at most 25 step numbers
        ticks = list(range(0, matrix.shape[0], every))
        ax.set_yticks(ticks, [str(n + 1) for n in ticks], fontsize=LABEL_PT - 1)
        ax.set_title(drop.title, fontsize=LABEL_PT + 1)
        target = axes[1][column] if show_beta else ax
        _label_words(target, drop, labels[column], tagset, rotate)
        target.set_xlabel(words_caption(drop), fontsize=LABEL_PT)
        if show_beta:
            ax.set_xticks(range(len(drop.words)), [""] * len(drop.words))
            _beta_panel(target, drop, matrix, width - 1.8)
        bar = fig.colorbar(
            image, ax=[axes[r][column] for r in range(rows)], fraction=0.04, pad=0.01, aspect=30
        )
        bar.set_label("attention αⁿ on the word at step n", fontsize=LABEL_PT)
        bar.ax.tick_params(labelsize=LABEL_PT - 1)
    return fig


def _beta_panel(ax, drop: Drop, matrix, inches: float) -> None:
    beta = drop.attention.sum(0).float().numpy() if drop.attention.numel() else matrix[0] * 0
    top = max(1.0, float(beta.max()))
    ax.imshow(beta[None, :], aspect="auto", cmap="viridis", vmin=0.0, vmax=top, interpolation="nearest")
    ax.set_yticks([0], ["β"], fontsize=LABEL_PT)
    columns = max(30, int(inches / (LABEL_PT * 0.5 / 72)))  # characters across the panel, about
    ax.set_title(textwrap.fill(beta_title(beta.tolist()), columns), fontsize=LABEL_PT, loc="left")
    if len(beta) <= ANNOTATE_BETA_UP_TO:
        for i, value in enumerate(beta.tolist()):
            colour = "black" if value / top > 0.6 else "white"  # viridis is light at the top
            ax.text(i, 0, f"{value:.2f}", ha="center", va="center", fontsize=LABEL_PT - 2, color=colour)


def _label_words(ax, drop: Drop, labels: list[str], tagset, rotate: int) -> None:
    ax.set_xticks(range(len(labels)), labels, rotation=rotate, fontsize=LABEL_PT)
    for i, tick in enumerate(ax.get_xticklabels()):
        wrong = drop.gold is not None and drop.gold[i] != drop.predicted[i]
        colour, bold = tag_style(drop.gold[i] if drop.gold is not None else drop.predicted[i], tagset)
        tick.set_color(MISTAKE if wrong else colour)
        tick.set_fontweight("bold" if bold or wrong else "normal")


def save(drops: Sequence[Drop], tagset: Sequence[str], path: Path, show_beta: bool = True) -> None:
    """Write the figure to ``path`` (.png, .svg or .pdf, by its suffix)."""
    import matplotlib.pyplot as plt

    from easyfirst.atomic import atomic_write

    fig = figure(drops, tagset, show_beta)
    fmt = path.suffix.lstrip(".").lower()
    atomic_write(path, lambda out: fig.savefig(out, format=fmt, dpi=150))
    plt.close(fig)


def shade(value: float) -> tuple[str, str]:
    """The glyph and colour of an attention value in the terminal (square-root scale, so that small
    values still show): the glyph alone orders the values, for output without colours."""
    level = max(0.0, min(1.0, value)) ** 0.5
    grey = int(round(255 * level))
    glyph = SHADES[min(len(SHADES) - 1, int(level * len(SHADES)))]
    return glyph, f"rgb({grey},{grey},{max(40, grey // 2)})"


def shade_key():
    """A line that says which attention values each glyph stands for."""
    from rich.text import Text

    key = Text("key: ")
    count = len(SHADES)
    for k, glyph in enumerate(SHADES):
        low, high = (k / count) ** 2, ((k + 1) / count) ** 2  # glyph k: √α in [k/count, (k+1)/count)
        if glyph == " ":
            key.append("blank")
        else:
            key.append(glyph * 2, style=shade((low + high) / 2)[1])
        key.append(f" {_decimal(low)}–{_decimal(high)}  " if k < count - 1 else f" ≥{_decimal(low)}")
    return key.append(" (attention αⁿ)")


def _decimal(value: float) -> str:
    return f"{value:.2f}".removeprefix("0")


def terminal(drop: Drop, tagset: Sequence[str]):
    """A rich renderable: the words with their tags, a key to the shades, then the attention matrix
    (one row per sketch step, one column per word) and the cumulative attention β."""
    from rich.console import Group
    from rich.text import Text

    lines = [Text(drop.title, style="bold")] if drop.title else []
    legend = Text()
    for i, (word, tag) in enumerate(zip(drop.words, drop.predicted, strict=True), 1):
        colour, bold = tag_style(tag, tagset)
        wrong = drop.gold is not None and drop.gold[i - 1] != tag
        legend.append(
            f"{i}:{word}/{tag}", style=("bold " if bold or wrong else "") + (MISTAKE if wrong else colour)
        )
        if wrong:
            legend.append(f"(gold {drop.gold[i - 1]})", style=MISTAKE)
        legend.append("  ")
    lines += [legend, shade_key(), Text("rows: sketch steps n; columns: the words numbered above")]
    header = Text("step ")
    for i in range(1, len(drop.words) + 1):
        header.append(f"{i % 100:>2} ")
    lines.append(header)
    matrix = drop.attention.float()
    for label, row in [*((f"{n:>4} ", r) for n, r in enumerate(matrix.tolist(), 1)), ("   β ", None)]:
        if row is None:  # the cumulative attention, after a blank line
            if not matrix.numel():
                break
            lines.append(Text(""))
            row = matrix.sum(0).tolist()
        text = Text(label)
        for value in row:
            glyph, style = shade(value)
            text.append(glyph * 2 + " ", style=style)
        lines.append(text)
    return Group(*lines)
