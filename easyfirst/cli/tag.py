"""``easyfirst tag``: a file (or stdin, or --text) in, the same file with the predicted tags out.

The options that only one task reads (--replace, --scheme, --encoding for column files; --src, --mt,
--alignments, --gaps for QE) are the fields of the tasks' ``TagOptions`` (easyfirst.tasks).
"""

from __future__ import annotations

import inspect
import sys
from itertools import islice
from pathlib import Path
from typing import Annotated

import typer

from easyfirst.cli import app
from easyfirst.cli.common import (
    BatchOption,
    DeviceOption,
    ModelOption,
    check_device,
    check_output,
    load_tagger,
    open_input,
    task_of,
    text_words,
    write_output,
)
from easyfirst.cli.options import LAZY_CHOICES, tag_option_parameters
from easyfirst.data.text import read_text, tag_text
from easyfirst.errors import InputError
from easyfirst.tasks import TASKS


def tag(
    input: Annotated[
        str | None,
        typer.Argument(
            help="File to tag in the format of the model's task ("
            + "; ".join(f"{t.name}: {t.input_kind}" for t in TASKS.values())
            + "), or plain text (see --format), or - for stdin."
        ),
    ] = None,
    model: ModelOption = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Output file (default: stdout).")
    ] = None,
    text: Annotated[
        str | None,
        typer.Option(
            help="Tag this text instead of a file: split into sentences and tokenized (segtok), unless "
            "--pretokenized. Prints word<TAB>tag, a blank line between sentences."
        ),
    ] = None,
    pretokenized: Annotated[
        bool,
        typer.Option("--pretokenized", help="With --text: one sentence, its tokens separated by whitespace."),
    ] = False,
    format: Annotated[
        str,
        typer.Option(
            "--format",
            help="auto: plain text if the file looks like it (not CoNLL-U, a column file or QE data), else "
            "the model's format; text: plain text, split into sentences and tokenized (segtok), written "
            "as CoNLL-U with # text and SpaceAfter=No; model: the model's format.",
        ),
    ] = "auto",
    batch_size: BatchOption = 256,
    device: DeviceOption = "cpu",
    probabilities: Annotated[
        bool,
        typer.Option(
            "--probabilities",
            help="Write each word's output distribution instead (TSV: word, tag, one column per tag; "
            "a blank line between sentences). Sparse models give exact zeros; CRF models, marginals.",
        ),
    ] = False,
    **task_options,
) -> None:
    """Tag a file, stdin or --text (default model: the bundled one).

    A file in the model's format is written back with the predicted tags and every other byte
    unchanged. CoNLL-U (pos models): the UPOS (or XPOS) column of each word is filled in. CoNLL column
    files (ner models): the tag is added as a last column (or replaces the tag column with --replace),
    in the input's tagging scheme; -DOCSTART- and blank lines are kept.

    QE models: --src, --mt and --alignments (or a PREFIX) in, a tags file out: 2N+1 tags (gaps
    predicted) from a model trained with gaps, else one OK/BAD per MT word; the predicted source tags go
    to OUT.source_tags (OUT being -o without its .tags ending) when the model predicts them. Gold tags
    are never read.

    Plain text (pos and ner models): split into sentences and tokenized with segtok, written as CoNLL-U
    with "# sent_id", "# text" and SpaceAfter=No, the tags in the UPOS (or XPOS) column, or as NER=tag
    in MISC for ner models.
    """
    check_arguments(input, text, format, pretokenized, batch_size, device, output)
    claimed = claimed_input(input, task_options, text, probabilities)
    stream, name, plain = None, None, False
    if claimed is None and text is None:
        stream, name = open_input(input)  # fail fast, before the model
        plain = format == "text" or (format == "auto" and looks_like_text(stream, input))
    try:
        tagger = load_tagger(model, device)
        task, data = task_of(tagger)
        if claimed is not None and claimed[0] is not task:
            raise InputError(
                f"{claimed[0].name.upper()} input needs a {claimed[0].name} model; this is a {task.name} model",
                model,
            )
        if claimed is None and task.unclaimed_input is not None:
            raise InputError(task.unclaimed_input)
        options = task.tag_options(task_options)
        task.configure(data, options)
        source = claimed[1] if claimed is not None else stream
        column = task.text_column(data)
        if (plain or text is not None) and column is None:
            raise InputError(f"a {task.name} model cannot tag plain text: give it {task.input_kind}", input)
        if probabilities:
            if text is not None:
                sentences = iter(text_words(text, pretokenized))
            elif plain:
                sentences = iter(s.words for s in read_text(stream, name))
            else:  # one batch at a time where the format allows (CoNLL-U), so a large file fits in memory
                sentences = (s.words for s in task.stream(stream, data, name))
            write_output(output, lambda out: write_distributions(out, tagger, sentences, batch_size))
        elif text is not None:
            words = text_words(text, pretokenized)
            tags = tagger.tag(words, batch_size=batch_size)
            rows = "\n".join(
                "".join(f"{w}\t{t}\n" for w, t in zip(sentence, predicted, strict=True))
                for sentence, predicted in zip(words, tags, strict=True)
            )
            write_output(output, lambda out: out.write(rows.encode()))
        elif plain:
            write_output(
                output,
                lambda out: tag_text(stream, out, tagger.tag, column, batch_size=batch_size, name=name),
            )
        else:
            write_output(
                output,
                lambda out: task.write(
                    source, out, tagger.tag, data, options, batch_size=batch_size, name=name, output=output
                ),
            )
    finally:
        if stream is not None and stream is not sys.stdin.buffer:
            stream.close()


FORMATS = ("auto", "text", "model")
LAZY_CHOICES["format"] = lambda: list(FORMATS)  # --help shows <auto|text|model>


def check_arguments(input, text, format, pretokenized, batch_size, device, output) -> None:
    """The user errors ``tag`` can find before it opens anything."""
    if text is not None and input is not None:
        raise InputError("give either an input file or --text, not both")
    if format not in FORMATS:
        raise InputError(f"--format must be {', '.join(FORMATS[:-1])} or {FORMATS[-1]}, not {format!r}")
    if pretokenized and text is None:
        raise InputError("--pretokenized goes with --text (a file of tokens is a CoNLL file: --format model)")
    if batch_size < 1:
        raise InputError("--batch-size must be >= 1")
    check_device(device)
    check_output(output)


def claimed_input(input, task_options, text, probabilities):
    """(task, what it read) for an input only one task reads (QE files), read before the model is loaded
    so that its errors come first; None for any other input."""
    claimed = next(
        (
            (task, found)
            for task in TASKS.values()
            if (found := task.claim_input(input, task_options)) is not None
        ),
        None,
    )
    if claimed is not None and text is not None:
        raise InputError(f"give either --text or {claimed[0].name.upper()} input files, not both")
    if claimed is not None and probabilities:
        raise InputError(f"--probabilities: not for {claimed[0].name.upper()} input (it writes a tags file)")
    return claimed


def looks_like_text(stream, input: str | None) -> bool:
    """Whether the file (or stdin, from the bytes buffered so far) looks like plain text."""
    from easyfirst.data import detect

    if input is None or input == "-":
        looks = detect.sniff_bytes(stream.peek(detect.HEAD_BYTES)[: detect.HEAD_BYTES])
    else:
        looks = detect.sniff(input)
    return looks.kind == detect.TEXT


def write_distributions(out, tagger, sentences, batch_size: int) -> None:
    """TSV of each word's output distribution: a header ``word tag TAG1 … TAGK``, then one row per word
    (probabilities with 6 significant digits, exact zeros as 0) and a blank line after each sentence."""
    out.write(("\t".join(["word", "tag", *tagger.tags]) + "\n").encode())
    while chunk := list(islice(sentences, batch_size)):
        tags, distributions = tagger.tag(chunk, return_probabilities=True, batch_size=batch_size)
        for words, predicted, p in zip(chunk, tags, distributions, strict=True):
            rows = (
                "\t".join([w, t, *(f"{x:.6g}" for x in row)])
                for w, t, row in zip(words, predicted, p.tolist(), strict=True)
            )
            out.write(("".join(row + "\n" for row in rows) + "\n").encode())


def _register() -> None:
    signature = inspect.signature(tag, eval_str=True)
    common = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    common = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) if p.name != "input" else p for p in common]
    extra = tag_option_parameters(t.TagOptions for t in TASKS.values())
    tag.__signature__ = signature.replace(parameters=common + extra)
    app.command()(tag)


_register()
