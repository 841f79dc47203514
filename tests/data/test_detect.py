"""What a file looks like (easyfirst.data.detect), and readers naming the cause of a wrong kind of file."""

from __future__ import annotations

import gzip
import io

import pytest

from easyfirst.data import detect
from easyfirst.data.conll import read_conll, tag_conll
from easyfirst.data.conllu import read_conllu, tag_conllu
from easyfirst.data.qe import read_qe
from easyfirst.errors import InputError

CONLLU = (
    "# sent_id = 1\n"
    "# text = She reads.\n"
    "1\tShe\tshe\tPRON\tPRP\t_\t2\tnsubj\t_\t_\n"
    "2\treads\tread\tVERB\tVBZ\t_\t0\troot\t_\tSpaceAfter=No\n"
    "3\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_\n"
    "\n"
)
NER = "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\nU.S. NNP B-NP B-LOC\n. . O O\n"
POS_COLUMNS = "The\tDT\nU.S.\tNNP\nagreed\tVBD\n.\t.\n"
TEXT = "She reads a book. It is\nlong.\n\nThe end.\n"


@pytest.mark.parametrize(
    ("content", "kind", "detail"),
    [
        (CONLLU, detect.CONLLU, "10 tab-separated"),
        ("".join(line for line in CONLLU.splitlines(True) if not line.startswith("#")), detect.CONLLU, ""),
        ("# sent_id = 1\n# text = x\n", detect.CONLLU, "comments"),
        (NER, detect.COLUMNS, "NER"),
        (POS_COLUMNS, detect.COLUMNS, "2 columns per line"),
        ("OK OK BAD\nOK\n", detect.QE, "tags"),
        ("0-0 1-2\n0-1\n", detect.QE, "alignments"),
        (TEXT, detect.TEXT, ""),
        ("She reads.\nHe runs.\n", detect.TEXT, ""),  # two lines of two words: prose, not columns
        ("\n  \n", detect.EMPTY, ""),
    ],
)
def test_sniff(tmp_path, content, kind, detail):
    path = tmp_path / "file"
    path.write_text(content, encoding="utf-8")
    looks = detect.sniff(path)
    assert looks.kind == kind
    assert detail in looks.detail


def test_sniff_binary_and_qe_by_name(tmp_path):
    (tmp_path / "a.conllu.gz").write_bytes(gzip.compress(CONLLU.encode()))
    assert detect.sniff(tmp_path / "a.conllu.gz") == detect.Looks(detect.BINARY, detect.MAGIC[b"\x1f\x8b"])
    (tmp_path / "nul").write_bytes(b"abc\x00def\n")
    assert detect.sniff(tmp_path / "nul").kind == detect.BINARY
    for suffix in (".src", ".mt", ".tags"):
        (tmp_path / f"dev{suffix}").write_text("Das ist gut .\n", encoding="utf-8")
    assert detect.sniff(tmp_path / "dev.src").kind == detect.QE
    assert detect.sniff(tmp_path / "dev").kind == detect.QE  # the prefix itself


def test_a_column_file_given_to_the_conllu_reader_names_the_cause(tmp_path):
    path = tmp_path / "eng.testa"
    path.write_text(NER, encoding="utf-8")
    with pytest.raises(detect.WrongKind) as caught:
        read_conllu(path)
    error = caught.value
    assert (error.path, error.line) == (str(path), 1)
    assert str(error) == (
        f"{path}:1: expected 10 tab-separated columns, found 1: this looks like a CoNLL column file "
        "(NER: entity tags in the last column); expected CoNLL-U (10 tab-separated columns per word)"
    )
    assert str(error.for_task("pos")).endswith(
        "this is a pos model, which reads CoNLL-U (10 tab-separated columns per word)"
    )


def test_a_conllu_file_given_to_the_column_reader_names_the_cause(tmp_path):
    path = tmp_path / "en.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    with pytest.raises(
        detect.WrongKind, match=r"en.conllu:2: expected 4 columns \(as on line 1\), found 5"
    ) as caught:
        read_conll(path)
    assert "this looks like CoNLL-U" in str(caught.value)
    assert "this is an ner model, which reads CoNLL column files" in str(caught.value.for_task("ner"))
    # without comments every line has 10 columns: refused by its shape, before any tag is read, and
    # by the tagger as well, which reads no tag column (it once tagged the ids 1, 2, 3 as the words)
    path.write_text("".join(line for line in CONLLU.splitlines(True) if not line.startswith("#")))
    shape = r"en.conllu:1: its first column numbers the words 1, 2, 3, .*this looks like CoNLL-U"
    with pytest.raises(detect.WrongKind, match=shape):
        read_conll(path)
    out = io.BytesIO()
    with pytest.raises(detect.WrongKind, match=shape):
        tag_conll(path, out, lambda batch: [["O"] * len(words) for words in batch])
    assert out.getvalue() == b""


@pytest.mark.parametrize(
    "comments",
    [
        "",
        "# sent_id = 1\n# text = She reads.\n",
        "# text = She reads a book on the mat\n",  # ten fields, as a CoNLL-U line: once read as one
    ],
)
@pytest.mark.parametrize("ids", ["plain", "ranges and empty nodes"])
def test_conllu_is_refused_by_the_column_reader_by_its_shape(tmp_path, comments, ids):
    """CoNLL-U (10 tab-separated columns, words numbered 1..n, with ranges and empty nodes or not),
    with comment lines or without, is never read as a column file; a 10-column file whose first
    column is not 1..n, or whose words are in another column, is."""
    words = CONLLU.splitlines(True)[2:5]
    if ids != "plain":
        words = ["1-2\tShe's\t_\t_\t_\t_\t_\t_\t_\t_\n", *words[:2], "2.1\tis\tbe\tAUX\t_\t_\t_\t_\t_\t_\n",
                 words[2]]  # fmt: skip
    path = tmp_path / "f.conllu"
    path.write_text(comments + "".join(words) + "\n" + comments + "".join(words), encoding="utf-8")
    with pytest.raises(detect.WrongKind, match="looks like CoNLL-U"):
        read_conll(path)
    with pytest.raises(detect.WrongKind, match="looks like CoNLL-U"):
        tag_conll(path, io.BytesIO(), lambda batch: [["O"] * len(w) for w in batch], tag_column=-1)
    if not comments:  # the words in another column than the first: the user's choice, read
        out = io.BytesIO()
        tag_conll(path, out, lambda batch: [["O"] * len(w) for w in batch], token_column=1)
        assert out.getvalue().decode().splitlines()[1].endswith("\tO")
    numbered_otherwise = "".join(w.replace("1\t", "7\t", 1) if w.startswith("1\t") else w for w in words)
    assert not detect.conllu_sentence(numbered_otherwise.splitlines())
    assert detect.conllu_sentence((comments + "".join(words)).splitlines())


def test_plain_text_given_to_readers(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text(TEXT, encoding="utf-8")
    with pytest.raises(detect.WrongKind, match="this looks like plain text; expected CoNLL-U"):
        read_conllu(path)
    with pytest.raises(detect.WrongKind, match="this looks like plain text; expected CoNLL column files"):
        read_conll(path)


def test_streams_are_sniffed_from_the_lines_read(tmp_path):
    stream = io.BytesIO(NER.encode())
    with pytest.raises(detect.WrongKind, match="looks like a CoNLL column file"):
        tag_conllu(stream, io.BytesIO(), lambda batch: [[] for _ in batch], name="<stdin>")


def test_a_conllu_file_given_as_a_qe_data_set(tmp_path):
    path = tmp_path / "en.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    with pytest.raises(
        detect.WrongKind, match="a file, not the prefix of a QE data set: this looks like CoNLL-U"
    ):
        read_qe(path)


def test_gzip_file_says_so(tmp_path):
    path = tmp_path / "en.conllu.gz"
    path.write_bytes(gzip.compress(CONLLU.encode()))
    with pytest.raises(InputError, match="gzip-compressed data"):
        read_conllu(path)
    with pytest.raises(InputError, match="gzip-compressed data"):
        read_conll(path)


def test_a_qe_prefix_given_as_a_file(tmp_path):
    (tmp_path / "dev.mt").write_text("Das ist gut .\n", encoding="utf-8")
    with pytest.raises(InputError, match="no such file; .*dev.mt exists: this names a QE data set"):
        read_conllu(tmp_path / "dev")


def test_malformed_files_of_the_right_kind_keep_their_message(tmp_path):
    """A mistake inside a file of the reader's own kind is reported as before, without a guess."""
    path = tmp_path / "bad.conllu"
    path.write_text(CONLLU + CONLLU.replace("3\t.\t.\tPUNCT", "3\t.\tPUNCT"), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_conllu(path)
    assert type(caught.value) is InputError
    assert str(caught.value) == f"{path}:11: expected 10 tab-separated columns, found 9"
    path = tmp_path / "bad.conll"
    path.write_text(NER + "\nParis NNP B-LOC\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_conll(path)
    assert type(caught.value) is InputError
    assert str(caught.value) == f"{path}:8: expected 4 columns (as on line 3), found 3"
