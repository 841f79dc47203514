"""Tagging on every core (easyfirst.tagging_pool): the batches of a large call shared among forked
processes give what one process gives, bit for bit."""

from __future__ import annotations

import io

import pytest
import torch

from conftest import SAMPLE
from easyfirst import Tagger, tagging_pool
from easyfirst.data.conllu import read_conllu


def test_the_costliest_batches_go_first_to_the_least_loaded_process():
    # by hand: 5 → A; 4 → B; 3 (index 3) → B (4 < 5), 7; 3 (index 4) → A (5 < 7), 8; 1 → B (7 < 8), 8
    assert tagging_pool.balanced_shares([5, 1, 4, 3, 3], 2) == [[0, 4], [1, 2, 3]]
    assert tagging_pool.balanced_shares([2], 3) == [[0], [], []]


def test_more_processes_than_one_only_on_the_cpu():
    assert tagging_pool.processes_for(3, torch.device("cpu")) == 3
    assert tagging_pool.processes_for(None, torch.device("cuda")) == 1


@pytest.fixture
def sentences(monkeypatch):
    monkeypatch.setattr(tagging_pool, "MIN_WORDS", 100)  # a pool for the sample's few hundred words
    words = [s.words for s in read_conllu(SAMPLE)]
    return words * 4 + [[]]


def test_two_processes_tag_as_one_does_bit_for_bit(sentences):
    one = Tagger.load()
    one.processes = 1
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one core's run (taskset -c 0): one torch thread, as each worker has
    try:
        expected = one.tag(sentences, return_attention=True, return_probabilities=True, batch_size=8)
    finally:
        torch.set_num_threads(threads)
    assert one._pool is None
    two = Tagger.load()
    two.processes = 2
    found = two.tag(sentences, return_attention=True, return_probabilities=True, batch_size=8)
    pool = two._pool
    assert pool is not None and all(p.is_alive() for p in pool.workers.processes)  # the pool tagged
    assert found[0] == expected[0]
    for got, want in zip(found[1] + found[2], expected[1] + expected[2], strict=True):
        assert got.shape == want.shape and torch.equal(got, want)
    assert two.tag(sentences, batch_size=8) == expected[0]  # a second call: the same processes
    assert two._pool is pool
    pool.close()
    assert not any(p.is_alive() for p in pool.workers.processes)
    assert two.tag(sentences[:2]) == expected[0][:2]  # small: this process alone


def test_easyfirst_tag_on_every_core_writes_the_bytes_of_one_process(tmp_path):
    """The command as a user runs it (easyfirst.cli.run, which skips the interpreter's teardown), on a
    file large enough for the pool (on a machine with one core it runs alone): the output is that of
    one process on one thread, the status 0 and stderr empty."""
    from conftest import run_cli
    from easyfirst.data.conllu import tag_conllu

    big = tmp_path / "big.conllu"
    words = sum(len(s.words) for s in read_conllu(SAMPLE))
    big.write_bytes(SAMPLE.read_bytes() * (tagging_pool.MIN_WORDS // words + 1))
    done = run_cli("tag", big, "-o", tmp_path / "out.conllu")
    assert done.returncode == 0 and done.stderr == b"", done.stderr.decode()
    one = Tagger.load()
    one.processes = 1
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        expected = io.BytesIO()
        tag_conllu(big, expected, one.tag)
    finally:
        torch.set_num_threads(threads)
    assert (tmp_path / "out.conllu").read_bytes() == expected.getvalue()


def test_ids_found_before_tag_as_the_words_do(sentences):
    """``Tagger.tag(..., ids=)`` (easyfirst tag reads them ahead): each sentence's ids must reach that
    sentence's row after the sorting into batches, in one process and in the pool."""
    tagger = Tagger.load()
    ids = [tagger.vocabs.index(words) for words in sentences]
    expected = tagger.tag(sentences, return_probabilities=True, batch_size=8)
    for processes in (1, 2):
        tagger.processes = processes
        found = tagger.tag(sentences, return_probabilities=True, batch_size=8, ids=ids)
        assert found[0] == expected[0]
        assert all(torch.equal(a, b) for a, b in zip(found[1], expected[1], strict=True))
    with pytest.raises(ValueError, match="one per sentence"):
        tagger.tag(sentences, ids=ids[:-1])
