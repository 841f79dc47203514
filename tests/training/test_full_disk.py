"""A full disk (ENOSPC) or an I/O error (EIO) under every writer, in the style of SQLite's I/O-error
tests: a short training is run once counting the writes that reach the system (every file the project
writes goes through easyfirst.atomic.system_write), then again failing the n-th write and every one after
it (the disk stays full), for every n. Each outcome must be one line naming the file and the error,
exit status 2, no traceback, the files in the run folder complete (each one loads), no temporary left,
and, once the disk has room again, the command that line gives (``train --resume``, or the same
command) finishing the run with the scores of the run that never failed."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import torch

import easyfirst.atomic as atomic
import easyfirst.parallel.cores as cores
from conftest import SAMPLE, run_cli
from easyfirst.runs import load_model

TINY = ("--epochs", 2, "--hidden-dim", 8, "--threads", 1)


class Disk:
    """The writes that reach the system, counted; from write ``full_at`` on, each refused with
    ``error`` (as a full disk refuses every write until space is freed)."""

    def __init__(self):
        self.count, self.full_at, self.error = 0, None, errno.ENOSPC
        self.files: Counter[str] = Counter()
        self.refused: list[str] = []  # the file of each refused write

    def write(self, raw: atomic.OutputFile, data) -> int | None:
        self.count += 1
        self.files[raw.destination.name] += 1
        if self.full_at is not None and self.count >= self.full_at:
            self.refused.append(raw.destination.name)
            raise OSError(self.error, os.strerror(self.error))
        return io_write(raw, data)


io_write = atomic.system_write


@pytest.fixture
def disk(monkeypatch) -> Disk:
    found = Disk()
    monkeypatch.setattr(atomic, "system_write", found.write)
    return found


def train(out: Path):
    return run_cli("train", "--task", "pos", "--train", SAMPLE, "--dev", SAMPLE, *TINY, "-o", out)


def scores(out: Path) -> tuple:
    metrics = json.loads((out / "metrics.json").read_text())
    return metrics["best_epoch"], metrics["dev"]["accuracy"], [row["loss"] for row in metrics["epochs"]]


def check_complete(out: Path) -> None:
    """Every file of the run folder is a complete one: no temporary, JSON that parses, a model and a
    checkpoint that load, a log of whole lines."""
    if not out.exists():
        return
    names = {p.name for p in out.iterdir()}
    assert not [name for name in names if name.endswith(".tmp")], names
    for name in names & {"config.json", "vocab.json", "metrics.json"}:
        json.loads((out / name).read_text())
    if "model.pt" in names:
        load_model(out)
    if "checkpoint.pt" in names:
        assert torch.load(out / "checkpoint.pt", weights_only=True)["epoch"] >= 2
    if "train.log" in names:
        text = (out / "train.log").read_text()
        assert text == "" or text.endswith("\n")


def test_every_file_a_training_run_writes_goes_through_the_one_write_path(disk, tmp_path):
    result = train(tmp_path / "run")
    assert result.returncode == 0, result.stderr.decode()
    written = {p.name for p in (tmp_path / "run").iterdir()}
    assert written == {"config.json", "vocab.json", "train.log", "model.pt", "checkpoint.pt", "metrics.json"}
    assert set(disk.files) == written  # nothing of the run folder bypasses easyfirst.atomic


def test_a_training_run_survives_a_full_disk_at_every_write(disk, tmp_path):
    clean = tmp_path / "clean"
    assert train(clean).returncode == 0
    expected, total = scores(clean), disk.count
    assert total >= 15  # the log's lines, the JSON files, the model and checkpoint of each epoch
    problems = []
    for n in range(1, total + 1):
        out = tmp_path / f"full-{n}"
        disk.count, disk.full_at, disk.refused = 0, n, []
        failed = train(out)
        disk.full_at = None  # space freed
        stderr = failed.stderr.decode()
        last = stderr.strip().splitlines()[-1]
        said = f"{out / disk.refused[0]}: cannot write: No space left on device; "
        if (
            failed.returncode != 2
            or "Traceback" in stderr
            or "Exception ignored" in stderr
            or not last.startswith(said)
            or stderr.count("cannot write") != 1
        ):
            problems.append((n, failed.returncode, stderr[-600:]))
            continue
        check_complete(out)
        again = re.search(r"(continue|start) with: easyfirst train --resume (\S+)$", last)
        if again:
            assert again[2] == str(out)
            finished = run_cli("train", "--resume", out)
        else:
            assert last.endswith("nothing is kept; free some space, then run the same command again")
            assert not out.exists()
            finished = train(out)
        if finished.returncode != 0 or scores(out)[:2] != expected[:2]:
            problems.append((n, "resumed", finished.returncode, finished.stderr.decode()[-600:]))
            continue
        assert scores(out)[2] == pytest.approx(expected[2], rel=1e-5)
    assert not problems, problems


def test_an_io_error_in_fsync_of_the_checkpoint_is_one_line(monkeypatch, tmp_path):
    """EIO where the system reports it late (fsync): the checkpoint named, the one before intact."""
    out = tmp_path / "run"
    fsync, calls = os.fsync, Counter()

    def failing(handle):
        name = os.readlink(f"/proc/self/fd/{handle}")
        calls[name] += 1
        if ".checkpoint.pt." in name and sum(v for k, v in calls.items() if ".checkpoint.pt." in k) == 2:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return fsync(handle)

    monkeypatch.setattr(atomic.os, "fsync", failing)
    result = train(out)
    stderr = result.stderr.decode()
    assert result.returncode == 2 and "Traceback" not in stderr
    assert (
        stderr.strip()
        .splitlines()[-1]
        .startswith(
            f"{out / 'checkpoint.pt'}: cannot write: Input/output error; kept: the checkpoint at the end of epoch 1"
        )
    )
    assert (
        torch.load(out / "checkpoint.pt", weights_only=True)["epoch"] == 2
    )  # epoch 1's, from which to go on
    monkeypatch.setattr(atomic.os, "fsync", fsync)
    assert run_cli("train", "--resume", out).returncode == 0
    assert (out / "metrics.json").is_file()


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiny") / "run"
    assert train(out).returncode == 0
    return out


@pytest.mark.parametrize("full_at", [1, 2, 3, 4])
def test_export_on_a_full_disk_is_one_line_and_leaves_no_half_folder(tiny_run, disk, tmp_path, full_at):
    disk.full_at = full_at
    result = run_cli("export", tiny_run, "-o", tmp_path / "out")
    stderr = result.stderr.decode()
    assert result.returncode == 2 and "Traceback" not in stderr, stderr
    assert stderr.strip().splitlines() == [
        f"{tmp_path / 'out' / disk.refused[0]}: cannot write: No space left on device"
    ]
    assert not (tmp_path / "out").exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("full_at", [1, 4])
def test_export_over_an_export_on_a_full_disk_keeps_the_old_one_whole(tiny_run, disk, tmp_path, full_at):
    """--overwrite into a folder that holds an export: a full disk at any write leaves every file of the
    old export as it was (no new weights beside an old card), and nothing beside the folder."""
    out = tmp_path / "out"
    assert run_cli("export", tiny_run, "-o", out).returncode == 0
    before = {f.name: f.read_bytes() for f in out.iterdir()}
    disk.full_at = full_at
    result = run_cli("export", tiny_run, "-o", out, "--half", "--overwrite")
    assert result.returncode == 2, result.stderr.decode()
    assert {f.name: f.read_bytes() for f in out.iterdir()} == before
    assert list(tmp_path.iterdir()) == [out]


def test_plot_and_tag_on_a_full_disk_are_one_line_and_leave_nothing(tiny_run, disk, tmp_path, monkeypatch):
    monkeypatch.setattr(cores, "available_cores", lambda: 1)  # no reader forked in the test's process
    disk.full_at = 1
    for args, output in (
        (("plot", "-m", tiny_run, "-i", SAMPLE), tmp_path / "figure.png"),
        (("tag", SAMPLE, "-m", tiny_run), tmp_path / "tagged.conllu"),
    ):
        result = run_cli(*args, "-o", output)
        stderr = result.stderr.decode()
        assert result.returncode == 2 and "Traceback" not in stderr, stderr
        assert stderr.strip().splitlines()[-1] == f"{output}: cannot write: No space left on device"
        assert list(tmp_path.iterdir()) == []


@pytest.fixture
def small_disk(tmp_path):
    """A 600 kB filesystem (tmpfs) at tmp_path/disk, where the test may mount one (as root); unmounted
    when the test ends, also when it fails."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(folder)]
    try:
        mounted = subprocess.run(mount, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        pytest.skip("no mount command here")
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30)


def test_a_real_full_disk_then_room_again(small_disk):
    """The issue's case on a real small filesystem, in a process of its own: the default POS model
    (790 kB) does not fit in 600 kB; once the filesystem has room, --resume trains the run."""
    out = small_disk / "run"
    args = ("--task", "pos", "--train", SAMPLE, "--dev", SAMPLE, "--epochs", 1, "--threads", 1)
    failed = run_cli("train", *args, "-o", out, process=True)
    stderr = failed.stderr.decode()
    assert failed.returncode == 2 and "Traceback" not in stderr, stderr
    assert (
        stderr.strip()
        .splitlines()[-1]
        .startswith(f"{out / 'model.pt'}: cannot write: No space left on device")
    )
    assert "holds no model yet" in stderr and sorted(p.name for p in out.iterdir()) == [
        "config.json",
        "train.log",
        "vocab.json",
    ]
    remount = ["mount", "-o", "remount,size=8m", str(small_disk)]
    assert subprocess.run(remount, capture_output=True, timeout=30).returncode == 0
    finished = run_cli("train", "--resume", out, process=True)
    assert finished.returncode == 0, finished.stderr.decode()
    assert (out / "metrics.json").is_file() and load_model(out)


def test_a_search_on_a_full_disk_is_one_line(small_disk):
    """`easyfirst tune` whose study.db cannot be written: one line naming the file and SQLite's reason,
    status 2 (it printed SQLAlchemy's message, the SQL it ran and a link, 14 lines, under --storage's
    name that the user never gave)."""
    (small_disk / "filler").write_bytes(b"\0" * (600 * 1024 - 16 * 1024))  # all but 16 kB
    space = Path(__file__).resolve().parents[2] / "configs" / "tune" / "pos-sample.toml"
    args = ("--space", space, "--task", "pos", "--train", SAMPLE, "--dev", SAMPLE, "--epochs", 1)
    result = run_cli("tune", small_disk / "study", *args, "--trials", 1, process=True)
    lines = result.stderr.decode().strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"{small_disk / 'study' / 'study.db'}: cannot write: "), lines
    assert "full" in lines[0], lines
