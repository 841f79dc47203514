"""``easyfirst tag``: a file (or stdin, or --text) in, the same file with the predicted tags out.

The options that only one task reads (--replace, --scheme, --encoding for column files; --src, --mt,
--alignments, --gaps for QE) are the fields of the tasks' ``TagOptions`` (easyfirst.tasks).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated

import typer

from easyfirst.cli import app
from easyfirst.cli.common import BatchOption, DeviceOption, ModelOption, check_device, given_path, load_tagger
from easyfirst.cli.options import LAZY_CHOICES, tag_option_parameters
from easyfirst.errors import InputError
from easyfirst.tagging.pipeline import Source, check_output, write_output
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
        Path | None, typer.Option("--output", "-o", parser=given_path, help="Output file (default: stdout).")
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
    check_arguments(input, text, format, pretokenized, batch_size, output)
    source = Source.find(
        input, text, task_options, pretokenized=pretokenized, format=format, probabilities=probabilities
    )
    try:
        if device == "cpu":  # before torch is imported (by check_device): a second core reads ahead
            source.read_ahead(model, batch_size)
        check_device(device)
        tagger = load_tagger(model, device)
        write = source.writer(tagger, task_options, batch_size=batch_size, output=output, model=model)
        write_output(output, write)
    finally:
        source.close()


FORMATS = ("auto", "text", "model")
LAZY_CHOICES["format"] = lambda: list(FORMATS)  # --help shows <auto|text|model>


def check_arguments(input, text, format, pretokenized, batch_size, output) -> None:
    """The user errors ``tag`` can find before it opens anything (but --device: that imports torch)."""
    if text is not None and input is not None:
        raise InputError("give either an input file or --text, not both")
    if format not in FORMATS:
        raise InputError(f"--format must be {', '.join(FORMATS[:-1])} or {FORMATS[-1]}, not {format!r}")
    if pretokenized and text is None:
        raise InputError("--pretokenized goes with --text (a file of tokens is a CoNLL file: --format model)")
    if batch_size < 1:
        raise InputError("--batch-size must be >= 1")
    check_output(output)


def _register() -> None:
    signature = inspect.signature(tag, eval_str=True)
    common = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    common = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) if p.name != "input" else p for p in common]
    extra = tag_option_parameters(t.TagOptions for t in TASKS.values())
    tag.__signature__ = signature.replace(parameters=common + extra)
    app.command()(tag)


_register()
