"""Data-parallel training: two CPU processes under torchrun (gloo on 127.0.0.1) train on the sample."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import run_cli, sample_training
from easyfirst.training import distributed

DRIVER = Path(__file__).parents[1] / "distributed_driver.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(output: Path, epochs: int, resume: bool = False) -> subprocess.CompletedProcess:
    """``torchrun --nproc_per_node 2 -m easyfirst train`` on the sample, through the recording driver
    (with ``resume``: ``train --resume OUTPUT --epochs EPOCHS``)."""
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2"]
    launcher += ["--master_addr", "127.0.0.1", "--master_port", str(free_port())]
    # torchrun's logs in the test's folder: by default it makes a /tmp/torchelastic_* folder and leaves it
    launcher += ["--log-dir", str(output.parent / "torchrun-logs"), str(DRIVER)]
    extra = ("--batch-size", "4", "--threads", "1")
    train = ["train", "--resume", str(output), "--epochs", str(epochs)] if resume else None
    command = launcher + (train or sample_training(output, *extra, epochs=epochs))
    writes = output.parent / f"writes-{output.name}"  # each process's files, as the driver recorded them
    writes.mkdir(exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "120", "WRITES_DIR": str(writes)}
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)


def writes_by_rank(output: Path) -> dict[int, list[str]]:
    """What each process of the run into ``output`` recorded (tests/distributed_driver.py): {rank: the
    paths it wrote}."""
    return {
        int(f.stem): json.loads(f.read_text())
        for f in (output.parent / f"writes-{output.name}").glob("*.json")
    }


@pytest.fixture(scope="module")
def two_process_run(tmp_path_factory) -> tuple[Path, Path, subprocess.CompletedProcess]:
    """Four epochs under torchrun on the sample: (the test's folder, the run folder, the launcher's
    result), for the tests of what it writes and of resuming to the same result."""
    folder = tmp_path_factory.mktemp("torchrun")
    output = folder / "whole"
    result = torchrun(output, epochs=4)
    assert result.returncode == 0, result.stderr[-3000:]
    return folder, output, result


def test_two_processes_train_and_only_rank_0_writes(two_process_run):
    tmp_path, output, result = two_process_run
    written = writes_by_rank(output)
    assert set(written) == {0, 1}, result.stdout[-2000:]
    # rank 1 wrote nothing of the run (it may create the folder, as the CLI checks that it can; torch's
    # own temporary folders outside it do not count)
    files_by_1 = [p for p in written[1] if Path(p).is_relative_to(tmp_path) and Path(p) != output]
    assert files_by_1 == [], f"rank 1 wrote {files_by_1}"
    names = {Path(p).name for p in written[0] if Path(p).parent == output}
    assert {"model.pt", "metrics.json", "train.log", "checkpoint.pt", "config.json", "vocab.json"} <= names
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["processes"] == 2
    losses = [row["loss"] for row in metrics["epochs"]]
    assert len(losses) == 4 and losses[-1] < losses[0], losses  # it trains
    assert 0.3 < metrics["dev"]["accuracy"] <= 1.0
    # the log is process 0's alone: one summary line per epoch, not one per process (a slow epoch also
    # logs its progress, "epoch 2/4  2/3 updates (67%)", which is not a summary)
    log = (output / "train.log").read_text()
    assert sum(re.match(r"epoch +\d+ +loss", line) is not None for line in log.splitlines()) == 4, log
    assert "2 processes" in log
    # its checkpoint is for 2 processes: resuming it alone would change the data order, so it is refused
    result = run_cli("train", "--resume", output, "--epochs", "5")
    assert result.returncode == 2
    assert b"2 process(es); resume it with as many" in result.stderr


def test_shards_are_disjoint_equal_and_cover_all_but_the_remainder():
    batches = list(range(11))
    shards = [distributed.shard(batches, distributed.Group(rank, 3)) for rank in range(3)]
    assert shards == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    assert distributed.shard(batches, distributed.Group()) == batches


def test_processes_other_than_0_draw_their_own_dropout_masks():
    def masks(group):
        torch.manual_seed(7)
        distributed.seed_dropout(7, group)
        return torch.rand(1000) < 0.5

    alone = masks(distributed.Group())
    assert torch.equal(masks(distributed.Group(0, 2)), alone)  # process 0 keeps a one-process run's stream
    first, second = masks(distributed.Group(1, 2)), masks(distributed.Group(2, 3))
    assert (first != alone).float().mean() > 0.3 and (second != first).float().mean() > 0.3
    assert torch.equal(masks(distributed.Group(1, 2)), first)  # reproducible from the seed


def test_a_resumed_two_process_run_continues_exactly(two_process_run, tmp_path):
    _, whole, _ = two_process_run
    halves = tmp_path / "halves"
    assert torchrun(halves, epochs=2).returncode == 0
    result = torchrun(halves, epochs=4, resume=True)
    assert result.returncode == 0, result.stderr[-3000:]
    runs = [json.loads((run / "metrics.json").read_text()) for run in (whole, halves)]
    assert [len(m["epochs"]) for m in runs] == [4, 4]
    # the losses depend on process 1's dropout masks too (DDP averages both processes' gradients)
    assert [row["loss"] for row in runs[0]["epochs"]] == [row["loss"] for row in runs[1]["epochs"]]
    assert runs[0]["dev"] == runs[1]["dev"]


def test_under_torchrun_the_run_folder_is_required_and_errors_are_said_once(tmp_path):
    args = sample_training(tmp_path / "unused")[:-2]  # without --output
    said = {}
    for rank in ("0", "1"):
        result = run_cli(*args, cwd=tmp_path, env={"WORLD_SIZE": "2", "RANK": rank}, process=True)
        assert result.returncode == 2
        said[rank] = result.stderr.decode()
    assert "give the run folder with --output" in said["0"] and "Traceback" not in said["0"]
    assert said["1"] == ""
    assert not (tmp_path / "runs").exists()
