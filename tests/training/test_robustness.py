"""Interrupted training resumes to the same result; numerical failures stop cleanly; odd but valid input
works; unwritable outputs are user errors. (Malformed files: test_conllu.py and test_cli.py; malicious
model files: test_api.py.)"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from verbs import easyfirst

from conftest import SAMPLE, run_cli, started, train_on_sample

TIMING = ("seconds", "eval_seconds", "tokens_per_second", "seconds_per_epoch", "eval_seconds_per_epoch")


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "easyfirst", *args]


def comparable(metrics: dict) -> dict:
    """metrics.json without wall-clock timings."""
    metrics = {k: v for k, v in metrics.items() if k not in TIMING}
    metrics["epochs"] = [{k: v for k, v in row.items() if k not in TIMING} for row in metrics["epochs"]]
    return metrics


@pytest.fixture(scope="module")
def bigger_sample(tmp_path_factory):
    """The sample 20 times over: 500 sentences, enough for 125 updates per epoch."""
    path = tmp_path_factory.mktemp("data") / "train.conllu"
    path.write_bytes(SAMPLE.read_bytes() * 20)
    return path


def train_args(train, output, *extra):
    return (
        "train",
        "--train",
        str(train),
        "--dev",
        str(SAMPLE),
        "--test",
        str(SAMPLE),
        "--epochs",
        "3",
        "--batch-size",
        "4",
        "--seed",
        "7",
        "--threads",
        "1",
        "--output",
        str(output),
        *extra,
    )


@pytest.fixture(scope="module")
def straight_run(bigger_sample, tmp_path_factory) -> Path:
    """The uninterrupted run that both ways of checkpointing are compared with (one training for both)."""
    straight = tmp_path_factory.mktemp("straight") / "run"
    done = run_cli(*train_args(bigger_sample, straight), timeout=600, process=True)
    assert done.returncode == 0, done.stderr.decode()
    return straight


@pytest.mark.slow
@pytest.mark.parametrize("every", [("--checkpoint-every", "10"), ("--checkpoint-minutes", "0.002")])
def test_sigkill_mid_epoch_then_resume_gives_the_uninterrupted_result(
    bigger_sample, straight_run, tmp_path, every
):
    straight = straight_run
    interrupted = tmp_path / "interrupted"
    with started(
        command(*train_args(bigger_sample, interrupted, *every)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as process:
        checkpoint = interrupted / "checkpoint.pt"
        deadline = time.monotonic() + 300
        while not checkpoint.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
        first = None
        while time.monotonic() < deadline and process.poll() is None:  # wait for a later, mid-epoch one
            state = torch.load(checkpoint, weights_only=True)
            if first is None:
                first = (state["epoch"], state["step"])
            elif (state["epoch"], state["step"]) != first and state["step"] > 0:
                break
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert process.returncode == -signal.SIGKILL, "training finished before it could be interrupted"
    state = torch.load(checkpoint, weights_only=True)
    assert state["step"] > 0, "the interruption must fall inside an epoch"
    assert not (interrupted / "metrics.json").exists()

    resumed = run_cli("train", "--resume", str(interrupted), timeout=600, process=True)
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert "resuming from" in (interrupted / "train.log").read_text()
    a = json.loads((straight / "metrics.json").read_text())
    b = json.loads((interrupted / "metrics.json").read_text())
    assert comparable(a) | {"data": None} == comparable(b) | {"data": None}
    same = [
        torch.equal(x, y)
        for x, y in zip(
            torch.load(straight / "model.pt", weights_only=True).values(),
            torch.load(interrupted / "model.pt", weights_only=True).values(),
            strict=True,
        )
    ]
    assert all(same)


def test_a_finished_run_trained_on_with_more_epochs_is_a_run_of_that_many(tmp_path):
    """`train --resume RUN --epochs 3` after a 2-epoch run gives the 3-epoch run's metrics and weights,
    byte for byte (the English NER recipe's 50-epoch rows were trained on so from 30, issue #44)."""
    straight, extended = tmp_path / "straight", tmp_path / "extended"
    done = run_cli(*train_args(SAMPLE, straight), timeout=600)
    assert done.returncode == 0, done.stderr.decode()
    first = run_cli(*train_args(SAMPLE, extended, "--epochs", "2"), timeout=600)
    assert first.returncode == 0, first.stderr.decode()
    assert len(json.loads((extended / "metrics.json").read_text())["epochs"]) == 2
    more = run_cli("train", "--resume", str(extended), "--epochs", "3", timeout=600)
    assert more.returncode == 0, more.stderr.decode()
    a = json.loads((straight / "metrics.json").read_text())
    b = json.loads((extended / "metrics.json").read_text())
    assert len(b["epochs"]) == 3 and comparable(a) | {"data": None} == comparable(b) | {"data": None}
    assert (straight / "model.pt").read_bytes() == (extended / "model.pt").read_bytes()


def test_resume_refuses_other_options_and_missing_checkpoints(tmp_path):
    code, _, stderr = easyfirst("train", "--resume", str(tmp_path), "--lr", "0.5")  # in this process
    assert code == 2 and "--lr cannot be given" in stderr
    (tmp_path / "config.json").write_text(json.dumps({"train": {"epochs": 2}}))
    (tmp_path / "vocab.json").write_text("{}")
    code, _, stderr = easyfirst("train", "--resume", str(tmp_path))
    assert code == 2 and "no checkpoint to resume from" in stderr


def test_a_diverging_run_stops_with_epoch_and_step_and_keeps_its_checkpoint(tmp_path):
    config = tmp_path / "diverge.toml"
    config.write_text(
        '[train]\noptimizer = "sgd"\nlr = 1e30\nclip = 1e30\nbatch_size = 2\ncheckpoint_every = 1\n'
    )
    out = tmp_path / "run"
    result = train_on_sample(out, "--config", config, epochs=2)
    stderr = result.stderr.decode()
    assert result.returncode == 1, stderr
    assert "training stopped" in stderr and "at epoch 1, step" in stderr and "Traceback" not in stderr
    state = torch.load(out / "checkpoint.pt", weights_only=True)
    assert all(torch.isfinite(v).all() for v in state["model"].values()), "a bad update was checkpointed"


def test_unwritable_output_is_a_user_error_and_leaves_nothing(tmp_path):
    result = run_cli("tag", str(SAMPLE), "-o", str(tmp_path / "no" / "such" / "out.conllu"))
    assert result.returncode == 2 and b"folder does not exist" in result.stderr
    result = run_cli("tag", str(SAMPLE), "-o", str(tmp_path))
    assert result.returncode == 2 and b"Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny") / "run"
    result = train_on_sample(out, epochs=1)
    assert result.returncode == 0, result.stderr.decode()
    return out


def test_one_word_and_thousand_word_sentences_tag(tiny_run, tmp_path):
    words = [f"w{i % 37}" for i in range(1000)]
    lines = ["1\tHello\t_\t_\t_\t_\t_\t_\t_\t_", ""]
    lines += [f"{i}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_" for i, w in enumerate(words, 1)] + [""]
    path = tmp_path / "odd.conllu"
    path.write_text("\n".join(lines) + "\n")
    result = run_cli("tag", str(path), "-m", str(tiny_run), process=True)
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode().split("\n")
    assert len(out) == len(lines) + 1 and all(line.split("\t")[3] != "_" for line in out if "\t" in line)


def test_tags_the_model_never_saw_are_reported_not_fatal(tiny_run, tmp_path):
    gold = tmp_path / "gold.conllu"
    gold.write_text("1\tZorp\t_\tMADEUP\t_\t_\t_\t_\t_\t_\n2\tdog\t_\tNOUN\t_\t_\t_\t_\t_\t_\n\n")
    result = run_cli("evaluate", str(gold), "-m", str(tiny_run))
    assert result.returncode == 0
    assert b"never saw" in result.stderr and b"MADEUP (1)" in result.stderr


def test_empty_input_gives_empty_output(tiny_run, tmp_path):
    empty = tmp_path / "empty.conllu"
    empty.write_bytes(b"")
    out = tmp_path / "out.conllu"
    result = run_cli("tag", str(empty), "-m", str(tiny_run), "-o", str(out), process=True)
    assert result.returncode == 0 and out.read_bytes() == b""


def test_same_seed_gives_identical_tags(tmp_path):
    outputs = []
    for name in ("a", "b"):
        run = tmp_path / name
        result = train_on_sample(run, epochs=2, seed=5)
        assert result.returncode == 0, result.stderr.decode()
        outputs.append(run_cli("tag", str(SAMPLE), "-m", str(run), process=True).stdout)
    assert outputs[0] == outputs[1] and outputs[0]


def test_a_data_error_leaves_no_run_folder_behind(tmp_path):
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tdog\n")
    out = tmp_path / "run"
    result = run_cli("train", "--train", bad, "--dev", bad, "--epochs", "1", "--output", out)
    assert result.returncode == 2 and b"bad.conllu:1:" in result.stderr
    assert not out.exists()


def interrupt(args: list[str], ready, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``easyfirst ARGS``, press Ctrl-C (SIGINT) once ``ready()`` holds, and wait for it to end."""
    with started(command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        deadline = time.monotonic() + timeout
        while not ready() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.poll() is None, "the command ended before it could be interrupted"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=timeout)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_ctrl_c_while_training_says_how_to_resume(tmp_path):
    run = tmp_path / "run"
    args = list(train_args(SAMPLE, run))  # 200 epochs of the sample: interrupted after its second
    args[args.index("--epochs") + 1] = "200"
    log = run / "train.log"
    done = interrupt(args, lambda: log.is_file() and "epoch   2" in log.read_text())
    assert done.returncode == 130
    kept, last = done.stderr.decode().strip().splitlines()[-2:]
    assert last == f"interrupted; continue from the last checkpoint with: easyfirst train --resume {run}"
    assert re.fullmatch(
        r"kept: the checkpoint at (the end of epoch \d+|epoch \d+, update [\d,]+) and the best model so far "
        r"\(epoch \d+\); lost: the [\d.]+ s of training since it",
        kept,
    ), kept
    assert (run / "checkpoint.pt").is_file() and not (run / "metrics.json").exists()


def test_ctrl_c_while_tagging_writes_nothing_and_says_so(tmp_path):
    big = tmp_path / "big.conllu"
    big.write_bytes(SAMPLE.read_bytes() * 1000)  # about 200,000 words: seconds of tagging
    out = tmp_path / "out.conllu"
    started = time.monotonic()
    done = interrupt(["tag", str(big), "-o", str(out)], lambda: time.monotonic() - started > 2.5)
    assert done.returncode == 130 and done.stderr.decode() == "interrupted\n"
    assert list(tmp_path.iterdir()) == [big]  # no output, no temporary file left


def processes_naming(text: str) -> list[int]:
    """The processes whose command line holds ``text`` (a tag run's forked workers and reader have
    their parent's)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:  # it ended meanwhile
            pass
    return found


def catches(pid: int, sig: int) -> bool:
    """Whether process ``pid`` has a handler for ``sig`` (easyfirst's code has begun: its first act is
    to catch SIGINT and SIGTERM, before the interpreter's start nothing can)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(mask, 16) >> (sig - 1) & 1)


# (from when, seconds after, signal, all cores or "many" inputs): from easyfirst's start (the imports, the read-ahead's
# fork, loading the model, the pool's fork) and from the first write of the output (its windows; the
# pool's processes tagging, answering, being ended), each at a different moment of the run
MOMENTS = [
    ("start", 0.0, signal.SIGINT, True),
    ("start", 0.15, signal.SIGTERM, True),
    ("start", 0.3, signal.SIGINT, True),
    ("start", 0.5, signal.SIGINT, False),
    ("start", 0.7, signal.SIGTERM, True),
    ("writing", 0.0, signal.SIGINT, True),
    ("writing", 0.0, signal.SIGTERM, False),
    ("writing", 0.2, signal.SIGTERM, True),
    ("writing", 0.5, signal.SIGINT, True),
    ("writing", 1.0, signal.SIGINT, False),
    ("start", 0.4, signal.SIGINT, "many"),  # two inputs into a folder
    ("writing", 0.3, signal.SIGTERM, "many"),
    ("writing", 1.0, signal.SIGINT, "many"),
]


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
def test_an_interrupt_at_any_moment_of_a_tag_run_is_no_success_and_leaves_nothing(tmp_path):
    """SIGINT or SIGTERM at many moments of a run on 200,000 words, on one core and on all: exit 130
    or 143, "interrupted" alone on stderr (no traceback), no output or temporary file, no process
    left (the forked reader and workers ended and collected)."""
    big = tmp_path / "big.conllu"
    big.write_bytes(SAMPLE.read_bytes() * 1000)
    twin = tmp_path / "twin.conllu"
    twin.write_bytes(big.read_bytes())
    for number, (when, seconds, sig, every_core) in enumerate(MOMENTS):
        out = tmp_path / f"out{number}"
        out.mkdir()
        one_core = None if every_core else (lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}))
        inputs = [str(big), str(twin)] if every_core == "many" else [str(big)]
        with started(
            command("tag", *inputs, "-o", str(out if every_core == "many" else out / "big.conllu")),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=one_core,
        ) as process:
            while not catches(process.pid, signal.SIGTERM) and process.poll() is None:
                time.sleep(0.005)  # the interpreter's own start, before easyfirst's code runs
            while when == "writing" and not any(out.iterdir()) and process.poll() is None:
                time.sleep(0.005)  # the temporary output file appears once the model is loaded
            time.sleep(seconds)
            assert process.poll() is None, "the run ended before it could be interrupted"
            process.send_signal(sig)
            _, err = process.communicate(timeout=120)
            cores = {True: "every core", False: "one core", "many": "two inputs"}[every_core]
            moment = f"{sig.name} {seconds} s after {when}, {cores}"
            assert (process.returncode, err.decode()) == (128 + sig, "interrupted\n"), moment
            assert list(out.iterdir()) == [], moment
            assert processes_naming(str(out)) == [], moment
