"""``easyfirst tag``: a file (or stdin, or --text) in, the same file with the predicted tags out.

The options that only one task reads (--replace, --scheme, --encoding for column files; --src, --mt,
--alignments, --gaps for QE) are the fields of the tasks' ``TagOptions`` (easyfirst.tasks).
"""

from __future__ import annotations

import inspect
import os
import time
from pathlib import Path
from typing import Annotated

import typer

from easyfirst.atomic import remove_stale_temporaries
from easyfirst.cli.app import app
from easyfirst.cli.common import (
    BackendOption,
    BatchOption,
    DeviceOption,
    ModelOption,
    check_option,
    err,
    given_path,
    load_tagger,
    say_backend,
)
from easyfirst.cli.options import LAZY_CHOICES, tag_option_parameters
from easyfirst.errors import InputError
from easyfirst.fields import at_least
from easyfirst.tagging.corpus import Corpus, plan, several
from easyfirst.tagging.pipeline import Source, check_output, write_output
from easyfirst.tasks import TASKS

InputArgument = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="FILE",
        help="File to tag in the format of the model's task ("
        + "; ".join(f"{t.name}: {t.format.input_kind}" for t in TASKS.values())
        + "), or plain text (see --format), or - for stdin. Several files or folders (each "
        "standing for the files in it): each is written to -o DIR under its own name.",
    ),
]


OutputFormatOption = Annotated[
    str,
    typer.Option(
        "--output-format",
        help="auto: the input's own format (CoNLL-U for plain text, word<TAB>tag for --text); jsonl: one "
        "JSON object per sentence (tokens, their character offsets where the input is text, tags, "
        "entities for ner models; attention and probabilities when asked), as the server answers each "
        "sentence.",
    ),
]
AttentionOption = Annotated[
    bool,
    typer.Option(
        "--attention",
        help="With --output-format jsonl: each sentence's attention, one row of αⁿ per sketch step.",
    ),
]


def tag(
    input: InputArgument = None,
    model: ModelOption = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            parser=given_path,
            metavar="FILE|DIR",
            help="Output file (default: stdout); with several inputs or a folder, the folder to write "
            "them into (made if missing; inputs whose output is there already are skipped).",
        ),
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
    backend: BackendOption = "auto",
    probabilities: Annotated[
        bool,
        typer.Option(
            "--probabilities",
            help="Write each word's output distribution instead (TSV: word, tag, one column per tag; "
            "a blank line between sentences). Sparse models give exact zeros; CRF models, marginals.",
        ),
    ] = False,
    output_format: OutputFormatOption = "auto",
    attention: AttentionOption = False,
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

    --output-format jsonl: one JSON object per sentence (offsets, entities), as the server answers.
    Many inputs (FILE... or folders, -o DIR): one model, each input written to DIR/its name as if alone;
    those done already are skipped, a bad one reported and the others tagged (exit status 2).
    """
    check_writes(output_format, attention)
    writes = dict(probabilities=probabilities, output_format=output_format, attention=attention)
    if several(input or []):
        corpus = plan_corpus(input, output, text, format, pretokenized, batch_size, output_format)
        return tag_corpus(corpus, (model, device, backend), task_options, format, writes, batch_size)
    input = input[0] if input else None
    check_arguments(input, text, format, pretokenized, batch_size, output)
    source = Source.find(input, text, task_options, pretokenized=pretokenized, format=format, **writes)
    try:
        if device == "cpu":  # before torch is imported (by load_tagger): a second core reads ahead
            source.read_ahead(model, batch_size)
        tagger = load_tagger(model, device, backend=backend)
        write = source.writer(tagger, task_options, batch_size=batch_size, output=output, model=model)
        if output is not None:
            remove_stale_temporaries([output])  # one a killed run left
        write_output(output, write)
    finally:
        source.close()
    say_backend(tagger)  # once the tags are written: a refused input or an interrupt says that alone
    if output is not None:  # what a verb writes it says, in one line (stdout carries the tags otherwise)
        err.print(f"wrote {output}", markup=False, highlight=False, soft_wrap=True)


def plan_corpus(
    inputs: list[str], output: Path | None, text, format, pretokenized, batch_size, output_format
) -> Corpus:
    """Many inputs' outputs in the -o folder (easyfirst.tagging.corpus), found before the model is loaded."""
    check_arguments(None, text, format, pretokenized, batch_size, None)
    if text is not None:
        raise InputError("give either input files or --text, not both")
    if output is None:
        raise InputError("several inputs are written into a folder: give -o DIR")
    return plan(inputs, output, ".jsonl" if output_format == "jsonl" else "")


def tag_corpus(corpus: Corpus, loading: tuple, task_options, format, writes: dict, batch_size) -> None:
    """Tag each input of ``corpus`` into its output with one model (``loading``: model, device and
    backend, as :func:`load_tagger` takes them; ``writes``: what to write, Source.find's keywords),
    loaded once (after the first input's read-ahead has started); a bad input is reported and the
    others go on. Raises typer.Exit(2) after a one-line summary if any failed."""
    if corpus.skipped:
        said = (
            f"skipped {corpus.skipped} of {corpus.total} inputs: their output is in {corpus.folder} already"
        )
        err.print(said, markup=False, highlight=False)
    corpus.folder.mkdir(exist_ok=True)
    remove_stale_temporaries(output for _, output in corpus.todo)  # those a killed run left
    model, device, backend = loading
    tagger, failed = None, 0
    with Progress.for_files(corpus) as progress:
        for given, output in corpus.todo:
            progress.start(given)
            try:
                source = Source.find(given, None, task_options, format=format, **writes)
            except InputError as error:
                failed += progress.failed(error)
                continue
            try:
                if device == "cpu":  # the first before torch is imported, as for one input
                    source.read_ahead(model, batch_size)
                if tagger is None:
                    tagger = load_tagger(model, device, backend=backend)
                try:
                    write = source.writer(
                        tagger,
                        task_options,
                        batch_size=batch_size,
                        output=output,
                        model=model,
                        counted=progress.words,
                    )
                    write_output(output, write)
                except InputError as error:
                    failed += progress.failed(error)
                    continue
            finally:
                source.close()
                if tagger is not None:
                    tagger.close()  # its processes followed this input's read-ahead
            progress.done(given)
    if tagger is not None:
        say_backend(tagger)
    if failed:
        done = len(corpus.todo) - failed
        said = f"{failed} of {corpus.total} inputs failed (above); {done} tagged into {corpus.folder}"
        err.print(
            said + (f", {corpus.skipped} there already" if corpus.skipped else ""),
            markup=False,
            highlight=False,
        )
        raise typer.Exit(2)
    if corpus.todo:  # what it wrote, in one line (the skipped ones were said above)
        count = len(corpus.todo)
        err.print(
            f"tagged {count} input{'s' * (count > 1)} into {corpus.folder}", markup=False, highlight=False
        )


class Progress:
    """A progress bar on stderr while many inputs are tagged: inputs done, words tagged, words per
    second and the time left (from the bytes of the inputs left); nothing off a terminal. A failed
    input's line is printed above it (and off a terminal too)."""

    WORD_BYTES = 40  # bytes per word (a CoNLL-U word line, roughly) until a finished input tells

    def __init__(self, sizes: list[int]):
        self.sizes, self.total = sizes, sum(sizes)
        self.files = self.file_words = self.bytes_done = self.words_before = 0
        self.bar = None
        if err.is_terminal:
            from rich.progress import BarColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as Bar

            self.bar = Bar(
                TextColumn("{task.fields[files]}"),
                BarColumn(),
                TextColumn("{task.fields[words]} words, {task.fields[rate]} words/s"),
                TimeRemainingColumn(),
                console=err,
            )

    @classmethod
    def for_files(cls, corpus: Corpus) -> Progress:
        return cls([os.path.getsize(given) if os.path.isfile(given) else 0 for given, _ in corpus.todo])

    def __enter__(self) -> Progress:
        if self.bar is not None:
            self.bar.start()
            self.task = self.bar.add_task("", total=max(self.total, 1), files="", words=0, rate=0)
            self._show()
        self.started = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def start(self, given: str) -> None:
        self.file_words = 0

    def words(self, count: int) -> None:
        """``count`` more words of the current input tagged."""
        self.file_words += count
        self._show()

    def done(self, given: str | None = None) -> None:
        """The current input is finished (written, or failed)."""
        self.bytes_done += self.sizes[self.files]
        self.words_before += self.file_words
        self.files, self.file_words = self.files + 1, 0
        self._show()

    def failed(self, error: InputError) -> int:
        """Report the current input's error in its line; 1, the inputs that failed."""
        err.print(str(error), markup=False, highlight=False, soft_wrap=True)
        self.done()
        return 1

    def _show(self) -> None:
        if self.bar is None:
            return
        per_word = self.bytes_done / self.words_before if self.words_before else self.WORD_BYTES
        size = self.sizes[self.files] if self.files < len(self.sizes) else 0
        words = self.words_before + self.file_words
        rate = words / max(time.monotonic() - self.started, 1e-9) if words else 0
        self.bar.update(
            self.task,
            completed=self.bytes_done + min(size, self.file_words * per_word),
            files=f"{self.files}/{len(self.sizes)} files",
            words=f"{words:,}",
            rate=f"{rate:,.0f}",
        )


FORMATS = ("auto", "text", "model")
LAZY_CHOICES["format"] = lambda: list(FORMATS)  # --help shows <auto|text|model>
OUTPUT_FORMATS = ("auto", "jsonl")
LAZY_CHOICES["output_format"] = lambda: list(OUTPUT_FORMATS)


def check_arguments(input, text, format, pretokenized, batch_size, output) -> None:
    """The user errors ``tag`` can find before it opens anything (but --device: that imports torch)."""
    if text is not None and input is not None:
        raise InputError("give either an input file or --text, not both")
    if format not in FORMATS:
        raise InputError(f"--format must be {', '.join(FORMATS[:-1])} or {FORMATS[-1]}, not {format!r}")
    if pretokenized and text is None:
        raise InputError("--pretokenized goes with --text (a file of tokens is a CoNLL file: --format model)")
    check_option("--batch-size", batch_size, at_least(1))
    check_output(output)


def check_writes(output_format: str, attention: bool) -> None:
    """The user errors in what ``tag`` is asked to write."""
    if output_format not in OUTPUT_FORMATS:
        raise InputError(f"--output-format must be auto or jsonl, not {output_format!r}")
    if attention and output_format != "jsonl":
        raise InputError("--attention goes with --output-format jsonl (a raindrop of it: easyfirst plot)")


def _register() -> None:
    signature = inspect.signature(tag, eval_str=True)
    common = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    common = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) if p.name != "input" else p for p in common]
    extra = tag_option_parameters(t.format.TagOptions for t in TASKS.values())
    tag.__signature__ = signature.replace(parameters=common + extra)
    app.command()(tag)


_register()
