"""What a file looks like: CoNLL-U, a CoNLL column file, part of a QE data set, plain text or binary.

:func:`sniff` reads the first non-blank lines of a file; the readers call it only on their error paths
(reading a valid file never does), so that a file of the wrong kind is reported by its cause ("looks
like CoNLL-U; this is an ner model, which reads CoNLL column files") rather than by its first symptom
("expected 14 columns (as on line 1), found 11"). ``easyfirst tag`` also calls it to tell plain text
from the model's own format.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from easyfirst.data.schemes import is_entity_tag
from easyfirst.errors import InputError

CONLLU, COLUMNS, QE, TEXT, BINARY, EMPTY = "conllu", "columns", "qe", "text", "binary", "empty"
NAMES = {
    CONLLU: "CoNLL-U",
    COLUMNS: "a CoNLL column file",
    QE: "part of a QE data set",
    TEXT: "plain text",
    BINARY: "binary data",
    EMPTY: "empty",
}
EXPECTED = {  # what a reader of each kind reads, as the end of "... which reads ..."
    CONLLU: "CoNLL-U (10 tab-separated columns per word)",
    COLUMNS: "CoNLL column files (one word per line, its tags in columns)",
    QE: "QE data sets (PREFIX.src, PREFIX.mt, PREFIX.src-mt.alignments, PREFIX.tags)",
    TEXT: "plain text",
}
MAGIC = {
    b"\x1f\x8b": "gzip-compressed data (decompress it first: gunzip)",
    b"PK\x03\x04": "a zip archive (a saved model.pt is one too)",
    b"BZh": "bzip2-compressed data (decompress it first: bunzip2)",
    b"\xfd7zXZ\x00": "xz-compressed data (decompress it first: unxz)",
    b"%PDF": "a PDF document",
    b"\x80\x02": "a Python pickle",
}
QE_SUFFIXES = (".src", ".mt", ".src-mt.alignments", ".tags", ".pe")
HEAD_BYTES = 65536
HEAD_LINES = 20
_CONLLU_ID = re.compile(r"\d+(?:-\d+|\.\d+)?")
_PAIR = re.compile(r"\d+-\d+")
_PROSE = re.compile(r"\w[.!?][\"')]*$")  # a line ending in a word with its full stop: untokenized text


@dataclass(frozen=True)
class Looks:
    """What a file looks like: ``kind`` (one of the constants above) and a few words on why."""

    kind: str
    detail: str = ""

    def __str__(self) -> str:
        return NAMES[self.kind] + (f" ({self.detail})" if self.detail else "")


def sniff_lines(lines: Iterable[str]) -> Looks:
    """What the first non-blank ``lines`` (text, line endings allowed) look like."""
    rows = [line.rstrip("\r\n").removeprefix("\ufeff") for line in lines]
    rows = [line for line in rows if line.strip()][:HEAD_LINES]
    if not rows:
        return Looks(EMPTY)
    comments = [line for line in rows if line.startswith("#")]
    tokens = [line for line in rows if not line.startswith("#")]
    tabbed = [line.split("\t") for line in tokens]
    numbered = sum(len(f) == 10 and bool(_CONLLU_ID.fullmatch(f[0])) for f in tabbed)
    if tokens and numbered * 2 > len(tokens):  # most lines: one malformed line is still CoNLL-U
        return Looks(CONLLU, "10 tab-separated columns per word, numbered from 1")
    if any(line.startswith(("# text", "# sent_id")) for line in comments):
        return Looks(CONLLU, "'# sent_id' and '# text' comments")
    fields = [line.split() for line in tokens if line.split()[0] != "-DOCSTART-"]
    if tokens and not fields:
        return Looks(COLUMNS, "-DOCSTART- lines")
    if fields and all(all(f in ("OK", "BAD") for f in row) for row in fields):
        return Looks(QE, "a tags file: OK/BAD per word")
    if fields and all(all(_PAIR.fullmatch(f) for f in row) for row in fields):
        return Looks(QE, "an alignments file: i-j pairs")
    if all(len(row) >= 2 and is_entity_tag(row[-1]) for row in fields):  # widths may differ: a mistake
        return Looks(COLUMNS, "NER: entity tags in the last column")
    width, count = Counter(len(row) for row in fields).most_common(1)[0] if fields else (0, 0)
    rows = [row for row in fields if len(row) == width]
    prose = any(_PROSE.search(row[-1]) for row in rows)
    if width >= 2 and count >= 2 and count * 3 >= 2 * len(fields) and not prose:  # most lines: one odd
        return Looks(COLUMNS, f"{width} columns per line")
    return Looks(TEXT)


def conllu_sentence(lines: Sequence[str]) -> bool:
    """Whether one sentence's ``lines`` (without their endings) have CoNLL-U's shape, whatever a reader
    made of them: comment lines (``#``) first, if any, then lines of exactly 10 tab-separated columns
    whose first column numbers the words 1, 2, ..., n, with multiword-token ranges (``3-4``, starting at
    the next word) and empty nodes (``5.1``, after word 5) between them. A column file that is CoNLL-U
    in fact is refused by this shape, not by the symptom it happens to cause (the ids read as words)."""
    rows = [line.removeprefix("\ufeff") for line in lines]
    while rows and rows[0].startswith("#"):
        rows.pop(0)
    expected = 1
    for row in rows:
        fields = row.split("\t")
        if len(fields) != 10 or not _CONLLU_ID.fullmatch(fields[0]):
            return False
        number, mark = int(re.split(r"[-.]", fields[0])[0]), fields[0].lstrip("0123456789")[:1]
        # a word or a range starts at the next word; an empty node comes after the last one
        if number != (expected - 1 if mark == "." else expected):
            return False
        expected += not mark
    return expected > 1


def sniff(path: str | Path) -> Looks:
    """What the file at ``path`` looks like, from its first bytes (a QE data set also from its name)."""
    path = Path(path)
    name = str(path)
    for suffix in QE_SUFFIXES:
        if name.endswith(suffix) and Path(name[: -len(suffix)] + ".mt").is_file():
            return Looks(QE, f"one file of the data set {name[: -len(suffix)]}")
    if not path.is_file() and Path(name + ".mt").is_file():
        return Looks(QE, f"{name} is the prefix of PREFIX.mt, PREFIX.src, ...")
    try:
        with open(path, "rb") as stream:
            head = stream.read(HEAD_BYTES)
    except OSError:
        return Looks(EMPTY)
    return sniff_bytes(head)


def sniff_bytes(head: bytes) -> Looks:
    """What a file that begins with ``head`` looks like (an incomplete last line is left out)."""
    for magic, what in MAGIC.items():
        if head.startswith(magic):
            return Looks(BINARY, what)
    if b"\x00" in head:
        return Looks(BINARY, "NUL bytes")
    lines = head.splitlines()
    if len(head) == HEAD_BYTES and len(lines) > 1:
        lines = lines[:-1]
    return sniff_lines(line.decode("utf-8", errors="replace") for line in lines)


def reader_phrase(expected: str, task: str | None = None) -> str:
    """``this is a pos model, which reads CoNLL-U ...`` (or, without a task, ``expected CoNLL-U ...``)."""
    if task is None:
        return f"expected {EXPECTED[expected]}"
    # a short name is read letter by letter ("an NER model"), a longer one as a word
    sounds_vowel = task[0] in ("aefhilmnorsx" if len(task) <= 3 else "aeiou")
    article = "an" if sounds_vowel else "a"
    return f"this is {article} {task} model, which reads {EXPECTED[expected]}"


class WrongKind(InputError):
    """A file of another kind than the reader's: ``looks`` says what it looks like, ``expected`` the
    kind the reader reads, ``symptom`` the error the reader ran into first."""

    def __init__(self, symptom: str, looks: Looks, expected: str, path=None, line=None, task=None):
        self.symptom, self.looks, self.expected, self.task = symptom, looks, expected, task
        message = f"{symptom}: this looks like {looks}; {reader_phrase(expected, task)}"
        super().__init__(message, path, line)

    def __reduce__(self):  # pickled by a process that read the file (easyfirst.tagging.readahead, workers)
        return WrongKind, (self.symptom, self.looks, self.expected, self.path, self.line, self.task)

    def for_task(self, task: str) -> WrongKind:
        """The same error, saying which model's task reads what."""
        return WrongKind(self.symptom, self.looks, self.expected, self.path, self.line, task)


def explain(
    error: InputError, expected: str, path: str | Path | None = None, lines: Sequence[str] = ()
) -> InputError:
    """``error`` as a :class:`WrongKind` when the file (``path``, or the file that ``error`` names, or
    else the ``lines`` read so far from a stream) looks like something other than ``expected``; else
    ``error`` itself."""
    if path is None and error.path is not None and Path(error.path).is_file():
        path = error.path  # a stream opened from a named file (easyfirst tag FILE): read its head again
    looks = sniff(path) if path is not None else sniff_lines(lines)
    if looks.kind in (expected, EMPTY):
        return error
    return WrongKind(error.message, looks, expected, error.path, error.line)
