"""Word-level quality estimation: the WMT reader and writer (both tag formats, errors with file and line),
the WMT16 scores, and the bilingual input representation against a slow per-word computation."""

from __future__ import annotations

import io
import random

import pytest
import torch

from conftest import ROOT
from easyfirst.data.batching import collate
from easyfirst.data.qe import (
    QEFiles,
    QESentence,
    alignment_matrix,
    build_vocabularies,
    encode_qe,
    read_qe,
    tags_format,
    write_tags,
)
from easyfirst.errors import InputError
from easyfirst.metrics import qe_report
from easyfirst.model.bilingual import BilingualEmbedder

QE_SAMPLE = ROOT / "data" / "samples" / "qe-en-de"
QE_GAPS = ROOT / "data" / "samples" / "qe-en-de-gaps"


def test_reads_the_word_format_sample():
    sentences = read_qe(QE_SAMPLE)
    assert len(sentences) == 20 and tags_format(sentences) == "words"
    first = sentences[0]
    assert first.words == ["Klicken", "Sie", "auf", "die", "Schaltfläche", "Speichern", "."]
    assert first.source == ["Click", "the", "Save", "button", "."]
    assert first.alignment == [(0, 0), (0, 1), (0, 2), (1, 3), (2, 5), (3, 4), (4, 6)]
    assert first.tags == ["OK"] * 7 and first.gaps is None
    assert first.post_edit == first.words and first.line == 1
    assert sentences[1].tags == ["OK", "OK", "OK", "BAD", "BAD", "OK", "OK", "BAD", "OK"]
    assert sum(len(s.words) for s in sentences) == 147
    assert sum(s.tags.count("BAD") for s in sentences) == 28


def test_reads_the_gap_format_sample():
    sentences = read_qe(QE_GAPS)
    assert len(sentences) == 6 and tags_format(sentences) == "gaps"
    click = sentences[3]  # Klicken Sie [auf] OK [, um] zu schließen ...
    assert click.words[:4] == ["Klicken", "Sie", "OK", "zu"]
    assert click.tags == ["OK", "OK", "OK", "BAD", "BAD", "BAD", "OK", "OK"]
    assert click.gaps == ["OK", "OK", "BAD", "BAD", "OK", "OK", "OK", "OK", "OK"]
    assert all(len(s.gaps) == len(s.words) + 1 for s in sentences)


@pytest.mark.parametrize("sample", [QE_SAMPLE, QE_GAPS])
def test_writing_the_gold_tags_back_reproduces_the_tags_file(sample):
    sentences = read_qe(sample)
    out = io.BytesIO()
    write_tags(out, [s.tags for s in sentences], [s.gaps for s in sentences], with_gaps=sample == QE_GAPS)
    assert out.getvalue() == sample.with_name(sample.name + ".tags").read_bytes()


def test_gap_format_without_known_gaps_writes_ok_gaps():
    out = io.BytesIO()
    write_tags(out, [["BAD", "OK"], []], with_gaps=True)
    assert out.getvalue() == b"OK BAD OK OK OK\nOK\n"


def write_set(folder, src, mt, alignments, tags=None):
    prefix = folder / "set"
    for ending, lines in ((".src", src), (".mt", mt), (".src-mt.alignments", alignments), (".tags", tags)):
        if lines is not None:
            prefix.with_name("set" + ending).write_text(
                "".join(line + "\n" for line in lines), encoding="utf-8"
            )
    return prefix


GOOD = {
    "src": ["a b c", "d e"],
    "mt": ["x y", "z w v"],
    "alignments": ["0-0 2-1", "0-0 1-2"],
    "tags": ["OK BAD", "OK OK BAD"],
}


def read_with(tmp_path, **changes):
    files = {**GOOD, **changes}
    return read_qe(write_set(tmp_path, files["src"], files["mt"], files["alignments"], files["tags"]))


def test_reads_a_valid_set_and_optional_files(tmp_path):
    sentences = read_with(tmp_path)
    assert [s.alignment for s in sentences] == [[(0, 0), (2, 1)], [(0, 0), (1, 2)]]
    unlabeled = read_qe(QEFiles.from_prefix(tmp_path / "set", need_tags=False), with_tags=False)
    assert unlabeled[1].tags is None and unlabeled[1].words == ["z", "w", "v"]


@pytest.mark.parametrize(
    ("changes", "where", "message"),
    [
        ({"tags": ["OK BAD"]}, "set.tags:2", "the file ends after line 1, but"),
        ({"src": ["a b c", "d e", "f"]}, "set.mt:3", "the file ends after line 2, but"),
        (
            {"tags": ["OK BAD", "OK OK"]},
            "set.tags:2",
            "2 tags for 3 MT words: expected 3 (one per word) or 7",
        ),
        ({"tags": ["OK BAD", "OK OK good"]}, "set.tags:2", "tag 'good' is neither OK nor BAD"),
        ({"tags": ["OK BAD", "OK OK OK OK BAD OK OK"]}, "set.tags:2", "line 1 used one tag per word"),
        ({"alignments": ["0-0 3-1", "0-0"]}, "set.src-mt.alignments:1", "source index 3 out of range"),
        ({"alignments": ["0-0", "0-3"]}, "set.src-mt.alignments:2", "MT index 3 out of range"),
        ({"alignments": ["0-0", "0:1"]}, "set.src-mt.alignments:2", "malformed alignment pair '0:1'"),
        ({"alignments": ["0-0", "1--1"]}, "set.src-mt.alignments:2", "malformed alignment pair '1--1'"),
    ],
)
def test_malformed_sets_are_errors_with_file_and_line(tmp_path, changes, where, message):
    with pytest.raises(InputError) as error:
        read_with(tmp_path, **changes)
    assert str(error.value).startswith(str(tmp_path / where) + ": ")
    assert message in str(error.value)


def test_missing_files_are_named(tmp_path):
    write_set(tmp_path, GOOD["src"], GOOD["mt"], GOOD["alignments"])
    with pytest.raises(InputError, match=r"missing: .*set\.tags"):
        read_qe(tmp_path / "set")


def test_qe_scores_on_a_hand_computed_example():
    gold = [["OK", "OK", "BAD", "BAD"], ["OK", "BAD", "OK"]]
    predicted = [["OK", "BAD", "BAD", "OK"], ["OK", "OK", "OK"]]
    # OK: 3 right of 5 predicted, 4 gold → P 3/5, R 3/4, F1 2/3; BAD: 1 of 2, 3 gold → P 1/2, R 1/3, F1 2/5
    report = qe_report(gold, predicted)
    assert report["f1_ok"] == pytest.approx(2 / 3)
    assert report["f1_bad"] == pytest.approx(2 / 5)
    assert report["f1_mult"] == pytest.approx(4 / 15)
    assert report["accuracy"] == pytest.approx(4 / 7)
    # a system that never says BAD scores 0, however accurate
    assert qe_report(gold, [["OK"] * 4, ["OK"] * 3])["f1_mult"] == 0.0


def test_alignment_matrix_averages_over_aligned_source_words():
    matrix = alignment_matrix([(0, 0), (2, 0), (1, 2)], n_mt=3, n_source=3)
    assert matrix.tolist() == [[0.5, 0.0, 0.5], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


def random_sentences(count, seed):
    rng = random.Random(seed)
    sentences = []
    for _ in range(count):
        n_mt, n_src = rng.randint(1, 7), rng.randint(1, 6)
        pairs = sorted({(rng.randrange(n_src), rng.randrange(n_mt)) for _ in range(rng.randint(0, 8))})
        sentences.append(
            QESentence(
                [f"t{rng.randrange(6)}" for _ in range(n_mt)],
                [f"s{rng.randrange(6)}" for _ in range(n_src)],
                pairs,
                ["OK" if rng.random() < 0.7 else "BAD" for _ in range(n_mt)],
            )
        )
    return sentences


@pytest.mark.parametrize("context", [0, 1])
def test_bilingual_embedding_matches_a_per_word_loop(context):
    torch.manual_seed(0)
    sentences = random_sentences(12, seed=context)
    vocabs = build_vocabularies(sentences, word_min_freq=1)
    embedder = BilingualEmbedder(vocabs, word_dim=4, affix_dim=3, context=context)
    torch.nn.init.normal_(embedder.null)
    batch = collate([encode_qe(vocabs, s) for s in sentences], list(range(len(sentences))))
    fast = embedder(batch)
    target = embedder.target(batch.words, batch.prefixes, batch.suffixes)
    assert fast.shape == (len(sentences), batch.words.shape[1], (2 * context + 1) * (4 + 3 * 2 + 4))
    used_null = 0
    for b, sentence in enumerate(sentences):
        source = embedder.source.weight[[vocabs.source.index(w) for w in sentence.source]]
        for j in range(len(sentence.words)):
            parts, aligned = [], [i for i, k in sentence.alignment if k == j]
            for o in range(-context, context + 1):
                inside = 0 <= j + o < len(sentence.words)
                parts.append(target[b, j + o] if inside else torch.zeros(target.shape[-1]))
            for k, o in enumerate(range(-context, context + 1)):
                if not aligned:
                    parts.append(embedder.null[k])
                    continue
                rows = [source[i + o] if 0 <= i + o < len(source) else torch.zeros(4) for i in aligned]
                parts.append(torch.stack(rows).mean(0))
            used_null += not aligned
            torch.testing.assert_close(fast[b, j], torch.cat(parts))
    assert used_null > 0


def test_null_vector_is_used_exactly_for_unaligned_words():
    sentences = random_sentences(20, seed=7)
    vocabs = build_vocabularies(sentences, word_min_freq=1)
    embedder = BilingualEmbedder(vocabs, word_dim=5)
    with torch.no_grad():
        embedder.null.fill_(1e3)  # no average of source embeddings can come near it
    batch = collate([encode_qe(vocabs, s) for s in sentences], list(range(len(sentences))))
    source_part = embedder(batch)[..., 5:]
    is_null = (source_part == 1e3).all(-1)
    for b, sentence in enumerate(sentences):
        aligned = {j for _, j in sentence.alignment}
        expected = [j not in aligned for j in range(len(sentence.words))]
        assert is_null[b, : len(sentence.words)].tolist() == expected
        assert not is_null[b, len(sentence.words) :].any()  # padding is not a word


@pytest.mark.realdata
def test_reads_the_real_wmt16_files(data_root):
    folder = data_root / "qe" / "wmt16-en-de"
    counts = {}
    for split in ("train", "dev"):
        sentences = read_qe(folder / split)
        tokens = sum(len(s.words) for s in sentences)
        bad = sum(s.tags.count("BAD") for s in sentences)
        aligned = sum(len({j for _, j in s.alignment}) for s in sentences)
        counts[split] = (len(sentences), tokens, round(100 * bad / tokens, 1), round(100 * aligned / tokens))
        assert tags_format(sentences) == "words" and all(s.post_edit for s in sentences)
    assert counts == {"train": (12000, 210958, 21.4, 85), "dev": (1000, 19487, 19.5, 83)}
