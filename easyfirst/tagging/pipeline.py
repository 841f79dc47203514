"""One path from an input to tagged output, below every front end (CLI, API, notebook, server).

input                                  sentences                        output
-----                                  ---------                        ------
text (split and tokenized by segtok)  ─┐                             ┌─ rows ``word<TAB>tag`` (``tag --text``)
tokens (one sentence, or several)     ─┤                             ├─ the input file back with its tags
a QE triple (src, mt, alignments)     ─┼─ words + extras → Tagger ──┼─ a TSV of distributions
a file or stream (task's format,      ─┤   tags, attention,          ├─ JSON (``Tagged.as_json``,
  plain text sniffed, QE prefix)      ─┘   probabilities, heads      └─   the server's answer)

:class:`Source` is what ``easyfirst tag`` was given (a file, stdin, ``--text``, QE files), found out
before the model is loaded so that input errors come first; :meth:`Source.writer` binds it to a model,
whose writers tag through :func:`predictor`. In memory (the server, a notebook) the path is
:meth:`easyfirst.api.Tagger.tag` itself: sentences (with their QE extras) in, one
easyfirst.tagging.tagged.Tagged per sentence out.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, BinaryIO

from easyfirst.errors import InputError
from easyfirst.tagging.tagged import heads_by_name

# ---------------------------------------------------------------------------- sentences from text


def text_sentences(text: str, pretokenized: bool = False, *, what: str = "--text") -> list[list[str]]:
    """The sentences of a text: split and tokenized by segtok (easyfirst.data.text), or
    (``pretokenized``) one sentence split on whitespace only. No words is an error naming ``what``."""
    return [[token.form for token in tokens] for tokens in text_tokens(text, pretokenized, what=what)]


def text_tokens(text: str, pretokenized: bool = False, *, what: str = "--text") -> list[list]:
    """:func:`text_sentences` as the tokens of easyfirst.data.text (``form``, ``start``, ``end``: their
    characters in ``text``)."""
    from easyfirst.data.text import split, whitespace_tokens

    if pretokenized:
        tokens = whitespace_tokens(text)
        sentences = [tokens] if tokens else []
    else:
        sentences = [s.tokens for s in split(text)]
    if not sentences:
        raise InputError(f"{what} has no words")
    return sentences


def qe_sentence(src: str, mt: str, alignments: str, *, what: str = "request") -> tuple[list[str], dict]:
    """One QE sentence pair given as lines (tokens separated by spaces, Pharaoh ``i-j`` pairs): the MT
    words to tag and their extras (easyfirst.data.qe)."""
    from easyfirst.data.qe import parse_alignment, tokens

    source, words = tokens(src), tokens(mt)
    alignment = parse_alignment(alignments, len(source), len(words), Path(what), None)
    return words, {"source": source, "alignment": alignment}


# ---------------------------------------------------------------------------- the writers' predict


def predictor(tagger, batch_size: int) -> Callable:
    """The ``predict`` that easyfirst's writers call (easyfirst.tasks.Predict), over ``tagger`` (an
    easyfirst.api.Tagger, or one that tags as it does: easyfirst.integrations.dask.ClusterTagger) in
    batches of ``batch_size``: each sentence's tags. With ``batches=`` (the windows read ahead,
    easyfirst.data.conllu.tag_conllu), through the tagger's path for packed batches; with ``extras=`` and
    ``heads=True`` (QE, easyfirst.data.qe.tag_qe), ``(tags, {head: each sentence's tags})``."""

    def predict(sentences, *, batches=None, extras=None, heads: bool = False):
        if batches is not None:
            tagged = tagger._tag_packed(sentences, batches, batch_size=batch_size)
        else:
            tagged = tagger.tag(sentences, extras=extras, heads=heads, batch_size=batch_size)
        tags = [t.tags for t in tagged]
        return (tags, heads_by_name(tagged)) if heads else tags

    return predict


# ---------------------------------------------------------------------------- outputs


def word_rows(sentences: Sequence[Sequence[str]], tags: Sequence[Sequence[str]]) -> bytes:
    """``word<TAB>tag`` per word, a blank line between sentences (``easyfirst tag --text``)."""
    rows = "\n".join(
        "".join(f"{w}\t{t}\n" for w, t in zip(sentence, predicted, strict=True))
        for sentence, predicted in zip(sentences, tags, strict=True)
    )
    return rows.encode()


def write_distributions(out: BinaryIO, tagger, sentences: Iterator[list[str]], batch_size: int) -> None:
    """TSV of each word's output distribution: a header ``word tag TAG1 … TAGK``, then one row per word
    (probabilities with 6 significant digits, exact zeros as 0) and a blank line after each sentence.
    The sentences are read and tagged a window (TAG_WINDOW) at a time."""
    from easyfirst.data.files import TAG_WINDOW

    out.write(("\t".join(["word", "tag", *tagger.tags]) + "\n").encode())
    while chunk := list(islice(sentences, TAG_WINDOW)):
        for tagged in tagger.tag(chunk, probabilities=True, batch_size=batch_size):
            rows = (
                "\t".join([w, t, *(f"{x:.6g}" for x in row)])
                for (w, t), row in zip(tagged, tagged.probabilities.tolist(), strict=True)
            )
            out.write(("".join(row + "\n" for row in rows) + "\n").encode())


def check_output(output: Path | None) -> None:
    """Fail before any work if ``output`` cannot be written."""
    if output is None:
        return
    if output.is_dir():
        raise InputError("is a folder; give a file name", output)
    folder = output.parent if str(output.parent) else Path(".")
    if not folder.is_dir():
        raise InputError("cannot write: the folder does not exist", output)
    if not os.access(folder, os.W_OK):
        raise InputError("cannot write: permission denied", output)


def write_output(output: Path | None, write: Callable[[BinaryIO], Any]) -> None:
    """Call ``write(binary_stream)`` on stdout, or on a temporary file renamed to ``output`` on success."""
    if output is None:
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    from easyfirst.atomic import atomic_write

    check_output(output)
    try:
        atomic_write(output, write)
    except OSError as error:
        raise InputError(f"cannot write: {error.strerror}", output) from None


# ---------------------------------------------------------------------------- files and streams


def open_input(path: str | None) -> tuple[BinaryIO, str]:
    """A binary stream for ``path`` (stdin for None or ``-``, said on stderr where it is a terminal) and
    its name for messages."""
    from easyfirst.data.files import open_binary

    if path is None or path == "-":
        if sys.stdin.isatty():  # `easyfirst tag` typed alone would wait in silence for what is typed
            print("reading from stdin (Ctrl-D to end)", file=sys.stderr, flush=True)
        return sys.stdin.buffer, "<stdin>"
    return open_binary(path), path


def looks_like_text(stream: BinaryIO, input: str | None) -> bool:
    """Whether the file looks like plain text; stdin, a pipe (``<(command)``) or a device from the bytes
    buffered so far, since opening them again to look would take those bytes from the reader."""
    from easyfirst.data import detect

    if input is None or input == "-" or not os.path.isfile(input):
        looks = detect.sniff_bytes(stream.peek(detect.HEAD_BYTES)[: detect.HEAD_BYTES])
    else:
        looks = detect.sniff(input)
    return looks.kind == detect.TEXT


def counting(predict: Callable, counted: Callable[[int], Any]) -> Callable:
    """``predict`` that also tells ``counted`` the words of the sentences it tagged."""

    def counted_predict(sentences, *args, **kwargs):
        tags = predict(sentences, *args, **kwargs)
        counted(sum(len(words) for words in sentences))
        return tags

    return counted_predict


SHORTEST_WORD_LINE = len("1\t_\t_\t_\t_\t_\t_\t_\t_\t_\n")  # bytes of a CoNLL-U word line, at least


@dataclass
class Source:
    """What ``easyfirst tag`` was given: ``text`` (``--text``), ``claimed`` (task, what it read) for an
    input only one task reads (QE files), or an open ``stream`` (``plain``: read as plain text)."""

    text: str | None = None
    pretokenized: bool = False
    claimed: tuple | None = None
    stream: BinaryIO | None = None
    name: str | None = None  # the stream's name for messages
    path: str | None = None  # the input as given (None or - for stdin)
    plain: bool = False
    probabilities: bool = False
    output_format: str = "auto"  # or "jsonl": one JSON object per sentence (easyfirst.tagging.jsonl)
    attention: bool = False  # in the JSON
    ahead: Any = None  # the stream's windows, read by a process of their own (easyfirst.tagging.readahead)
    ahead_for: tuple[str, str, int] | None = None  # the task, tag column and batch size they were read for

    @classmethod
    def find(
        cls,
        input: str | None,
        text: str | None,
        task_options: dict[str, Any],
        *,
        pretokenized: bool = False,
        format: str = "auto",
        probabilities: bool = False,
        output_format: str = "auto",
        attention: bool = False,
    ) -> Source:
        """Read what can be read before the model is loaded (QE files; the head of a file, to tell plain
        text from the model's format, ``format`` being auto, text or model) so that its errors come first.
        ``output_format`` ``jsonl``: one JSON object per sentence, with its ``attention`` if asked."""
        from easyfirst.tasks import TASKS

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
        if claimed is not None and probabilities and output_format != "jsonl":
            raise InputError(
                f"--probabilities: not for {claimed[0].name.upper()} input (it writes a tags file)"
            )
        found = cls(text, pretokenized, claimed, path=input, probabilities=probabilities)
        found.output_format, found.attention = output_format, attention
        if claimed is None and text is None:
            found.stream, found.name = open_input(input)
            found.plain = format == "text" or (format == "auto" and looks_like_text(found.stream, input))
        return found

    def read_ahead(self, model: Path | None, batch_size: int) -> None:
        """Start reading the stream, indexing its words in the vocabularies of ``model`` (None: the
        bundled one) and forming its batches of ``batch_size`` sentences, in a process forked now
        (easyfirst.tagging.readahead), while this one imports torch and loads the model: where the model's task
        reads ahead (CoNLL-U for POS), the file is in its format, and there is a second core. Call it
        before torch is imported. The task and tag column are read from config.json as they stand,
        unvalidated (validating imports torch); :meth:`writer` uses the windows only if the loaded model
        has the same and the batch size is its own, and leaves anything odd about the folder for loading
        it to report."""
        from easyfirst.atomic import read_json
        from easyfirst.config import DataConfig
        from easyfirst.parallel.cores import MIN_WORDS, available_cores, tagging_processes
        from easyfirst.resources import CONFIG_FILE, model_folder
        from easyfirst.tasks import TASKS

        if self.stream is None or self.plain or self.probabilities or self.output_format != "auto":
            return
        if available_cores() < 2:
            return
        if not hasattr(os, "fork"):  # Windows
            return
        folder = model_folder(model)
        try:
            data = read_json(folder / CONFIG_FILE)["data"]
            task, column = TASKS[data["task"]], data.get("tag_column", DataConfig.tag_column)
        except (InputError, OSError, KeyError, TypeError, AttributeError):
            return
        if not task.format.reads_ahead:
            return
        from easyfirst.data.files import open_binary
        from easyfirst.tagging.readahead import ReadAhead

        path, stream, name = self.path, self.stream, self.name
        own = self.own_file()  # opened again by the reader: this process's stream stays unread
        self.ahead = ReadAhead(  # and a copy of each window's words and batches for each tagging worker
            lambda: task.read_ahead(open_binary(path) if own else stream, folder, column, name, batch_size),
            copies=tagging_processes() - 1 if self.may_hold(MIN_WORDS) else 0,
            copy=lambda window: (window.words, window.batches),
        )
        self.ahead_for = (task.name, column, batch_size)

    def may_hold(self, words: int) -> bool:
        """Whether the input may hold ``words`` words: a file smaller than that many of the shortest
        word lines (ten one-character fields and the line's end) cannot; stdin may."""
        return not self.own_file() or os.path.getsize(self.path) >= words * SHORTEST_WORD_LINE

    def own_file(self) -> bool:
        """Whether the input is a regular file, which another process can open and read for itself."""
        return self.path not in (None, "-") and os.path.isfile(self.path)

    def close(self) -> None:
        if self.ahead is not None:
            self.ahead.close()
        if self.stream is not None and self.stream is not sys.stdin.buffer:
            self.stream.close()

    def writer(
        self,
        tagger,
        task_options: dict[str, Any],
        *,
        batch_size: int,
        output: Path | None,
        model: Path | None = None,
        counted: Callable[[int], Any] | None = None,
    ) -> Callable[[BinaryIO], Any]:
        """``write(out)`` writing this input tagged by ``tagger`` (loaded from ``model``, named in
        messages); the errors of a model that cannot tag this input are raised here, before anything
        is written. ``counted(words)``: told the words of each window tagged (a progress bar)."""
        from easyfirst.data import detect
        from easyfirst.data.text import read_text, tag_text
        from easyfirst.tasks import get_task

        # a writable copy of the model's data settings for this input (tag options such as --encoding)
        task, data = get_task(tagger.config.data.task), tagger.config.data.thawed()
        if self.claimed is not None and self.claimed[0] is not task:
            kind = self.claimed[0].name
            raise InputError(f"{kind.upper()} input needs a {kind} model; this is a {task.name} model", model)
        if self.claimed is None and task.format.unclaimed_input is not None:
            if self.own_file():  # a file of another kind: say what it looks like, as the readers do
                looks = detect.sniff(self.path)
                raise InputError(f"this looks like {looks}; {task.format.unclaimed_input}", self.path)
            raise InputError(task.format.unclaimed_input)
        options = task.tag_options(task_options)
        task.format.configure(data, options)
        column = task.format.text_column(data)
        if (self.plain or self.text is not None) and column is None:
            raise InputError(
                f"a {task.name} model cannot tag plain text: give it {task.format.input_kind}", self.path
            )
        stream, name = self.stream, self.name
        if self.output_format == "jsonl":
            return self.jsonl_writer(tagger, task, data, batch_size, counted)
        if self.probabilities:
            if self.text is not None:
                sentences = iter(text_sentences(self.text, self.pretokenized))
            elif self.plain:
                sentences = iter(s.words for s in read_text(stream, name))
            else:  # one batch at a time where the format allows (CoNLL-U), so a large file fits in memory
                sentences = (s.words for s in task.stream(stream, data, name))
            return lambda out: write_distributions(out, tagger, sentences, batch_size)
        predict = predictor(tagger, batch_size)
        if self.text is not None:
            words = text_sentences(self.text, self.pretokenized)
            rows = word_rows(words, predict(words))
            return lambda out: out.write(rows)
        if counted is not None:
            predict = counting(predict, counted)
        if self.plain:
            return lambda out: tag_text(stream, out, predict, column, name=name)
        source = self.claimed[1] if self.claimed is not None else stream
        ahead = {}
        if self.ahead is not None:
            if self.ahead_for == (task.name, getattr(data, "tag_column", None), batch_size):
                ahead = {"windows": self.ahead}
                tagger.follow(self.ahead.copies, batch_size=batch_size)  # the workers read the windows too
            elif self.own_file():  # read for another task, column or batch size: read here instead
                self.ahead.close()
                self.ahead = None
            else:  # stdin (or a pipe) is the reading process's
                raise RuntimeError("the input was read ahead for another task, column or batch size")
        return lambda out: task.write(source, out, predict, data, options, name=name, output=output, **ahead)

    def jsonl_writer(self, tagger, task, data, batch_size: int, counted=None) -> Callable[[BinaryIO], Any]:
        """``write(out)`` of one JSON object per sentence (easyfirst.tagging.jsonl): with each token's
        offsets where the input is text (--text, or a plain-text file or stdin, read whole here), and a
        QE model's gap and source tags for QE input."""
        from easyfirst.data.text import read_plain, split
        from easyfirst.tagging.jsonl import write_jsonl

        asked = dict(attention=self.attention, probabilities=self.probabilities, batch_size=batch_size)
        text = extras = None
        if self.text is not None:
            text, sentences = self.text, text_tokens(self.text, self.pretokenized)
        elif self.plain:
            text = read_plain(self.stream, self.name)
            sentences = [s.tokens for s in split(text)]
        elif self.claimed is not None:  # QE: the MT sentences, with their source and alignment
            sentences, extras = [s.words for s in self.claimed[1]], [s.extra for s in self.claimed[1]]
        else:  # a file in the model's format: its tokens, one window at a time
            sentences = (s.words for s in task.stream(self.stream, data, self.name))
        return lambda out: write_jsonl(
            out, tagger, sentences, text=text, extras=extras, counted=counted, **asked
        )
