"""``easyfirst tune``: a small study on the sample (one trial pruned), every trial a run folder, the test
set never read while searching, a bad search space refused before any trial, a study interrupted by
Ctrl-C going on with its finished trials, two processes sharing one study, and the best configuration
trained again at several seeds."""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import NER_SAMPLE, QE_SAMPLE, SAMPLE, extra, run_cli

optuna = extra("optuna", "tune")

SPACE = """\
[model]
hidden_dim = { low = 8, high = 24, step = 8 }
dropout = { low = 0.0, high = 0.5 }

[train]
lr = { low = 0.02, high = 0.2, log = true }
batch_size = 8
"""


def study_trials(folder: Path) -> list:
    storage = f"sqlite:///{folder / 'study.db'}"
    return optuna.load_study(study_name=folder.resolve().name, storage=storage).get_trials()


def states(trials) -> list[str]:
    return [t.state.name for t in trials]


def tune_args(folder: Path, space: Path, *more, data=(SAMPLE, SAMPLE)) -> list[str]:
    train, dev = data
    args = ["tune", folder, "--space", space, "--task", "pos", "--train", train, "--dev", dev, *more]
    return list(map(str, args))


def in_process(args: list[str]) -> None:
    """``easyfirst ARGS`` in this process (so that a test can change the pruner and watch the reads),
    torch's threads put back afterwards."""
    import torch

    from easyfirst.cli import app

    threads = torch.get_num_threads()
    try:
        app(args, prog_name="easyfirst", standalone_mode=False)
    finally:
        torch.set_num_threads(threads)


class PruneTrialOne(optuna.pruners.BasePruner):
    """Prunes trial 1 at its first epoch, and no other: a pruned trial on demand."""

    def prune(self, study, trial) -> bool:
        return trial.number == 1


@pytest.fixture(scope="module")
def small_study(tmp_path_factory):
    """Four trials of two epochs on the sample, trial 1 pruned after its first; the dev and test files
    are copies of the sample, so that the reads of each can be told apart."""
    from easyfirst.tasks import get_task
    from easyfirst.tuning import study as studies

    root = tmp_path_factory.mktemp("tune")
    dev, test = root / "dev.conllu", root / "test.conllu"
    shutil.copy(SAMPLE, dev)
    shutil.copy(SAMPLE, test)
    (root / "space.toml").write_text(SPACE)
    task = type(get_task("pos"))
    read, reads = task.read, []

    def watched(self, path, data):
        reads.append(Path(path).resolve())
        return read(self, path, data)

    patch = pytest.MonkeyPatch()
    patch.setattr(task, "read", watched)
    patch.setattr(studies, "make_pruner", lambda name: PruneTrialOne())
    try:
        folder = root / "study"
        in_process(
            tune_args(
                folder, root / "space.toml", "--test", test, "--epochs", 2, "--trials", 4, data=(SAMPLE, dev)
            )
        )
    finally:
        patch.undo()
    return {"folder": folder, "reads": reads, "dev": dev, "test": test, "space": root / "space.toml"}


def test_a_study_runs_its_trials_as_run_folders_and_prunes_one(small_study, capsys):
    folder = small_study["folder"]
    trials = study_trials(folder)
    assert states(trials) == ["COMPLETE", "PRUNED", "COMPLETE", "COMPLETE"]
    for t in trials:
        run = folder / "trials" / f"{t.number:04d}"
        metrics = json.loads((run / "metrics.json").read_text())
        assert len(metrics["epochs"]) == (1 if t.number == 1 else 2)
        assert (run / "model.pt").is_file() and not (run / "checkpoint.pt").exists()
        assert t.user_attrs["dev"] == metrics["dev"]["accuracy"]
        config = json.loads((run / "config.json").read_text())
        assert config["train"]["threads"] == 1 and config["train"]["workers"] == 1
        assert config["model"]["hidden_dim"] == t.params["model.hidden_dim"]
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    assert max(t.value for t in complete) == max(t.user_attrs["dev"] for t in complete)
    for picture in ("history.png", "epochs.png", "importances.png"):
        assert (folder / picture).stat().st_size > 10_000, picture
    result = run_cli("evaluate", small_study["dev"], "-m", folder / "trials" / "0002", "--json")
    assert result.returncode == 0, result.stderr.decode()
    assert json.loads(result.stdout)["accuracy"] == pytest.approx(trials[2].user_attrs["dev"])


def test_the_test_set_is_never_read_while_searching(small_study):
    reads = small_study["reads"]
    assert small_study["dev"].resolve() in reads
    assert small_study["test"].resolve() not in reads
    for run in (small_study["folder"] / "trials").iterdir():
        assert json.loads((run / "config.json").read_text())["data"]["test"] is None
        assert "test" not in json.loads((run / "metrics.json").read_text())


def test_the_report_shows_the_best_trials_and_says_what_it_drew(small_study):
    result = run_cli("tune", small_study["folder"], "--report")
    assert result.returncode == 0, result.stderr.decode()
    text = result.stderr.decode()
    assert "4 trials: 3 complete, 1 pruned" in text
    best = max(study_trials(small_study["folder"]), key=lambda t: t.user_attrs["dev"])
    header = next(line for line in text.splitlines() if line.startswith("┃ trial"))
    assert header.split("┃")[2].strip() == f"#{best.number}"  # the best trial's column first
    assert f"{100 * best.user_attrs['dev']:.2f}" in text
    assert "history.png" in text and "importances.png" in text


def test_retrain_best_scores_test_once_per_seed(small_study, tmp_path):
    results = tmp_path / "results" / "best.json"
    args = ["tune", small_study["folder"], "--retrain-best", "--seeds", "1-2", "--epochs", "3"]
    result = run_cli(*args, "--results", results)
    assert result.returncode == 0, result.stderr.decode()
    summary = json.loads(results.read_text())
    best = max(
        (t for t in study_trials(small_study["folder"]) if t.state.name == "COMPLETE"),
        key=lambda t: t.user_attrs["dev"],
    )
    assert summary["trial"] == best.number and summary["params"] == best.params
    tests = []
    for seed in (1, 2):
        run = small_study["folder"] / "best" / f"seed-{seed}"
        metrics = json.loads((run / "metrics.json").read_text())
        config = json.loads((run / "config.json").read_text())
        assert config["train"]["seed"] == seed
        assert len(metrics["epochs"]) == 3  # --epochs given with --retrain-best: the trials trained 2
        assert Path(config["data"]["test"]).resolve() == small_study["test"].resolve()
        assert config["model"]["hidden_dim"] == best.params["model.hidden_dim"]
        tests.append(metrics["test"]["accuracy"])
    assert [row["test"] for row in summary["seeds"]] == tests
    assert summary["test"]["mean"] == pytest.approx(sum(tests) / 2)
    assert summary["test"]["sd"] == pytest.approx(statistics.stdev(tests))
    # again: the seeds trained are kept
    again = run_cli(*args, "--results", results)
    assert again.returncode == 0 and again.stderr.decode().count("trained before") == 2


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "[model]\nhidden_dim = { low = 8, high = 24 }\ndropout = { low = 0.0, high = 1.5 }\n",
            ":3: model.dropout must be",
        ),
        (
            "[model]\nhiden_dim = { low = 8, high = 24 }\n",
            ":2: unknown key 'hiden_dim' in [model] (did you mean hidden_dim?)",
        ),
        (
            "\n[train]\nlr = { low = 0.0, high = 0.1, log = true }\n",
            ":3: train.lr: a log range must start above 0",
        ),
        ('[train]\noptimizer = { choices = ["adagrad", "adamax"] }\n', ":2: train.optimizer must be one of"),
        ("[model]\nhidden_dim = { low = 8.5, high = 24 }\n", ":2: model.hidden_dim must be an integer"),
        ("[model]\nhidden_dim = { low = 8, hi = 24 }\n", ":2: model.hidden_dim: unknown key 'hi'"),
        ('[data]\ntest = { choices = ["a", "b"] }\n', ":2: data.test cannot be set in a search space"),
        ("[model]\nhidden_dim = 16\n", "no key to search"),
    ],
)
def test_a_bad_search_space_is_refused_with_its_line_before_any_trial(tmp_path, text, message):
    space = tmp_path / "space.toml"
    space.write_text(text)
    result = run_cli(*tune_args(tmp_path / "study", space))
    assert result.returncode == 2
    assert f"{space}{message}" in result.stderr.decode() or message in result.stderr.decode()
    assert message in result.stderr.decode()
    assert "Traceback" not in result.stderr.decode()
    assert not (tmp_path / "study").exists()


def test_a_study_keeps_its_settings(small_study):
    result = run_cli("tune", small_study["folder"], "--epochs", "3")
    assert result.returncode == 2
    assert "the study was started with --epochs 2, not 3" in result.stderr.decode()
    missing = run_cli("tune", small_study["folder"].parent / "nothing", "--report")
    assert missing.returncode == 2 and "no study here" in missing.stderr.decode()


def start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "easyfirst", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "120"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
    )


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
    process.communicate()


def test_an_interrupted_study_goes_on_with_its_finished_trials(tmp_path):
    space, folder = tmp_path / "space.toml", tmp_path / "study"
    space.write_text(SPACE)
    args = tune_args(folder, space, "--epochs", 12, "--trials", 3, "--pruner", "none")
    process = start(args)
    try:
        log = folder / "trials" / "0001" / "train.log"  # the second trial, after its first epoch
        deadline = time.monotonic() + 240
        while not (log.is_file() and "epoch   1" in log.read_text()) and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    finally:
        stop(process)
    assert process.returncode == 130, stderr.decode()
    assert "trial 1 interrupted" in stderr.decode()
    first = study_trials(folder)
    assert states(first) == ["COMPLETE", "FAIL"]
    finished = (folder / "trials" / "0000" / "metrics.json").read_bytes()
    result = run_cli(*args[:2], "--trials", "2")  # `easyfirst tune STUDY` goes on
    assert result.returncode == 0, result.stderr.decode()
    trials = study_trials(folder)
    assert states(trials) == ["COMPLETE", "FAIL", "COMPLETE"]
    assert trials[2].user_attrs["retry_of"] == 1 and trials[2].params == first[1].params
    assert (folder / "trials" / "0000" / "metrics.json").read_bytes() == finished


INTERRUPTED_WRITE = """
import os, runpy, signal, sys, time
from optuna.storages import RDBStorage

write = RDBStorage.set_trial_intermediate_value

def interrupted_write(self, trial_id, step, value):
    if self.get_trial_number_from_id(trial_id) == 1:  # Ctrl-C as trial 1 reports its first epoch
        signal.raise_signal(signal.SIGINT)
        time.sleep(0.05)
    write(self, trial_id, step, value)

RDBStorage.set_trial_intermediate_value = interrupted_write
sys.argv = ["easyfirst", *sys.argv[1:]]
runpy.run_module("easyfirst", run_name="__main__")
"""


def test_an_interrupt_during_a_write_to_the_study_waits_for_the_write(tmp_path):
    """Ctrl-C inside Optuna's storage code, which a KeyboardInterrupt there can leave holding a lock
    (CI saw `tune` hang after "trial 1 interrupted"): the write ends, then the trial is interrupted."""
    space, folder = tmp_path / "space.toml", tmp_path / "study"
    space.write_text(SPACE)
    args = tune_args(folder, space, "--epochs", 3, "--trials", 3, "--pruner", "none")
    process = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_WRITE, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        _, stderr = process.communicate(timeout=120)
    finally:
        stop(process)
    assert process.returncode == 130, stderr.decode()
    assert "trial 1 interrupted" in stderr.decode()
    trials = study_trials(folder)
    assert states(trials) == ["COMPLETE", "FAIL"]
    assert list(trials[1].intermediate_values) == [1]  # the write was not cut


def test_two_processes_share_one_study(tmp_path):
    space, folder = tmp_path / "space.toml", tmp_path / "study"
    space.write_text(SPACE)
    args = tune_args(folder, space, "--epochs", 4, "--trials", 6, "--pruner", "none")
    processes = [start(args), start(args)]
    try:
        errors = [p.communicate(timeout=300)[1].decode() for p in processes]
    finally:
        for p in processes:
            stop(p)
    assert [p.returncode for p in processes] == [0, 0], errors
    trials = study_trials(folder)
    assert 6 <= len(trials) <= 7 and set(states(trials)) == {"COMPLETE"}  # each may finish one running
    assert len({t.user_attrs["process"] for t in trials}) == 2  # both ran trials
    folders = sorted(p.name for p in (folder / "trials").iterdir())
    assert folders == [f"{t.number:04d}" for t in trials]
    started = [line for e in errors for line in e.splitlines() if " started:" in line]
    assert len(started) == len(trials)  # no trial run twice


@pytest.mark.parametrize("task, data", [("ner", (NER_SAMPLE, NER_SAMPLE)), ("qe", (QE_SAMPLE, QE_SAMPLE))])
def test_every_task_can_be_tuned(tmp_path, task, data):
    space = tmp_path / "space.toml"
    space.write_text("[model]\nhidden_dim = { choices = [8, 16] }\n[train]\nbatch_size = 8\n")
    args = tune_args(tmp_path / "study", space, "--epochs", 1, "--trials", 2, data=data)
    args[args.index("pos")] = task
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr.decode()
    label = {"ner": "dev F1", "qe": "dev F1-MULT"}[task]
    assert result.stderr.decode().count(f"finished: {label}") == 2


def test_a_bilstm_study_leaves_the_decoder_keys_of_its_space_out(tmp_path):
    """One space for NEF and the BiLSTM baseline (issue #44's study): the sketch steps and the attention
    are not searched for a BiLSTM, which has neither, and the log says so."""
    space = tmp_path / "space.toml"
    space.write_text(
        "[model]\nhidden_dim = { choices = [8, 16] }\nsketch_steps = { low = 2, high = 8 }\n"
        "attention_temperature = { low = 0.1, high = 1.0, log = true }\n[train]\nbatch_size = 8\n"
    )
    folder = tmp_path / "study"
    result = run_cli(*tune_args(folder, space, "--epochs", 1, "--trials", 1, "--set", 'model.model="bilstm"'))
    assert result.returncode == 0, result.stderr.decode()
    said = " ".join(result.stderr.decode().split())
    assert (
        "not searched (a BiLSTM has no sketch decoder): model.sketch_steps, model.attention_temperature"
        in said
    )
    (trial,) = study_trials(folder)
    assert list(trial.params) == ["model.hidden_dim"]
    only_decoder = tmp_path / "decoder.toml"
    only_decoder.write_text("[model]\nsketch_steps = { low = 2, high = 8 }\n")
    refused = run_cli(*tune_args(tmp_path / "other", only_decoder, "--set", 'model.model="bilstm"'))
    assert refused.returncode == 2 and "has none of the keys searched" in refused.stderr.decode()


def test_two_objectives_keep_the_pareto_front_of_score_and_sharpness(tmp_path):
    space = tmp_path / "space.toml"
    space.write_text(
        "[model]\nattention_temperature = { low = 0.1, high = 1.0, log = true }\n[train]\nbatch_size = 8\n"
    )
    folder = tmp_path / "study"
    args = tune_args(folder, space, "--epochs", 1, "--trials", 3, "--objectives", "score,sharpness")
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr.decode()
    trials = study_trials(folder)
    assert states(trials) == ["COMPLETE"] * 3 and all(len(t.values) == 2 for t in trials)
    analyzed = run_cli("analyze", SAMPLE, "-m", folder / "trials" / "0001", "--json")
    assert analyzed.returncode == 0, analyzed.stderr.decode()
    sharpness = json.loads(analyzed.stdout)["sharpness"]["max_weight_first_half"]
    assert trials[1].values[1] == pytest.approx(sharpness)
    assert "Pareto-optimal trials" in result.stderr.decode()
    assert (folder / "pareto.png").stat().st_size > 10_000


def test_the_trial_of_a_killed_process_on_another_machine_is_run_again(tmp_path, monkeypatch):
    """kill -9 leaves a trial "running"; one of another machine's process (its lock names another host:
    tests/tuning/test_tune_killed.py has this machine's) is closed once its heartbeat is stale (3 × the
    interval; shortened here to 3 s), and the next call runs it again."""
    from easyfirst.tuning import study as studies

    space, folder = tmp_path / "space.toml", tmp_path / "study"
    space.write_text(SPACE)
    args = tune_args(folder, space, "--epochs", 12, "--trials", 2, "--pruner", "none")
    process = start(args)
    try:
        log = folder / "trials" / "0001" / "train.log"
        deadline = time.monotonic() + 240
        while not (log.is_file() and "epoch   1" in log.read_text()) and time.monotonic() < deadline:
            time.sleep(0.02)
        process.kill()
    finally:
        stop(process)
    assert states(study_trials(folder)) == ["COMPLETE", "RUNNING"]
    lost = study_trials(folder)[1]
    optuna.storages.RDBStorage(f"sqlite:///{folder / 'study.db'}").set_trial_user_attr(
        lost._trial_id, "lock", "another-machine/1234-1"
    )
    monkeypatch.setattr(studies, "HEARTBEAT_SECONDS", 1)
    time.sleep(4)
    in_process(args[:2] + ["--trials", "2"])
    trials = study_trials(folder)
    assert states(trials) == ["COMPLETE", "FAIL", "COMPLETE"]
    assert trials[2].user_attrs["retry_of"] == 1 and trials[2].params == trials[1].params
