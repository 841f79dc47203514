"""Tagging on every core (easyfirst.tagging.pool): the batches of a large call shared among forked
processes give what one process gives, bit for bit."""

from __future__ import annotations

import io
import multiprocessing

import pytest
import torch

from conftest import SAMPLE, said
from easyfirst import Tagger
from easyfirst.data.batching import collate, encode, unpack
from easyfirst.data.buckets import INFERENCE_MAX_TOKENS, pack_batches
from easyfirst.data.conllu import read_conllu
from easyfirst.parallel import cores
from easyfirst.tagging import pool as tagging_pool
from easyfirst.tagging.pipeline import predictor


def test_the_costliest_batches_go_first_to_the_least_loaded_process():
    # by hand: 5 → A; 4 → B; 3 (index 3) → B (4 < 5), 7; 3 (index 4) → A (5 < 7), 8; 1 → B (7 < 8), 8
    assert tagging_pool.balanced_shares([5, 1, 4, 3, 3], 2) == [[0, 4], [1, 2, 3]]
    assert tagging_pool.balanced_shares([2], 3) == [[0], [], []]


def test_more_processes_than_one_only_on_the_cpu_and_only_when_asked():
    assert tagging_pool.processes_for(3, torch.device("cpu")) == 3
    assert tagging_pool.processes_for(None, torch.device("cpu")) == 1  # the library's default
    assert tagging_pool.processes_for(None, torch.device("cuda")) == 1
    assert tagging_pool.processes_for(3, torch.device("cuda")) == 1
    for wrong in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="processes"):
            tagging_pool.processes_for(wrong, torch.device("cpu"))


@pytest.fixture
def sentences(monkeypatch):
    monkeypatch.setattr(cores, "MIN_WORDS", 100)  # a pool for the sample's few hundred words
    words = [s.words for s in read_conllu(SAMPLE)]
    return words * 4 + [[]]


def test_two_processes_tag_as_one_does_bit_for_bit(sentences):
    one = Tagger.load()
    one.processes = 1
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one core's run (taskset -c 0): one torch thread, as each worker has
    try:
        expected = one.tag(sentences, attention=True, probabilities=True, batch_size=8)
    finally:
        torch.set_num_threads(threads)
    assert one._pool is None
    two = Tagger.load()
    two.processes = 2
    found = two.tag(sentences, attention=True, probabilities=True, batch_size=8)
    pool = two._pool
    assert pool is not None and all(p.is_alive() for p in pool.workers.processes)  # the pool tagged
    assert found == expected  # tags, and attention and probabilities tensors equal bit for bit
    tags = [t.tags for t in expected]
    assert [t.tags for t in two.tag(sentences, batch_size=8)] == tags  # a second call: the same processes
    assert two._pool is pool
    pool.close()
    assert not any(p.is_alive() for p in pool.workers.processes)
    assert [t.tags for t in two.tag(sentences[:2])] == tags[:2]  # small: this process alone


def test_a_library_call_forks_nothing_unless_it_asks(sentences, monkeypatch):
    """The library's default is this process alone (issue #45: the spaCy component forked inside its
    users' pipelines): a large call forks only with ``processes=`` or ``Tagger.processes``, and a call
    that asks for another number of processes than the pool's gets a pool of its own."""
    import easyfirst.api

    made = []
    pool_class = easyfirst.api.TaggingPool
    monkeypatch.setattr(
        easyfirst.api, "TaggingPool", lambda *a, **k: made.append(a[3]) or pool_class(*a, **k)
    )
    tagger = Tagger.load()
    assert tagger.processes is None and sum(map(len, sentences)) >= cores.MIN_WORDS
    before = set(multiprocessing.active_children())
    alone = tagger.tag(sentences, batch_size=8)
    assert tagger._pool is None and made == [] and set(multiprocessing.active_children()) == before
    try:
        assert tagger.tag(sentences, batch_size=8, processes=2) == alone
        assert made == [2] and tagger._pool is not None and not tagger._pool.closed
        assert tagger.tag(sentences, batch_size=8, processes=1) == alone  # this one, the pool kept
        assert tagger.tag(sentences, batch_size=8) == alone and made == [2]
        tagger.processes = 3
        assert tagger.tag(sentences, batch_size=8) == alone and made == [2, 3]
    finally:
        tagger.close()
    with pytest.raises(ValueError, match="processes"):
        tagger.tag(sentences, processes=0)


def test_the_cli_asks_for_one_process_per_core(sentences, monkeypatch):
    """``easyfirst evaluate`` (and every verb that loads a tagger through easyfirst.cli.common.load_tagger)
    tags a large call on every core, as before issue #45; here in this process, on the sample cut into
    batches of 8 sentences."""
    import contextlib
    import sys

    import easyfirst.api
    from easyfirst.cli import main

    made = []
    pool_class = easyfirst.api.TaggingPool

    def recorded(*args, **kwargs):
        made.append(pool_class(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(easyfirst.api, "TaggingPool", recorded)
    monkeypatch.setattr(cores, "tagging_processes", lambda requested=None: 2)
    monkeypatch.setattr(sys, "argv", ["easyfirst", "evaluate", str(SAMPLE), "--batch-size", "8", "--json"])
    try:
        with contextlib.redirect_stdout(io.StringIO()), pytest.raises(SystemExit) as exit:
            main()
        assert exit.value.code == 0 and [pool.workers.count for pool in made] == [2]
    finally:
        for pool in made:
            pool.close()


def test_easyfirst_tag_on_every_core_writes_the_bytes_of_one_process(tmp_path):
    """The command as a user runs it (easyfirst.cli.run, which skips the interpreter's teardown), on a
    file large enough for the pool (on a machine with one core it runs alone): the output is that of
    one process on one thread, the status 0 and stderr empty."""
    from conftest import run_cli
    from easyfirst.data.conllu import tag_conllu

    big = tmp_path / "big.conllu"
    words = sum(len(s.words) for s in read_conllu(SAMPLE))
    big.write_bytes(SAMPLE.read_bytes() * (cores.MIN_WORDS // words + 1))
    done = run_cli("tag", big, "-o", tmp_path / "out.conllu", process=True)
    assert done.returncode == 0 and said(done.stderr) == f"wrote {tmp_path / 'out.conllu'}\n", (
        done.stderr.decode()
    )
    one = Tagger.load()
    one.processes = 1
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        expected = io.BytesIO()
        tag_conllu(big, expected, predictor(one, 256))
    finally:
        torch.set_num_threads(threads)
    assert (tmp_path / "out.conllu").read_bytes() == expected.getvalue()


def test_batches_packed_without_torch_are_the_batches_collate_makes(sentences):
    """What easyfirst tag's reading process makes (easyfirst.data.buckets, no torch) against the
    tagger's own encoding: the same tensors, of the same type, batch by batch."""
    tagger = Tagger.load()
    sentences = sentences[:40] + [["a"]] + sentences[40:]  # lengths 1 to the sample's longest
    packed = pack_batches(sentences, tagger.vocabs, batch_size=8)
    _, jobs = tagging_pool.make_jobs(sentences, None, None, 8, INFERENCE_MAX_TOKENS)
    assert len(packed) == len(jobs) > 1
    for job, batch in zip(jobs, packed, strict=True):
        made = unpack(batch, job[0])
        expected = collate([encode(tagger.vocabs, words) for words in job[1]], job[0])
        for name in ("words", "prefixes", "suffixes", "mask"):
            got, want = getattr(made, name), getattr(expected, name)
            assert got.dtype == want.dtype and torch.equal(got, want), name
        assert made.order == expected.order and made.tags is None and not made.features and not made.heads


def test_batches_packed_before_tag_as_the_words_do(sentences):
    """``Tagger._tag_packed`` (easyfirst tag packs the batches ahead): each sentence's row must come
    back to it after the sorting into batches, in one process and in the pool; batches packed with
    another batch size are refused."""
    tagger = Tagger.load()
    packed = pack_batches(sentences, tagger.vocabs, batch_size=8)
    expected = tagger.tag(sentences, probabilities=True, batch_size=8)
    for processes in (1, 2):
        tagger.processes = processes
        found = tagger._tag_packed(sentences, packed, batch_size=8)
        assert [t.tags for t in found] == [t.tags for t in expected]
    tagger.close()
    with pytest.raises(ValueError, match="not made for these sentences"):
        tagger._tag_packed(sentences, packed, batch_size=16)


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "words only"])
def test_processes_that_follow_the_windows_tag_as_one_does_and_share_them(sentences, monkeypatch, packed):
    """``easyfirst tag`` on a file read ahead: the worker reads the windows from its own copy and takes
    batches from a shared counter, a window ahead of this process. Windows large and small (the small
    and the empty ones are this process's alone, on both sides), each tagged as one process does; with
    their batches packed by the reader, or words only (a model with features: each process encodes)."""
    from easyfirst.tagging.readahead import ReadAhead

    tagger = Tagger.load()
    windows = [sentences, sentences[:2], [], sentences[3:], [[], []], sentences[::2]]
    windows = [(w, pack_batches(w, tagger.vocabs, batch_size=8) if packed else None) for w in windows]
    one = [tagger.tag(window, batch_size=8) if window else [] for window, _ in windows]
    ahead = ReadAhead(lambda: iter(windows), copies=1, copy=lambda window: window)
    tagger.processes = 2
    assert tagger.follow(ahead.copies, batch_size=8)
    pool = tagger._pool
    mine = []  # the batches this process tagged (the worker, forked already, keeps the original)
    own_job = tagging_pool.tag_job
    monkeypatch.setattr(tagging_pool, "tag_job", lambda *a: mine.append(1) or own_job(*a))
    found = [tagger._tag_packed(window, b, batch_size=8) if window else [] for window, b in ahead]
    assert found == one
    batches = [len(tagging_pool.make_jobs(w, None, None, 8, INFERENCE_MAX_TOKENS)[1]) for w, _ in windows]
    words = [sum(map(len, w)) for w, _ in windows]
    shared = sum(b for b, n in zip(batches, words, strict=True) if cores.pooled(n, b))
    assert pool.claims.next.value == shared  # every batch of the shared windows taken once
    assert len(mine) - batches[1] < shared  # the worker took some (the small window's: this process's)
    with pytest.raises(RuntimeError, match="follow a read-ahead"):
        tagger.tag(sentences, batch_size=16)
    pool.close()
    assert not any(p.is_alive() for p in pool.workers.processes)


def test_easyfirst_tag_on_a_file_of_several_windows_writes_the_bytes_of_one_process(tmp_path):
    """Two full windows (easyfirst.data.files.TAG_WINDOW sentences) and a small last one, read ahead and
    followed by the pool's workers on a machine with two cores or more."""
    from conftest import run_cli
    from easyfirst.data.conllu import tag_conllu
    from easyfirst.data.files import TAG_WINDOW

    words = [w for s in read_conllu(SAMPLE) for w in s.words]
    lines = []
    for n in range(2 * TAG_WINDOW + 10):  # short sentences, so that tagging them is quick
        sentence = [words[(3 * n + i) % len(words)] for i in range(3)]
        lines += [f"# sent_id = {n}"] + [
            f"{i}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_" for i, w in enumerate(sentence, 1)
        ]
        lines.append("")
    big = tmp_path / "big.conllu"
    big.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = run_cli("tag", big, "-o", tmp_path / "out.conllu", process=True)
    assert done.returncode == 0 and said(done.stderr) == f"wrote {tmp_path / 'out.conllu'}\n", (
        done.stderr.decode()
    )
    one = Tagger.load()
    one.processes = 1
    expected = io.BytesIO()
    tag_conllu(big, expected, predictor(one, 256))
    assert (tmp_path / "out.conllu").read_bytes() == expected.getvalue()


def test_a_worker_that_died_is_reported_as_such(sentences):
    """A worker killed between calls (the kernel's out-of-memory killer, say): the next call fails with
    WorkerFailed, which the CLI prints on one line, not a broken pipe read as 'cannot write'."""
    from easyfirst.errors import WorkerFailed

    tagger = Tagger.load()
    tagger.processes = 2
    tagger.tag(sentences, batch_size=8)
    worker = tagger._pool.workers.processes[0]
    worker.kill()
    worker.join()
    with pytest.raises(WorkerFailed, match="worker 1 exited"):
        tagger.tag(sentences, batch_size=8)
    tagger._pool.close()


def test_the_cli_reports_a_failed_worker_on_one_line(monkeypatch, tmp_path):
    import contextlib
    import sys

    import easyfirst.cli.tag
    from easyfirst.cli import main
    from easyfirst.errors import WorkerFailed

    def fail(*_args, **_kwargs):
        raise WorkerFailed("a worker process failed: worker 1 exited (code -9)")

    monkeypatch.setattr(easyfirst.cli.tag, "load_tagger", fail)
    monkeypatch.setattr(sys, "argv", ["easyfirst", "tag", str(SAMPLE), "-o", str(tmp_path / "out.conllu")])
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), pytest.raises(SystemExit) as exit:
        main()
    assert exit.value.code == 1
    assert stderr.getvalue().strip().splitlines() == [
        "a worker process failed: worker 1 exited (code -9): killed, or out of memory?"
    ]
    assert not (tmp_path / "out.conllu").exists()
