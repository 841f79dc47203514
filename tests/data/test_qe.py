"""Word-level quality estimation: the WMT reader and writer (both tag formats, errors with file and line),
the WMT16 scores, and the bilingual input representation against a slow per-word computation."""

from __future__ import annotations

import io
import random

import pytest
import torch

from conftest import QE_GAPS, QE_SAMPLE
from easyfirst.config import Config
from easyfirst.data.batching import collate, encode
from easyfirst.data.features import (
    NULL,
    OUTSIDE,
    active_features,
    aligned_source,
    build_feature_vocabs,
    neighbours,
)
from easyfirst.data.qe import (
    QEFiles,
    QESentence,
    read_qe,
    tags_format,
    write_tags,
)
from easyfirst.data.vocab import Vocabularies
from easyfirst.errors import InputError
from easyfirst.metrics import qe_report
from easyfirst.model.embedder import Embedder


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


def test_aligned_source_symbols_and_context():
    words, extra = ["x", "y", "z"], {"source": ["a", "b", "c"], "alignment": [(0, 0), (2, 0), (1, 2)]}
    assert aligned_source(words, extra) == [["a", "c"], [NULL], ["b"]]
    assert aligned_source(words, extra, -1) == [[OUTSIDE, "b"], [NULL], ["a"]]
    assert aligned_source(words, extra, 1) == [["b", OUTSIDE], [NULL], ["c"]]
    assert neighbours(words, -1) == [[OUTSIDE], ["x"], ["y"]]


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


def qe_embedder(sentences, context_dim=0):
    """Vocabularies and an embedder with the QE features (64-d words, no affixes, as §5.3, but small)."""
    config = Config.for_task("qe")
    e = config.model.embedder
    e.word_dim, e.source_dim, e.qe_context_dim = 4, 3, context_dim
    vocabs = Vocabularies.build(((s.words, s.tags) for s in sentences), word_min_freq=1)
    vocabs.features = build_feature_vocabs(active_features(config.model.embedder), sentences)
    torch.manual_seed(0)
    embedder = Embedder(vocabs, 4, 0, active_features(config.model.embedder))
    batch = collate(
        [encode(vocabs, s.words, s.tags, s.extra) for s in sentences], list(range(len(sentences)))
    )
    return vocabs, embedder, batch


@pytest.mark.parametrize("context_dim", [0, 2])
def test_qe_input_is_the_mt_word_and_the_average_of_its_aligned_source_words(context_dim):
    sentences = (
        random_sentences(12, seed=context_dim) * 2
    )  # twice, so that every symbol has a vocabulary entry
    vocabs, embedder, batch = qe_embedder(sentences, context_dim)
    fast = embedder(batch.words, batch.prefixes, batch.suffixes, batch.features)
    assert fast.shape == (len(sentences), batch.words.shape[1], 4 + 3 + 4 * context_dim)
    names = ["source"] + (["mt_left", "mt_right", "source_left", "source_right"] if context_dim else [])
    unaligned = 0
    for b, sentence in enumerate(sentences):
        n, src = len(sentence.words), sentence.source
        for j in range(n):
            aligned = [i for i, k in sentence.alignment if k == j]
            around = {  # the symbols each feature averages, computed here word by word
                "source": [src[i] for i in aligned] or [NULL],
                "mt_left": [sentence.words[j - 1] if j > 0 else OUTSIDE],
                "mt_right": [sentence.words[j + 1] if j + 1 < n else OUTSIDE],
                "source_left": [src[i - 1] if i > 0 else OUTSIDE for i in aligned] or [NULL],
                "source_right": [src[i + 1] if i + 1 < len(src) else OUTSIDE for i in aligned] or [NULL],
            }
            parts = [embedder.words.weight[vocabs.words.index(sentence.words[j])]]
            for name in sorted(names, key=list(embedder.features).index):
                table, vocab = embedder.features[name].weight, vocabs.features[name]
                parts.append(torch.stack([table[vocab.index(s)] for s in around[name]]).mean(0))
            torch.testing.assert_close(fast[b, j], torch.cat(parts))
            unaligned += not aligned
    assert unaligned > 0


def test_null_vector_is_used_exactly_for_unaligned_words():
    sentences = random_sentences(20, seed=7)
    vocabs, _, batch = qe_embedder(sentences)
    null = vocabs.features["source"].index(NULL)
    ids = batch.features["source"]  # (B, L, k): the aligned source words' ids, 0-padded
    is_null = (ids == null).any(-1)
    for b, sentence in enumerate(sentences):
        aligned = {j for _, j in sentence.alignment}
        expected = [j not in aligned for j in range(len(sentence.words))]
        assert is_null[b, : len(sentence.words)].tolist() == expected
        assert (
            ids[b, : len(sentence.words)][is_null[b, : len(sentence.words)]][:, 1:] == 0
        ).all()  # NULL alone
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


def test_a_qe_model_without_source_inputs_says_what_it_needs():
    with pytest.raises(ValueError, match="source words and alignment"):
        aligned_source(["x"], {})


@pytest.mark.realdata
def test_task_qe_without_paths_trains_on_wmt16_train_and_selects_on_dev(data_root):
    from easyfirst.training.loop import load_splits

    splits = load_splits(Config.for_task("qe"))
    folder = data_root / "qe" / "wmt16-en-de"
    assert splits.paths == {"train": str(folder / "train"), "dev": str(folder / "dev"), "test": None}
    assert (len(splits.train), len(splits.dev), splits.test) == (12000, 1000, None)
