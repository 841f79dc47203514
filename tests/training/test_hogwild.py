"""Hogwild training (easyfirst.training.hogwild, ``easyfirst train --workers K``): how many workers, shared
parameters and optimizer state seen across processes, an epoch shared by two processes, resuming."""

from __future__ import annotations

import json
import math
import multiprocessing

import pytest
import torch
from rich.console import Console

from conftest import SAMPLE, run_cli, sample_training
from easyfirst.config import Config
from easyfirst.errors import InputError
from easyfirst.training import distributed, hogwild
from easyfirst.training.epochs import train_epoch
from easyfirst.training.loop import prepare_run
from easyfirst.training.optim import make_optimizer
from easyfirst.training.reporting import RunLog

CPU = torch.device("cpu")


def test_the_default_is_one_worker_per_core_capped_and_one_for_batched_regimes(monkeypatch):
    monkeypatch.setattr(hogwild, "available_cores", lambda: 16)
    assert hogwild.choose_workers(None, 1, CPU, 12_543, distributed=False) == 8  # EWT: capped at 8
    assert hogwild.choose_workers(None, 1, CPU, 1_200, distributed=False) == 2  # one per 500 sentences
    assert hogwild.choose_workers(None, 1, CPU, 25, distributed=False) == 1  # the sample: one process
    assert hogwild.choose_workers(None, 16, CPU, 12_543, distributed=False) == 1  # batched
    assert hogwild.choose_workers(None, 1, torch.device("cuda"), 12_543, distributed=False) == 1
    assert hogwild.choose_workers(None, 1, CPU, 12_543, distributed=True) == 1  # torchrun
    monkeypatch.setattr(hogwild, "available_cores", lambda: 2)
    assert hogwild.choose_workers(None, 1, CPU, 12_543, distributed=False) == 2
    assert hogwild.choose_workers(3, 1, CPU, 25, distributed=False) == 3  # as asked


def test_workers_for_a_batched_regime_are_a_user_error():
    with pytest.raises(InputError, match="--workers 2: Hogwild workers train one sentence per update"):
        hogwild.choose_workers(2, 16, CPU, 12_543, distributed=False)
    with pytest.raises(InputError, match="not on cuda"):
        hogwild.choose_workers(2, 1, torch.device("cuda"), 12_543, distributed=False)
    assert hogwild.choose_workers(1, 16, CPU, 12_543, distributed=False) == 1


def test_workers_for_a_batched_run_are_refused_before_the_run_folder_is_written(tmp_path):
    output = tmp_path / "run"
    result = run_cli(*sample_training(output, "--workers", "2", "--batch-size", "16", epochs=1))
    assert result.returncode == 2
    assert (
        result.stderr.decode()
        .strip()
        .splitlines()[-1]
        .startswith(
            "--workers 2: Hogwild workers train one sentence per update on the CPU, not with 16 sentences"
        )
    )
    assert not output.exists()


def _step_in_a_child(model, optimizer, done):
    model.weight.grad = torch.full_like(model.weight, 2.0)
    optimizer.step()
    done.set()


def test_a_workers_adagrad_step_lands_in_the_shared_parameters_and_state():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2, bias=False)
    before = model.weight.detach().clone()
    optimizer = make_optimizer("adagrad", 0.1, model)
    hogwild.share(model, optimizer)
    context = multiprocessing.get_context("fork")
    done = context.Event()
    child = context.Process(target=_step_in_a_child, args=(model, optimizer, done))
    child.start()
    try:
        child.join(timeout=60)
        assert done.is_set() and child.exitcode == 0
    finally:  # a child that hangs is not left behind by the failed test
        child.kill()
        child.join()
    # Adagrad by hand: sum = 0 + g² = 4, p −= lr · g / (√sum + 1e-10) = 0.1 · 2 / 2
    state = optimizer.state[model.weight]["sum"]
    assert torch.equal(state, torch.full_like(state, 4.0))
    assert torch.allclose(model.weight.detach(), before - 0.1, atol=1e-6)


def sample_config(workers: int, epochs: int = 1) -> Config:
    config = Config.for_task("pos")
    config.data.train = config.data.dev = str(SAMPLE)
    config.train.workers, config.train.epochs = workers, epochs
    return config


def test_two_workers_share_an_epoch_and_its_updates(tmp_path):
    log = RunLog(Console(quiet=True), tmp_path / "train.log")
    run = prepare_run(sample_config(2), tmp_path, CPU, log, False, distributed.Group())
    try:
        assert run.workers is not None and run.workers.count == 2
        start = {name: p.detach().clone() for name, p in run.model.named_parameters()}
        train_epoch(run, 1)
        board = run.workers.board
        sentences = len(run.train_items)
        # every sentence once: worker 0 the even positions of the order, worker 1 the odd ones
        assert board[:, hogwild.STEPS].tolist() == [math.ceil(sentences / 2), sentences // 2]
        assert run.progress.seen == sum(len(item) for item in run.train_items)
        assert math.isfinite(run.progress.loss_sum) and run.progress.loss_sum > 0
        assert all(not torch.equal(start[n], p) for n, p in run.model.named_parameters() if n in start)
    finally:
        run.workers.close()
        log.close()
    assert all(not process.is_alive() for process in run.workers.processes)


def test_two_workers_train_and_resume_from_the_command_line(tmp_path):
    output = tmp_path / "run"
    first = run_cli(*sample_training(output, "--workers", "2", epochs=2), timeout=600, process=True)
    assert first.returncode == 0, first.stderr.decode()
    log = (output / "train.log").read_text()
    assert "hogwild 2 processes update the shared parameters" in log
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["workers"] == 2 and len(metrics["epochs"]) == 2
    assert metrics["dev"]["accuracy"] > 0.5  # the sample is also the dev set: two epochs learn it

    # a checkpoint within an epoch of 2 workers continues only with 2
    state = torch.load(output / "checkpoint.pt", weights_only=True)
    state.update(step=5, worker_steps=[3, 2], epoch=3)
    torch.save(state, output / "checkpoint.pt")
    refused = run_cli("train", "--resume", output, "--workers", "1", "--epochs", "3")
    assert refused.returncode == 2
    assert (
        refused.stderr.decode()
        .strip()
        .endswith("the run stopped within an epoch of 2 Hogwild worker(s); resume it with --workers 2")
    )
    resumed = run_cli(
        "train", "--resume", output, "--workers", "2", "--epochs", "3", timeout=600, process=True
    )
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert "resuming from" in (output / "train.log").read_text()
    assert len(json.loads((output / "metrics.json").read_text())["epochs"]) == 3
