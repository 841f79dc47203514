"""Reading ahead (easyfirst.tagging.readahead): a forked process makes a generator's items while this one goes
on; ``easyfirst tag`` uses it to read and index a CoNLL-U file while torch is imported."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from conftest import SAMPLE, run_cli, said
from easyfirst.data import detect
from easyfirst.errors import InputError
from easyfirst.parallel.cores import available_cores
from easyfirst.tagging.readahead import ReadAhead, receive

two_cores = pytest.mark.skipif(available_cores() < 2, reason="easyfirst tag reads ahead with a second core")


def gone(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_the_items_come_in_order_and_the_reader_is_collected():
    ahead = ReadAhead(lambda: ({"n": n, "square": n * n} for n in range(50)))
    assert [item["square"] for item in ahead] == [n * n for n in range(50)]
    assert gone(ahead.pid)


def test_each_copy_carries_what_copy_makes_of_every_item_and_the_same_end():
    ahead = ReadAhead(lambda: (n * n for n in range(40)), copies=2, copy=lambda square: -square)
    copies = [list(receive(pipe)) for pipe in ahead.copies]  # read before iterating, which releases them
    assert copies == [[-n * n for n in range(40)]] * 2
    assert list(ahead) == [n * n for n in range(40)]
    assert ahead.copies == [] and gone(ahead.pid)


def test_a_copy_no_one_reads_does_not_hold_up_the_reader():
    """Items beyond what the pipes and the child's queue hold: the copy is released, unread, when the
    iteration starts (no worker was forked to read it); the reader must drop it, not wait for it."""
    ahead = ReadAhead(lambda: ("x" * 100_000 for _ in range(200)), copies=1, copy=lambda item: item)
    seen = []
    reading = threading.Thread(target=lambda: seen.extend(ahead), daemon=True)
    reading.start()
    reading.join(timeout=60)
    finished = not reading.is_alive()
    ahead.close()
    assert finished and len(seen) == 200


def failing():
    yield "first"
    yield "second"
    raise InputError("expected 10 tab-separated columns, found 9", "in.conllu", 7)


def test_an_error_of_the_reader_is_raised_where_its_items_stop_with_its_place():
    ahead = ReadAhead(failing)
    seen = []
    with pytest.raises(InputError) as raised:
        for item in ahead:
            seen.append(item)
    assert seen == ["first", "second"]
    assert str(raised.value) == "in.conllu:7: expected 10 tab-separated columns, found 9"
    assert gone(ahead.pid)


def test_a_file_of_another_kind_is_reported_as_such_across_the_processes(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("Just some prose, not CoNLL-U.\n")
    error = detect.WrongKind("expected 10 columns", detect.sniff(text), detect.CONLLU, str(text), 1, "pos")

    def produce():
        raise error
        yield  # a generator

    with pytest.raises(detect.WrongKind) as raised:
        list(ReadAhead(produce))
    assert str(raised.value) == str(error) and "plain text" in str(raised.value)


def test_closing_early_ends_a_reader_that_would_go_on_for_ever():
    def endless():
        n = 0
        while True:
            n += 1
            yield "x" * 10_000  # fills the pipe and the queue, then waits

    ahead = ReadAhead(endless)
    assert next(iter(ahead)) == "x" * 10_000
    started = time.monotonic()
    ahead.close()
    assert gone(ahead.pid) and time.monotonic() - started < 10


@two_cores
def test_easyfirst_tag_forks_its_reader_before_importing_torch(tmp_path):
    """The point of reading ahead: the file is read while torch is imported. A torch import put on the
    command's path before the fork (a module of the reader, the config, the CLI) fails this."""
    script = (
        "import sys, atexit\n"
        "import easyfirst.tagging.readahead as readahead\n"
        "seen, start = [], readahead.ReadAhead.__init__\n"
        "def init(self, *args, **kwargs):\n"
        "    seen.append('torch' in sys.modules)\n"
        "    start(self, *args, **kwargs)\n"
        "readahead.ReadAhead.__init__ = init\n"
        "atexit.register(lambda: print('torch imported at the fork:', seen))\n"
        "from easyfirst.cli import run\n"
        "sys.argv = ['easyfirst', *sys.argv[1:]]\n"
        "run()\n"
    )
    out = tmp_path / "out.conllu"
    done = subprocess.run(
        [sys.executable, "-c", script, "tag", str(SAMPLE), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "torch imported at the fork: [False]" in done.stdout


@two_cores
def test_stdin_read_ahead_gives_the_bytes_of_the_file_read_ahead():
    from_file = run_cli("tag", SAMPLE, process=True)
    from_stdin = run_cli("tag", "-", input=SAMPLE.read_bytes(), process=True)
    assert from_file.returncode == from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == from_file.stdout
    assert from_file.stdout.count(b"\n") == SAMPLE.read_bytes().count(b"\n")


@two_cores
def test_a_malformed_line_read_ahead_is_reported_with_its_place_and_nothing_is_written(tmp_path):
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines, 1) if i > 100 and line[:1].isdigit())
    lines[number - 1] = lines[number - 1].replace("\t", " ", 1)
    bad = tmp_path / "bad.conllu"
    bad.write_text("".join(lines), encoding="utf-8")
    done = run_cli("tag", bad, "-o", tmp_path / "out.conllu", process=True)
    assert done.returncode == 2
    assert said(done.stderr).strip() == f"{bad}:{number}: expected 10 tab-separated columns, found 9"
    assert not (tmp_path / "out.conllu").exists()


@two_cores
def test_a_file_read_ahead_for_another_column_is_read_again_by_the_writer():
    """The reader takes the task and column from config.json unvalidated (validating imports torch);
    should the loaded model say otherwise, the writer drops what was read ahead and reads the file."""
    import io

    from easyfirst import Tagger
    from easyfirst.tagging.pipeline import Source

    tagger = Tagger.load()
    expected = io.BytesIO()
    plain = Source.find(str(SAMPLE), None, {})
    plain.writer(tagger, {}, batch_size=256, output=None)(expected)
    plain.close()
    source = Source.find(str(SAMPLE), None, {})
    source.read_ahead(None, 256)
    assert source.ahead is not None and source.ahead_for == ("pos", "upos", 256)
    source.ahead_for = ("pos", "xpos", 256)
    reader = source.ahead.pid
    out = io.BytesIO()
    source.writer(tagger, {}, batch_size=256, output=None)(out)
    source.close()
    assert source.ahead is None and gone(reader)
    assert out.getvalue() == expected.getvalue()


@pytest.mark.skipif(not os.path.exists("/dev/stdin"), reason="needs /dev/stdin")
def test_a_pipe_given_as_a_path_is_tagged_like_the_file():
    """``easyfirst tag <(command)`` names a pipe: looking at its head must not take those bytes from
    the reader (the file kind is sniffed from the buffered bytes, as for stdin)."""
    from_file = run_cli("tag", SAMPLE, process=True)
    # a pipe here, as <(...) is; /dev/stdin in the test's process would be pytest's
    from_pipe = run_cli("tag", "/dev/stdin", input=SAMPLE.read_bytes(), process=True)
    assert from_pipe.returncode == 0, from_pipe.stderr
    assert from_pipe.stdout == from_file.stdout


def test_the_reader_packs_its_batches_without_importing_torch():
    """The reader's work (a POS task's read_ahead: reading, indexing, packing batches) runs beside the
    import of torch; importing torch in it would take that time again on the second core."""
    script = (
        "import sys\n"
        "from easyfirst.resources import default_model_path\n"
        "from easyfirst.tasks import TASKS\n"
        f"windows = list(TASKS['pos'].read_ahead(open({str(SAMPLE)!r}, 'rb'), default_model_path(), 'upos', 'x', 8))\n"
        "print(len(windows[0].batches) > 1, 'torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]
