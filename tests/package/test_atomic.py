"""Atomic writes: a failed write leaves nothing, and files get the mode the umask gives (not 0600)."""

from __future__ import annotations

import errno
import os
import signal
import stat
import sys

import pytest

import easyfirst.atomic as atomic
from conftest import SAMPLE, run_cli
from easyfirst.atomic import LogFile, atomic_write
from easyfirst.errors import WriteFailed


@pytest.fixture
def umask():
    def set_umask(mask: int) -> None:
        os.umask(mask)

    before = os.umask(0o022)
    yield set_umask
    os.umask(before)


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_write_follows_the_umask(tmp_path, umask, mask, mode):
    umask(mask)
    path = tmp_path / "out.txt"
    atomic_write(path, lambda out: out.write(b"x"))
    assert stat.S_IMODE(path.stat().st_mode) == mode and path.read_bytes() == b"x"


def test_a_failed_write_leaves_nothing(tmp_path):
    def fail(out):
        out.write(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(tmp_path / "out.txt", fail)
    assert list(tmp_path.iterdir()) == []


def test_a_tagged_file_is_readable_by_others_under_umask_022(tmp_path, umask):
    umask(0o022)
    out = tmp_path / "tagged.conllu"
    result = run_cli("tag", SAMPLE, "-o", out, process=True)
    assert result.returncode == 0, result.stderr.decode()
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


def test_an_interrupt_during_a_deferred_write_comes_after_the_file_is_in_place(tmp_path):
    from easyfirst.atomic import signals_deferred

    target = tmp_path / "model.pt"

    def write(out):
        out.write(b"first half ")
        # Ctrl-C in the middle of the write, raised in this thread: os.kill to the process could be
        # taken by another thread (pytest-xdist's) and seen only after the block, on a loaded machine
        signal.raise_signal(signal.SIGINT)
        out.write(b"second half")

    # as in a command: Python's own Ctrl-C handler, SIGINT not blocked (whatever an earlier test in this
    # process left: twice in .ci/run beside two trainings, a pytest-xdist worker reached this test with
    # the signal not delivered, and the test found no KeyboardInterrupt)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        with pytest.raises(KeyboardInterrupt):
            with signals_deferred():
                atomic_write(target, write)
        assert target.read_bytes() == b"first half second half"
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is back
        assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # and unblocked
    finally:
        signal.signal(signal.SIGINT, inherited)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def stale(folder, name: str) -> os.PathLike:
    """A temporary such as a killed atomic_write of ``folder/name`` leaves (nobody holds its lock)."""
    path = folder / f".{name}.k3x_9q0a.tmp"
    path.write_bytes(b"")
    return path


def test_the_stale_temporaries_of_the_outputs_named_are_removed_and_nothing_else(tmp_path):
    from easyfirst.atomic import remove_stale_temporaries

    ours = [stale(tmp_path, "a.conllu"), stale(tmp_path, "b.conllu")]
    kept = [
        stale(tmp_path, "notes.txt"),  # not an output of this call
        tmp_path / ".a.conllu.tmp",  # not atomic_write's naming: no 8 random characters
        tmp_path / ".a.conllu.ABCDEFGH.tmp",
        tmp_path / "a.conllu.k3x_9q0a.tmp",
        tmp_path / "a.conllu",
    ]
    for path in kept[1:]:
        path.write_bytes(b"")
    removed = remove_stale_temporaries([tmp_path / "a.conllu", tmp_path / "b.conllu", tmp_path / "no" / "c"])
    assert removed == 2 and not any(p.exists() for p in ours) and all(p.exists() for p in kept)


def test_a_temporary_being_written_is_kept_by_a_cleaner(tmp_path):
    from easyfirst.atomic import remove_stale_temporaries

    target = tmp_path / "out.txt"
    found = []

    def write(out):
        out.write(b"half ")
        found.append(remove_stale_temporaries([target]))  # another process's rerun, meanwhile
        out.write(b"and the rest")

    atomic_write(target, write)
    assert found == [0] and target.read_bytes() == b"half and the rest"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_rerun_of_tag_over_many_files_removes_what_a_killed_one_left(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    inputs = [tmp_path / "a.conllu", tmp_path / "b.conllu"]
    for path in inputs:
        path.write_bytes(SAMPLE.read_bytes())
    left, other = stale(out, "a.conllu"), stale(out, "notes.txt")
    result = run_cli("tag", *inputs, "-o", out, process=True)
    assert result.returncode == 0, result.stderr.decode()
    assert not left.exists() and other.exists()
    assert sorted(p.name for p in out.iterdir()) == [".notes.txt.k3x_9q0a.tmp", "a.conllu", "b.conllu"]


def test_an_interrupt_while_the_temporary_is_made_leaves_none(tmp_path, monkeypatch):
    """Ctrl-C arriving right after the temporary file exists, before atomic_write holds its name: the
    file is removed and the interrupt still raised (an interrupted `tag` left `.out.XXXXXXXX.tmp` behind
    when it came there)."""
    from easyfirst import atomic

    made = atomic._locked_temporary

    def made_then_interrupted(path):
        found = made(path)
        signal.raise_signal(signal.SIGINT)  # Python's own handler: KeyboardInterrupt, here or deferred
        return found

    monkeypatch.setattr(atomic, "_locked_temporary", made_then_interrupted)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            atomic_write(tmp_path / "out.txt", lambda out: out.write(b"never"))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_interrupt_inside_held_is_raised_when_the_block_ends_and_inside_raised_at_once():
    from easyfirst.atomic import Interrupts

    interrupts, reached = Interrupts(), []
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    interrupts.install()
    try:
        interrupts.raising = True  # as during a command
        with pytest.raises(KeyboardInterrupt):
            with interrupts.held():
                signal.raise_signal(signal.SIGINT)
                reached.append("the rest of the held block")
        assert reached == ["the rest of the held block"]
        interrupts.received = None
        with pytest.raises(KeyboardInterrupt), interrupts.held():
            with interrupts.raised():  # a trial's training, inside Optuna's bookkeeping
                signal.raise_signal(signal.SIGINT)
                reached.append("after the signal in raised")
        assert reached == ["the rest of the held block"] and interrupts.raising is True
        interrupts.raising = False  # as before a command: kept, raised by no block
        with interrupts.held():
            signal.raise_signal(signal.SIGINT)
        assert interrupts.received == signal.SIGINT
    finally:
        interrupts.uninstall()
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def test_an_interrupt_lost_in_a_finalizer_is_raised_again_after_the_hook_not_inside_it():
    """A KeyboardInterrupt raised in a finalizer reaches sys.unraisablehook; sent again from inside the
    hook, its handler could raise there, and Python printed "Exception ignored in sys.unraisablehook"
    with a traceback (seen when `serve` was interrupted 3 s into its start). It is raised after."""
    import time
    from types import SimpleNamespace

    from easyfirst.atomic import Interrupts

    interrupts = Interrupts()
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    interrupts.install()
    try:
        interrupts.raising, interrupts.received = True, signal.SIGINT  # as when a signal came mid-command
        lost = SimpleNamespace(exc_type=KeyboardInterrupt, exc_value=KeyboardInterrupt(), object=None)
        try:
            sys.unraisablehook(lost)
        except KeyboardInterrupt:
            pytest.fail("the interrupt was raised inside the hook")
        with pytest.raises(KeyboardInterrupt):
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # the code that goes on gets it
                time.sleep(0.001)
    finally:
        interrupts.uninstall()
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _full_disk(monkeypatch, after: int = 0) -> None:
    """The system refuses every write after the first ``after`` (ENOSPC), as a full disk does."""
    calls = {"n": 0}
    write = atomic.system_write

    def refused(raw, data):
        calls["n"] += 1
        if calls["n"] > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write(raw, data)

    monkeypatch.setattr(atomic, "system_write", refused)


@pytest.mark.parametrize("how", ["raised", "turned into another error", "caught and ignored"])
def test_a_write_the_system_refuses_is_write_failed_naming_the_file(tmp_path, monkeypatch, how):
    """Whatever the writer made of the system's refusal (torch.save's C++ writer turns it into a
    RuntimeError; a careless one swallows it), the error is the system's, the old file intact."""
    path = tmp_path / "model.pt"
    path.write_bytes(b"the last complete version")
    _full_disk(monkeypatch)

    def write(out):
        data = b"x" * (atomic.BUFFER + 1)  # past the buffer: the system is asked at once
        if how == "raised":
            out.write(data)
        elif how == "turned into another error":
            try:
                out.write(data)
            except OSError:
                raise RuntimeError("unexpected pos 157824 vs 157776") from None
        else:
            try:
                out.write(data)
            except OSError:
                pass

    with pytest.raises(WriteFailed) as caught:
        atomic_write(path, write)
    assert str(caught.value) == f"{path}: cannot write: No space left on device"
    assert caught.value.errno == errno.ENOSPC
    assert path.read_bytes() == b"the last complete version"
    assert [p.name for p in tmp_path.iterdir()] == ["model.pt"]


def test_a_refusal_at_the_flush_is_write_failed_too(tmp_path, monkeypatch):
    _full_disk(monkeypatch)
    with pytest.raises(WriteFailed, match="out.json: cannot write: No space left on device"):
        atomic_write(tmp_path / "out.json", lambda out: out.write(b"{}"))  # held in the buffer until then
    assert list(tmp_path.iterdir()) == []


def test_another_os_error_of_the_writer_is_raised_as_it_is(tmp_path):
    """An OSError that is not a refused write (the input read by the writer) is not called one."""

    def write(out):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", "input.conllu")

    with pytest.raises(FileNotFoundError):
        atomic_write(tmp_path / "out", write)
    assert list(tmp_path.iterdir()) == []


def test_a_log_refused_mid_run_keeps_its_lines_and_names_itself(tmp_path, monkeypatch):
    path = tmp_path / "train.log"
    log = LogFile(path)
    log.write("epoch 1\n")
    _full_disk(monkeypatch)
    with pytest.raises(WriteFailed, match="train.log: cannot write: No space left on device"):
        log.write("epoch 2\n")
    log.close()
    assert path.read_text() == "epoch 1\n"
    monkeypatch.undo()
    resumed = LogFile(path, append=True)
    resumed.write("epoch 2\n")
    resumed.close()
    assert path.read_text() == "epoch 1\nepoch 2\n"
