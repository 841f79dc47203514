"""A Tagger inside someone else's process: each call computes with the Tagger's threads (one by default)
and leaves torch's and the BLAS libraries' thread settings as it found them, also when it raises; the
backend that runs is the Tagger's to say. Nothing here is timed (benchmarks/speed/library_threads.py
measures the speed)."""

from __future__ import annotations

import threading
import warnings

import pytest
import torch
from threadpoolctl import threadpool_info

import easyfirst.api
from conftest import SAMPLE, run_cli
from easyfirst import Tagger
from easyfirst.data.conllu import read_conllu
from easyfirst.tagging.tagged import Tagged
from easyfirst.tagging.threads import held_threads

CALLER = 3  # a count no default gives: the caller's own choice, on any machine


def settings() -> tuple:
    """The process's thread settings: torch's intra- and inter-op counts, each BLAS library's."""
    blas = sorted(
        (lib["filepath"], lib["num_threads"]) for lib in threadpool_info() if lib["user_api"] == "blas"
    )
    return torch.get_num_threads(), torch.get_num_interop_threads(), blas


@pytest.fixture
def caller():
    """The caller's own settings (torch at CALLER threads) before the test, and the test's setting back
    afterwards, whatever happens in it."""
    before = torch.get_num_threads()
    torch.set_num_threads(CALLER)
    try:
        yield settings()
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tagger():
    return Tagger.load()


@pytest.fixture
def seen(monkeypatch):
    """The torch and BLAS thread counts each batch of a call ran with (the tagging of one batch,
    easyfirst.tagging.pool.tag_job, watched)."""
    found: list[tuple[int, set[int]]] = []
    original = easyfirst.api.tag_job

    def watched(*args, **kwargs):
        blas = {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}
        found.append((torch.get_num_threads(), blas))
        return original(*args, **kwargs)

    monkeypatch.setattr(easyfirst.api, "tag_job", watched)
    return found


def test_every_kind_of_input_gives_a_list_of_tagged_without_a_warning(tagger):
    words = [s.words for s in read_conllu(SAMPLE)]
    for given, count in (("She reads. It's late.", 2), (words[0], 1), (words, len(words)), ([], 0)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            found = tagger.tag(given)
        assert type(found) is list and len(found) == count and all(type(t) is Tagged for t in found)


def test_a_call_leaves_the_callers_thread_settings_as_it_found_them(tagger, caller, seen):
    words = [s.words for s in read_conllu(SAMPLE)]
    tagger.tag("She reads a book.")
    assert settings() == caller
    tagger.tag(words, attention=True, probabilities=True, batch_size=3)
    assert settings() == caller
    tagger.raindrop("She reads a book.")
    assert tagger.chosen_backend and settings() == caller
    assert seen and all(count == 1 and blas <= {1} for count, blas in seen)  # one thread in each batch


def test_a_call_that_raises_leaves_them_too(tagger, caller, monkeypatch):
    def fails(*args, **kwargs):
        assert torch.get_num_threads() == 1  # the call's own count, until it raises
        raise RuntimeError("a batch failed")

    monkeypatch.setattr(easyfirst.api, "tag_job", fails)
    with pytest.raises(RuntimeError, match="a batch failed"):
        tagger.tag([["She", "reads", "."]])
    assert settings() == caller


def test_threads_is_the_count_during_the_call_and_none_leaves_the_process_alone(caller, seen):
    tagger = Tagger.load(threads=2)
    tagger.tag([["She", "reads", "."]])
    assert [count for count, _ in seen] == [2] and settings() == caller
    tagger.threads = None  # as the verbs load it: the process's own settings (a small call on one thread)
    words = [s.words for s in read_conllu(SAMPLE)]
    tagger.tag(words * (2000 // sum(map(len, words)) + 1))  # large enough for the process's own count
    assert seen[-1][0] == CALLER and settings() == caller
    for wrong in (0, -1, 1.5, "2", True):
        with pytest.raises(ValueError, match="threads: a whole number of at least 1"):
            Tagger.load(threads=wrong)


def test_overlapping_calls_set_back_what_the_first_found_when_the_last_ends(caller):
    first, second = held_threads(1), held_threads(2)
    first.__enter__()
    second.__enter__()
    assert torch.get_num_threads() == 2  # the later call's count, for both while they overlap
    first.__exit__(None, None, None)
    assert torch.get_num_threads() == 2  # the second still runs
    second.__exit__(None, None, None)
    assert settings() == caller


def test_calls_from_several_threads_leave_the_settings_as_found(tagger, caller):
    failures: list[BaseException] = []

    def call():
        try:
            for _ in range(5):
                tagger.tag([["She", "reads", "a", "book", "."], ["Hi", "."]])
        except BaseException as error:  # noqa: BLE001 - reported by the test's thread
            failures.append(error)

    threads = [threading.Thread(target=call) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures and not any(thread.is_alive() for thread in threads)
    assert settings() == caller


def test_the_chosen_backend_is_the_taggers_and_the_verbs_log_it(tmp_path):
    said = "reference (the model's torch modules: BiLSTM and decoder)"
    tagger = Tagger.load(backend="reference")
    assert tagger.backend == "reference" and tagger.chosen_backend == said
    result = run_cli("tag", "--text", "She reads a book.", "--backend", "reference")
    lines = result.stderr.decode().splitlines()
    assert lines == [f"backend: {said}"]
    result = run_cli("evaluate", str(SAMPLE), "--backend", "reference")
    assert f"backend: {said}" in result.stderr.decode().splitlines()
    auto = [
        line for line in run_cli("tag", "--text", "Hi.").stderr.decode().splitlines() if "backend" in line
    ]
    assert len(auto) == 1 and len(auto[0]) <= 80
