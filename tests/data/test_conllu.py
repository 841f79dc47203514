"""CoNLL-U reading and byte-exact tagging, on the sample, on unusual-but-valid variants, on malformed
files (reported with file and line), and on the real EWT files."""

from __future__ import annotations

import io

import pytest

from conftest import SAMPLE
from easyfirst.data.conllu import iter_conllu, read_conllu, tag_conllu
from easyfirst.errors import InputError


def gold_predictor(path):
    tags = iter([s.tags for s in read_conllu(path)])
    calls = []

    def predict(words):
        calls.append(len(words))
        return [next(tags) for _ in words]

    return predict, calls


def test_reads_words_and_tags_of_the_sample():
    sentences = read_conllu(SAMPLE)
    assert len(sentences) == 25
    second = sentences[1]
    assert second.words == ["We", "do", "n't", "know", "where", "she", "went", "."]  # range 2-3 skipped
    assert second.tags == ["PRON", "AUX", "PART", "VERB", "ADV", "PRON", "VERB", "PUNCT"]
    assert second.line == 14  # 2 file comments + 2 sentence comments + 8 words, a blank line
    xpos = read_conllu(SAMPLE, tag_column="xpos")
    assert xpos[1].tags[:3] == ["PRP", "VBP", "RB"]
    assert sentences[23].words[-3:] == ["wants", "to", "."]  # the empty node 9.1 is not a word


def test_tagging_with_gold_tags_reproduces_every_byte(tmp_path):
    predict, _ = gold_predictor(SAMPLE)
    out = io.BytesIO()
    assert tag_conllu(SAMPLE, out, predict) == 25
    assert out.getvalue() == SAMPLE.read_bytes()


def test_tagging_replaces_only_the_tag_column_of_words():
    out = io.BytesIO()
    tag_conllu(SAMPLE, out, lambda sents: [["X"] * len(s) for s in sents])
    before, after = SAMPLE.read_text().split("\n"), out.getvalue().decode().split("\n")
    assert len(before) == len(after)
    changed = 0
    for old, new in zip(before, after, strict=True):
        cols_old, cols_new = old.split("\t"), new.split("\t")
        if len(cols_old) == 10 and cols_old[0].isdigit():
            assert cols_new[3] == "X" and cols_old[:3] + cols_old[4:] == cols_new[:3] + cols_new[4:]
            changed += 1
        else:
            assert old == new  # comments, ranges, empty nodes, blank lines
    assert changed == 203


def test_crlf_bom_and_missing_final_newline_round_trip(tmp_path):
    text = SAMPLE.read_text().replace("\n", "\r\n")
    variant = tmp_path / "variant.conllu"
    variant.write_bytes(
        b"\xef\xbb\xbf" + text.rstrip("\r\n").encode() + b"\r\n\r\n\r\n" + text.rstrip("\r\n").encode()
    )
    sentences = read_conllu(variant)
    assert len(sentences) == 50 and sentences[0].words[0] == "The"
    predict, _ = gold_predictor(variant)
    out = io.BytesIO()
    tag_conllu(variant, out, predict)
    assert out.getvalue() == variant.read_bytes()


def test_tagging_streams_in_batches():
    predict, calls = gold_predictor(SAMPLE)
    tag_conllu(SAMPLE, io.BytesIO(), predict, window=2)
    assert calls == [2] * 12 + [1]


def test_empty_file_gives_no_sentences_and_empty_output(tmp_path):
    empty = tmp_path / "empty.conllu"
    empty.write_bytes(b"")
    assert read_conllu(empty) == []
    out = io.BytesIO()
    assert tag_conllu(empty, out, lambda s: []) == 0 and out.getvalue() == b""


WORD = "1\tdog\tdog\tNOUN\tNN\t_\t_\t_\t_\t_"


@pytest.mark.parametrize(
    "content, line, message",
    [
        (f"# c\n{WORD}\n2\tbarks\tbark\tVERB\n", 3, "expected 10 tab-separated columns, found 4"),
        (f"{WORD}\nx\tbarks\t_\t_\t_\t_\t_\t_\t_\t_\n", 2, "is not an integer, a range"),
        (f"{WORD}\n3\tbarks\t_\t_\t_\t_\t_\t_\t_\t_\n", 2, "out of sequence: expected 2"),
        (f"{WORD}\n\n2\tbarks\t_\t_\t_\t_\t_\t_\t_\t_\n", 3, "out of sequence: expected 1"),
        (f"{WORD}\n2\t\t_\t_\t_\t_\t_\t_\t_\t_\n", 2, "empty word form"),
        ("# only a comment\n\n", 1, "sentence without words"),
    ],
)
def test_malformed_lines_are_reported_with_file_and_line(tmp_path, content, line, message):
    bad = tmp_path / "bad.conllu"
    bad.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_conllu(bad)
    assert (caught.value.path, caught.value.line) == (str(bad), line)
    assert message in caught.value.message
    assert str(caught.value).startswith(f"{bad}:{line}: ")


def test_invalid_utf8_and_binary_files(tmp_path):
    bad = tmp_path / "latin1.conllu"
    bad.write_bytes(f"{WORD}\n".encode() + "2\tcaf\xe9\t_\t_\t_\t_\t_\t_\t_\t_\n".encode("latin-1"))
    with pytest.raises(InputError, match="not valid UTF-8") as caught:
        read_conllu(bad)
    assert caught.value.line == 2
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"PK\x03\x04\x00\x00binary")
    with pytest.raises(InputError, match="binary data"):
        read_conllu(binary)


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        list(iter_conllu(tmp_path / "nope.conllu"))


@pytest.mark.realdata
@pytest.mark.parametrize(
    "split, sentences, words", [("train", 12544, 204577), ("dev", 2001, 25147), ("test", 2077, 25094)]
)
def test_real_ewt_counts_and_byte_exact_round_trip(ewt, split, sentences, words):
    """EWT is full of multiword tokens and has empty nodes: tagging with gold UPOS changes no byte."""
    read = read_conllu(ewt[split])
    assert len(read) == sentences and sum(len(s.words) for s in read) == words
    predict, _ = gold_predictor(ewt[split])
    out = io.BytesIO()
    tag_conllu(ewt[split], out, predict, window=300)
    assert out.getvalue() == ewt[split].read_bytes()
