"""Word-level translation quality estimation (WMT): parallel files, one sentence per line.

A data set ``PREFIX`` is the files

- ``PREFIX.src``: the source sentence, tokenized (words separated by spaces);
- ``PREFIX.mt``: its machine translation, tokenized: the words to tag;
- ``PREFIX.src-mt.alignments``: Pharaoh word alignments ``i-j`` (0-based source index ``i``, MT index
  ``j``), separated by spaces; a word may be aligned to several words or to none;
- ``PREFIX.tags`` (optional when tagging): ``OK``/``BAD`` tags, either one per MT word (WMT16/17) or
  2N+1 for N MT words (WMT18 onward): a gap tag before, between and after the words, so that the word
  tags are at the odd positions (0-based). All lines of a file must use the same format;
- ``PREFIX.source_tags`` (optional): one ``OK``/``BAD`` tag per source word (WMT18 onward: source words
  that were mistranslated or left out), read with the ``.tags`` file for training and scoring;
- ``PREFIX.pe`` (optional): the post-edited translation, read and kept but not used for tagging.

Tagging never reads ``.tags`` or ``.source_tags``: a model predicts word, gap and source tags from the
source, the MT words and the alignment alone.

Every mistake is an :class:`~easyfirst.errors.InputError` naming the file and line: files with different
line counts, a tag count that fits neither format, a tag other than OK/BAD, a malformed alignment pair,
an alignment index past the end of its sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from easyfirst.data import detect
from easyfirst.data.files import decode_line, open_binary, without_bom
from easyfirst.errors import InputError

QE_TAGS = ("OK", "BAD")  # word, gap and source-word tags of word-level QE

SUFFIXES = {
    "src": ".src",
    "mt": ".mt",
    "alignments": ".src-mt.alignments",
    "tags": ".tags",
    "source_tags": ".source_tags",
    "pe": ".pe",
}
WORD_FORMAT, GAP_FORMAT = "words", "gaps"  # one tag per MT word; 2N+1 tags with gap tags
FORMAT_NAMES = {WORD_FORMAT: "one tag per word", GAP_FORMAT: "2N+1 tags (with gaps)"}
_PAIR = re.compile(r"(\d+)-(\d+)")
_SPACES = re.compile(r"[ \t]+")


@dataclass
class QESentence:
    """One MT sentence with its source and alignment; ``line`` is its (1-based) line in every file.

    ``words`` and ``tags`` are the MT words and their OK/BAD tags (``tags`` is None without a tags
    file); ``alignment`` holds ``(source index, MT index)`` pairs, 0-based, sorted and unique;
    ``gaps`` holds the N+1 gap tags of a 2N+1 tags line (None in the one-tag-per-word format);
    ``source_tags`` one tag per source word (None without a source tags file).
    """

    words: list[str]
    source: list[str]
    alignment: list[tuple[int, int]]
    tags: list[str] | None = None
    gaps: list[str] | None = None
    post_edit: list[str] | None = None
    line: int = 0
    source_tags: list[str] | None = None

    @property
    def extra(self) -> dict:
        """The inputs beside the MT words, for the QE features (easyfirst.data.features)."""
        return {"source": self.source, "alignment": self.alignment}


@dataclass
class QEFiles:
    """The paths of one QE data set; ``tags``, ``pe`` and ``source_tags`` may be absent."""

    src: Path
    mt: Path
    alignments: Path
    tags: Path | None = None
    pe: Path | None = None
    source_tags: Path | None = None

    @classmethod
    def from_prefix(cls, prefix: str | Path, *, need_tags: bool = True) -> QEFiles:
        """``PREFIX.src``, ``PREFIX.mt``, ... ; the tags file is required when ``need_tags``."""
        prefix = str(prefix)
        for ending in SUFFIXES.values():  # a path to one of the files names its prefix too
            if prefix.endswith(ending) and not Path(prefix + ending).exists():
                prefix = prefix[: -len(ending)]
                break
        paths = {key: Path(prefix + ending) for key, ending in SUFFIXES.items()}
        required = ["src", "mt", "alignments"] + (["tags"] if need_tags else [])
        missing = [str(paths[key]) for key in required if not paths[key].is_file()]
        if missing:
            error = InputError(
                "a QE data set is the files PREFIX.src, PREFIX.mt, PREFIX.src-mt.alignments and "
                f"PREFIX.tags; missing: {', '.join(missing)}",
                prefix,
            )
            if Path(prefix).is_file():  # a file of another kind, given where a data set was expected
                error = InputError("a file, not the prefix of a QE data set", prefix)
                raise detect.explain(error, detect.QE, prefix)
            raise error
        return cls(
            paths["src"],
            paths["mt"],
            paths["alignments"],
            paths["tags"] if paths["tags"].is_file() else None,
            paths["pe"] if paths["pe"].is_file() else None,
            paths["source_tags"] if paths["source_tags"].is_file() else None,
        )


def is_qe_prefix(prefix: str | Path) -> bool:
    """Whether ``PREFIX.mt`` exists, i.e. ``prefix`` names a QE data set rather than a file."""
    return Path(str(prefix) + SUFFIXES["mt"]).is_file()


def tokens(line: str) -> list[str]:
    """Words of a tokenized line: split on spaces and tabs only (a no-break space stays inside a word)."""
    stripped = line.strip(" \t")
    return _SPACES.split(stripped) if stripped else []


def _lines(path: Path) -> Iterator[str]:
    """The lines of a UTF-8 text file without their endings (LF or CRLF; a BOM is dropped)."""
    with open_binary(path) as stream:
        for number, raw in enumerate(stream, 1):
            yield without_bom(decode_line(raw, path, number), number).rstrip("\r\n")


def parse_alignment(line: str, n_source: int, n_mt: int, path: Path, number: int) -> list[tuple[int, int]]:
    """Pharaoh ``i-j`` pairs → sorted unique ``(i, j)``; errors name the pair and what is wrong."""
    pairs = set()
    for item in tokens(line):
        match = _PAIR.fullmatch(item)
        if match is None:
            raise InputError(
                f"malformed alignment pair {item!r}: expected i-j (0-based source index, MT index)",
                path,
                number,
            )
        i, j = int(match.group(1)), int(match.group(2))
        if i >= n_source:
            raise InputError(
                f"alignment {item}: source index {i} out of range (the source sentence has {n_source} words)",
                path,
                number,
            )
        if j >= n_mt:
            raise InputError(
                f"alignment {item}: MT index {j} out of range (the MT sentence has {n_mt} words)",
                path,
                number,
            )
        pairs.add((i, j))
    return sorted(pairs)


def split_tags(tags: list[str], n_words: int, path: Path, number: int) -> tuple[list[str], list[str] | None]:
    """A tags line → (word tags, gap tags or None): N tags (one per word) or 2N+1 (gaps at even positions)."""
    for tag in tags:
        if tag not in QE_TAGS:
            raise InputError(f"tag {tag!r} is neither OK nor BAD", path, number)
    if len(tags) == n_words:
        return tags, None
    if len(tags) == 2 * n_words + 1:
        return tags[1::2], tags[0::2]
    raise InputError(
        f"{len(tags)} tags for {n_words} MT words: expected {n_words} (one per word) or "
        f"{2 * n_words + 1} (2N+1, with gap tags)",
        path,
        number,
    )


def check_source_tags(tags: list[str], source: list[str], path: Path, number: int) -> list[str]:
    """A source tags line: one OK/BAD per source word."""
    for tag in tags:
        if tag not in QE_TAGS:
            raise InputError(f"source tag {tag!r} is neither OK nor BAD", path, number)
    if len(tags) != len(source):
        raise InputError(
            f"{len(tags)} source tags for {len(source)} source words: expected one per source word",
            path,
            number,
        )
    return tags


def read_qe(files: QEFiles | str | Path, *, with_tags: bool = True) -> list[QESentence]:
    """Read a QE data set (a :class:`QEFiles` or a prefix); ``with_tags=False`` ignores any tags and
    source tags files (tagging reads the inputs only)."""
    if not isinstance(files, QEFiles):
        files = QEFiles.from_prefix(files, need_tags=with_tags)
    streams = {"src": files.src, "mt": files.mt, "alignments": files.alignments}
    if with_tags and files.tags is not None:
        streams["tags"] = files.tags
    if with_tags and files.source_tags is not None:
        streams["source_tags"] = files.source_tags
    if files.pe is not None:
        streams["pe"] = files.pe
    readers = {key: _lines(path) for key, path in streams.items()}
    sentences: list[QESentence] = []
    tag_format: tuple[str, int] | None = None  # the tags file's format and the line that set it
    number = 0
    while True:
        number += 1
        lines = {key: next(reader, None) for key, reader in readers.items()}
        ended = [key for key, line in lines.items() if line is None]
        if len(ended) == len(lines):
            break
        if ended:
            shorter, longer = streams[ended[0]], streams[next(k for k in lines if k not in ended)]
            raise InputError(
                f"the file ends after line {number - 1}, but {longer} goes on: the files of a QE data set "
                "need one line per sentence each",
                shorter,
                number,
            )
        words, source = tokens(lines["mt"]), tokens(lines["src"])
        sentence = QESentence(
            words,
            source,
            parse_alignment(lines["alignments"], len(source), len(words), files.alignments, number),
            line=number,
        )
        if "tags" in lines:
            sentence.tags, sentence.gaps = split_tags(tokens(lines["tags"]), len(words), files.tags, number)
            fmt = WORD_FORMAT if sentence.gaps is None else GAP_FORMAT
            if words and tag_format is None:
                tag_format = (fmt, number)
            elif words and fmt != tag_format[0]:
                raise InputError(
                    f"{FORMAT_NAMES[fmt]} here, but line {tag_format[1]} used {FORMAT_NAMES[tag_format[0]]}: "
                    "a tags file must use one format throughout",
                    files.tags,
                    number,
                )
        if "source_tags" in lines:
            sentence.source_tags = check_source_tags(
                tokens(lines["source_tags"]), source, files.source_tags, number
            )
        if "pe" in lines:
            sentence.post_edit = tokens(lines["pe"])
        sentences.append(sentence)
    if tag_format is not None:  # an empty MT line has "" in one format and one gap tag in the other
        for sentence in sentences:
            if not sentence.words and (sentence.gaps is not None) != (tag_format[0] == GAP_FORMAT):
                raise InputError(
                    f"{len(sentence.gaps or [])} tags for an empty MT sentence, but line {tag_format[1]} used "
                    f"{FORMAT_NAMES[tag_format[0]]}",
                    files.tags,
                    sentence.line,
                )
    return sentences


def tags_format(sentences: Sequence[QESentence]) -> str:
    """``gaps`` when the sentences were read from a 2N+1 tags file, else ``words``."""
    return GAP_FORMAT if any(s.gaps is not None and s.words for s in sentences) else WORD_FORMAT


def format_tags(tags: Sequence[str], gaps: Sequence[str] | None = None, *, with_gaps: bool = False) -> str:
    """One tags line: the word tags, or 2N+1 tags with ``gaps`` (all ``OK`` when none are known)."""
    if not with_gaps:
        return " ".join(tags)
    gaps = list(gaps) if gaps is not None else ["OK"] * (len(tags) + 1)
    if len(gaps) != len(tags) + 1:
        raise ValueError(f"{len(tags)} word tags need {len(tags) + 1} gap tags, not {len(gaps)}")
    merged = [gaps[0]]
    for tag, gap in zip(tags, gaps[1:], strict=True):
        merged += [tag, gap]
    return " ".join(merged)


def write_tags(
    out: BinaryIO,
    tags: Sequence[Sequence[str]],
    gaps: Sequence[Sequence[str] | None] | None = None,
    *,
    with_gaps: bool = False,
) -> None:
    """Write a tags file: one line per sentence, in the one-tag-per-word or (``with_gaps``) 2N+1 format.

    In the 2N+1 format, ``gaps[k]`` are sentence k's gap tags (predicted); where they are not known (a
    model that predicts word tags only), gaps are written ``OK``. The caller makes the write atomic (see
    easyfirst.atomic).
    """
    gaps = gaps if gaps is not None else [None] * len(tags)
    text = "".join(
        format_tags(line, gap, with_gaps=with_gaps) + "\n" for line, gap in zip(tags, gaps, strict=True)
    )
    out.write(text.encode("utf-8"))


def tag_qe(
    sentences: Sequence[QESentence],
    out: BinaryIO,
    predict,
    *,
    gaps: bool | None = None,
    write_source_tags=None,
) -> int:
    """Write a tags file for ``sentences`` with ``predict``'s tags; returns the number of lines.

    ``predict(words, extras=..., heads=True)`` gives ``(tags, heads)``, ``heads`` each head's tags by sentence
    (easyfirst.tagging.pipeline.predictor over :meth:`easyfirst.api.Tagger.tag`).
    Only the sentences' inputs are read (never gold tags). ``gaps``: write 2N+1 tags (True), one per word
    (False), or 2N+1 exactly when the model predicts gaps (None); a model that does not writes every gap
    ``OK``. When the model predicts source tags, ``write_source_tags(bytes)`` gets them, one line per
    sentence, before anything is written to ``out``.
    """
    tags, heads = predict(
        [s.words for s in sentences],
        extras=[s.extra for s in sentences],
        heads=True,
    )
    if write_source_tags is not None and "source_tags" in heads:
        write_source_tags("".join(" ".join(line) + "\n" for line in heads["source_tags"]).encode("utf-8"))
    with_gaps = "gaps" in heads if gaps is None else gaps
    write_tags(out, tags, heads.get("gaps"), with_gaps=with_gaps)
    return len(sentences)
