"""``easyfirst plot`` (raindrop plots of one sentence) and ``easyfirst analyze`` (attention statistics)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from easyfirst.cli.app import app
from easyfirst.cli.common import (
    ModelOption,
    check_input,
    console,
    err,
    given_path,
    load_tagger,
    read_sentences,
    task_of,
)
from easyfirst.errors import InputError
from easyfirst.resources import BUNDLED
from easyfirst.tagging.pipeline import check_output, text_sentences


def read_sentence(path: Path, number: int, tagger):
    if number < 1:
        raise InputError("--sentence counts from 1")
    sentences = read_sentences(path, tagger)
    if number <= len(sentences):
        return sentences[number - 1]
    raise InputError(f"has fewer than {number} sentences", path)


def written_text(path: Path, line: int) -> str:
    """The ``# text`` of the CoNLL-U sentence whose block starts at ``line`` (from 1) of ``path``: the
    sentence as written, for the figure's title; "" where it has none (a column file, no comment)."""
    from itertools import islice

    try:
        with open(path, encoding="utf-8", errors="replace") as lines:
            for content in islice(lines, line - 1, None):
                if not content.startswith("#"):
                    break
                key, _, value = content[1:].partition("=")
                if key.strip() == "text":
                    return value.strip()
    except OSError:
        pass
    return ""


def one_sentence(tagger, path, input: Path | None, text: str | None, pretokenized: bool, sentence: int):
    """The words, gold tags, extra and the text as written ("" where not known) of the sentence to plot:
    sentence ``sentence`` of ``input`` (a file of the model's task) or of ``text``."""
    from easyfirst.data.text import split

    if input is not None:
        found = read_sentence(input, sentence, tagger)
        return found.words, found.tags, found.extra, written_text(input, found.line)
    task, _ = task_of(tagger)
    if task.format.refuses_text is not None:
        raise InputError(task.format.refuses_text, path)
    sentences = text_sentences(text, pretokenized)
    if sentence > len(sentences):
        raise InputError(f"--text has {len(sentences)} sentence(s), fewer than --sentence {sentence}")
    written = "" if pretokenized else split(text)[sentence - 1].text
    return sentences[sentence - 1], None, None, written


def note_if_diffuse(tagger, largest: float, what: str, bundled: bool = False) -> None:
    """One line on stderr when a model with learned attention scores attends diffusely (largest α of an
    early step under DIFFUSE on average) and its task has an easy-first recipe the model was not trained
    with: name the flag. A ``bundled`` model is not the user's to retrain: the line says why it attends
    so instead."""
    from easyfirst.ops.kinds import KINDS
    from easyfirst.viz.analysis import DIFFUSE

    task, _ = task_of(tagger)
    learned = KINDS[tagger.config.model.decoder.attention].scores == "attention"
    recipe = [
        (getattr(tagger.config, s), key, value)
        for s, keys in task.easy_first.items()
        for key, value in keys.items()
    ]
    # a model trained with the recipe already: the flag would change nothing
    trained_so = all(section.get(key) == value for section, key, value in recipe)
    if not (largest < DIFFUSE and learned and recipe and not trained_so):
        return
    said = (
        f"[yellow]note:[/] {what}: the attention is diffuse (the largest α of a step is {largest:.2f} on "
        f"average over the first half of the steps, under {DIFFUSE})"
    )
    if bundled:
        err.print(f"{said}; this bundled model's recipe was chosen for its scores, not for sharp attention")
    else:
        err.print(
            f"{said}; a model trained with `easyfirst train --easy-first` attends easy-first, one or two "
            "words per step"
        )


@app.command()
def plot(
    model: ModelOption = None,
    text: Annotated[
        str | None,
        typer.Option(help="Plot a sentence of this text (tokenized as `tag --text` does; see --sentence)."),
    ] = None,
    pretokenized: Annotated[
        bool,
        typer.Option("--pretokenized", help="With --text: one sentence, its tokens separated by whitespace."),
    ] = False,
    input: Annotated[
        Path | None,
        typer.Option(
            "--input",
            "-i",
            parser=given_path,
            metavar="FILE",
            help="File of the model's task (gold tags are shown).",
        ),
    ] = None,
    sentence: Annotated[int, typer.Option(help="Which sentence of --input or --text (from 1).")] = 1,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            parser=given_path,
            metavar="FILE",
            help="Figure file: .html (interactive, self-contained), .png, .svg or .pdf.",
        ),
    ] = None,
    terminal: Annotated[bool, typer.Option(help="Draw the matrix in the terminal.")] = False,
    compare: Annotated[
        list[Path] | None, typer.Option(metavar="RUN", help="More run folders to draw side by side.")
    ] = None,
    beta: Annotated[bool, typer.Option(help="Add the cumulative-attention panel.")] = True,
) -> None:
    """Raindrop plot of one sentence: where each sketch step looks.

    .png, .svg and .pdf write a figure; .html a self-contained interactive page (no network needed)."""
    from easyfirst.viz.analysis import first_half_largest
    from easyfirst.viz.plot import terminal as render
    from easyfirst.viz.web.raindrop import FORMATS, Raindrop

    if (text is None) == (input is None):
        raise InputError("give exactly one of --text or --input")
    if pretokenized and text is None:
        raise InputError("--pretokenized goes with --text")
    if sentence < 1:
        raise InputError("--sentence counts from 1")
    if output is None and not terminal:
        raise InputError(f"give --output FILE ({', '.join(FORMATS)}) and/or --terminal")
    if output is not None:
        if output.suffix.lower() not in FORMATS:
            raise InputError(f"the figure file must end in {', '.join(FORMATS)}", output)
        check_output(output)
    if input is not None:
        check_input(input)
    taggers = [load_tagger(model, note=True)] + [load_tagger(path, note=True) for path in compare or []]
    raindrops = []
    for path, tagger in zip([model, *(compare or [])], taggers, strict=True):
        if tagger.model.decoder is None:
            raise InputError("this model has no sketch steps (N = 0): there is no attention to plot", path)
        words, gold, extra, written = one_sentence(tagger, path, input, text, pretokenized, sentence)
        name = "bundled model" if path is None else path.name
        raindrops.append(tagger.raindrop(words, gold=gold, extra=extra, name=name))
        raindrops[-1].drops[0].text = written  # the sentence as written, where known (its title)
        attention = raindrops[-1].drops[0].attention
        if attention.numel():
            bundled = path is None or str(path) in BUNDLED
            note_if_diffuse(tagger, first_half_largest(attention), f"{name}, on this sentence", bundled)
    raindrop = Raindrop.side_by_side(raindrops)
    if terminal:
        for drop in raindrop.drops:
            console().print(render(drop, raindrop.tagset))
    if output is not None:
        raindrop.save(output, show_beta=beta)
        err.print(f"wrote {output}")


@app.command()
def analyze(
    data: Annotated[
        Path,
        typer.Argument(
            parser=given_path,
            metavar="FILE",
            help="File to analyse, in the format of the model's task (gold tags are used where present).",
        ),
    ],
    model: ModelOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the statistics as JSON.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the statistics as Markdown tables.")
    ] = False,
) -> None:
    """Attention statistics of a data set: focus, sharpness, evenness.

    First focus; per step the entropy (also normalised by the words with budget left), support, largest
    weight, share of steps where one word takes ≥ 0.5 and focus position; sharpness over the first half of
    the steps; evenness; for NER, where the first focus goes against the entities."""
    from rich.table import Table

    from easyfirst.viz.analysis import analyze as run_analysis
    from easyfirst.viz.analysis import entity_line, sharpness_line, to_markdown

    if as_json and markdown:
        raise InputError("give --json or --markdown, not both")
    check_input(data)
    tagger = load_tagger(model, note=True)
    if tagger.model.decoder is None:
        raise InputError("this model has no sketch steps (N = 0): there is no attention to analyse", model)
    sentences = read_sentences(data, tagger)
    task, _ = task_of(tagger)
    stats = run_analysis(
        tagger,
        [s.words for s in sentences],
        [s.tags for s in sentences],
        extras=[s.extra for s in sentences],
        outside=task.scoring.outside,
    )
    bundled = model is None or str(model) in BUNDLED
    note_if_diffuse(tagger, stats["sharpness"]["max_weight_first_half"], "this model", bundled)
    if as_json:
        print(json.dumps(stats, indent=2))
        return
    if markdown:
        print(to_markdown(stats), end="")
        return
    out = console()
    first = Table(
        title=f"first focus (argmax of α¹), by {stats['first_focus_by']}, {stats['sentences']:,} sentences",
        show_edge=False,
    )
    first.add_column("tag")
    first.add_column("share", justify="right")
    for tag, share in stats["first_focus"].items():
        first.add_row(tag, f"{100 * share:.1f}%")
    out.print(first)
    steps = Table(title=f"attention per step ({stats['step_grouping']})", show_edge=False)
    columns = (
        "steps",
        "entropy (nats)",
        "entropy / log(words with budget)",
        "support (words α > 0)",
        "largest α",
        "one word ≥ 0.5",
        "focus position (0 = first word)",
    )
    for name in columns:
        steps.add_column(name, justify="right")
    for row in stats["per_step"]:
        steps.add_row(
            row["steps"],
            f"{row['entropy']:.3f}",
            f"{row['normalized_entropy']:.3f}",
            f"{row['support']:.2f}",
            f"{row['max_weight']:.3f}",
            f"{100 * row['share_focused']:.1f}%",
            f"{row['focus_position']:.3f}",
        )
    out.print(steps)
    out.print(sharpness_line(stats["sharpness"]))
    if "entities" in stats:
        out.print(entity_line(stats["entities"]))
    even = stats["evenness"]
    out.print(
        f"evenness: final β max {even['beta_max']:.4f}, mean {even['beta_mean']:.4f}, "
        f"share of words with β = 1 (±1e-3): {100 * even['share_beta_one']:.1f}%"
    )
