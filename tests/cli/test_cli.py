"""The command line end to end on the self-written sample: train, tag, evaluate, and user errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import SAMPLE, run_cli, said, started, train_on_sample

run = run_cli


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A tiny NEF-F model trained for 3 epochs on the sample (train = dev = test)."""
    out = tmp_path_factory.mktemp("run") / "nef"
    result = train_on_sample(out)
    assert result.returncode == 0, result.stderr.decode()
    return out


def test_train_writes_a_complete_run_folder(run_dir):
    for name in ("model.pt", "config.json", "vocab.json", "metrics.json", "train.log"):
        assert (run_dir / name).is_file(), name
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert 0.0 <= metrics["dev"]["accuracy"] <= 1.0 and 0.0 <= metrics["test"]["accuracy"] <= 1.0
    assert len(metrics["epochs"]) == 3 and 1 <= metrics["best_epoch"] <= 3
    # the model file is tensors only: it loads with weights_only=True
    state = torch.load(run_dir / "model.pt", weights_only=True)
    assert all(isinstance(v, torch.Tensor) for v in state.values())
    config = json.loads((run_dir / "config.json").read_text())
    assert config["model"]["model"] == "nef-f" and config["model"]["attention"] == "csoftmax"
    assert "epoch" in (run_dir / "train.log").read_text()


def test_training_twice_with_one_seed_gives_identical_metrics(run_dir, tmp_path):
    again = tmp_path / "again"
    result = train_on_sample(again)
    assert result.returncode == 0, result.stderr.decode()
    first = json.loads((run_dir / "metrics.json").read_text())
    second = json.loads((again / "metrics.json").read_text())
    assert [e["loss"] for e in first["epochs"]] == [e["loss"] for e in second["epochs"]]
    assert first["test"] == second["test"]


def test_tag_changes_only_the_upos_column(run_dir, tmp_path):
    out = tmp_path / "tagged.conllu"
    result = run("tag", str(SAMPLE), "-m", str(run_dir), "-o", str(out), process=True)
    assert result.returncode == 0, result.stderr.decode()
    assert said(result.stderr) == f"wrote {out}\n"  # what it wrote, as plot and export say theirs
    before = SAMPLE.read_bytes().split(b"\n")
    after = out.read_bytes().split(b"\n")
    assert len(before) == len(after)
    tagged = 0
    for old, new in zip(before, after, strict=True):
        old_cols, new_cols = old.split(b"\t"), new.split(b"\t")
        if len(old_cols) == 10 and old_cols[0].isdigit():
            assert old_cols[:3] + old_cols[4:] == new_cols[:3] + new_cols[4:]
            assert new_cols[3] not in (b"", b"_")
            tagged += 1
        else:
            assert old == new
    assert tagged > 50


def test_tag_reads_stdin_and_writes_stdout(run_dir):
    result = run("tag", "-", "-m", str(run_dir), input=SAMPLE.read_bytes(), process=True)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.count(b"\n") == SAMPLE.read_bytes().count(b"\n")


def test_tag_says_it_reads_stdin_only_when_stdin_is_a_terminal():
    """`easyfirst tag` typed alone waited in silence: on a terminal it now says what it waits for."""
    import os

    primary, secondary = os.openpty()
    try:
        with started(
            [sys.executable, "-m", "easyfirst", "tag"],
            stdin=secondary,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "COLUMNS": "120"},
        ) as child:
            os.write(primary, b"She reads a book.\n\x04")  # a line, then Ctrl-D at the start of the next
            out, err = child.communicate(timeout=300)
    finally:
        os.close(primary)
        os.close(secondary)
    assert child.returncode == 0, err.decode()
    assert said(err) == "reading from stdin (Ctrl-D to end)\n"
    assert b"\treads\t" in out  # tagged as CoNLL-U
    piped = run("tag", input=b"She reads a book.\n")  # a pipe: nothing to say
    assert piped.returncode == 0 and b"reading from stdin" not in piped.stderr


def test_tag_text(run_dir):
    result = run("tag", "--text", "The dog barks .", "-m", str(run_dir))
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().splitlines()
    assert [line.split("\t")[0] for line in lines] == ["The", "dog", "barks", "."]


def test_evaluate_json_agrees_with_metrics_file(run_dir):
    result = run("evaluate", str(SAMPLE), "-m", str(run_dir), "--json")
    assert result.returncode == 0, result.stderr.decode()
    report = json.loads(result.stdout)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert report["accuracy"] == pytest.approx(metrics["test"]["accuracy"])
    assert sum(row["support"] for row in report["per_tag"].values()) == report["tokens"]


def test_evaluate_prints_a_table(run_dir):
    result = run("evaluate", str(SAMPLE), "-m", str(run_dir))
    assert result.returncode == 0
    text = result.stdout.decode()
    assert "accuracy" in text and "NOUN" in text and "precision" in text


@pytest.mark.parametrize(
    "args, expected",
    [
        (["tag", "missing.conllu"], "missing.conllu: no such file"),
        (["tag", ""], "the name is empty (an unset shell variable?)"),
        # a path argument or option given "" (Typer would read it as ".", the current folder)
        (["evaluate", ""], "gold: the name is empty (an unset shell variable?)"),
        (["tag", "--text", "a b", "-m", ""], "--model: the name is empty"),
        (["tag", "--text", "a b", "-o", ""], "--output: the name is empty"),
        (["export", "", "out"], "run_dir: the name is empty"),
        (["train", "--resume", ""], "--resume: the name is empty"),
        (["evaluate", "missing.conllu"], "missing.conllu: no such file"),
        (["tag", "--text", "a b", "-m", "no-such-run"], "no-such-run: model folder not found"),
        (["train", "--task", "chess"], "--task must be one of"),
        (["train", "--sketch-steps", "many"], "--sketch-steps must be"),
        (["train", "--attention", "magic"], "attention must be one of"),
    ],
)
def test_user_errors_are_one_line_with_exit_status_2(args, expected, tmp_path):
    result = run(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr.decode()
    stderr = result.stderr.decode()
    assert expected in stderr
    assert "Traceback" not in stderr


def test_malformed_input_names_file_and_line_and_writes_nothing(run_dir, tmp_path):
    bad = tmp_path / "bad.conllu"
    bad.write_text("# text = a b\n1\ta\ta\tX\t_\t_\t0\troot\t_\t_\n2\tb\tb\tX\t_\n\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    result = run("tag", str(bad), "-m", str(run_dir), "-o", str(out), process=True)
    assert result.returncode == 2
    assert f"{bad}:3:" in result.stderr.decode()
    assert not out.exists() and list(tmp_path.iterdir()) == [bad]


def test_train_refuses_to_overwrite_a_model(run_dir):
    result = run(
        "train", "--train", str(SAMPLE), "--dev", str(SAMPLE), "--epochs", "1", "--output", str(run_dir)
    )
    assert result.returncode == 2 and "--overwrite" in result.stderr.decode()


@pytest.mark.realdata
def test_bundled_model_round_trips_a_real_treebank_file(ewt, tmp_path):
    """EWT test, full of multiword tokens: every byte but the UPOS of words survives tagging."""
    out = tmp_path / "tagged.conllu"
    result = run("tag", str(ewt["test"]), "-o", str(out), process=True)
    assert result.returncode == 0, result.stderr.decode()
    before, after = ewt["test"].read_bytes().split(b"\n"), out.read_bytes().split(b"\n")
    assert len(before) == len(after)
    same = words = 0
    for old, new in zip(before, after, strict=True):
        cols_old, cols_new = old.split(b"\t"), new.split(b"\t")
        if len(cols_old) == 10 and cols_old[0].isdigit():
            assert cols_old[:3] + cols_old[4:] == cols_new[:3] + cols_new[4:]
            words += 1
            same += cols_old[3] == cols_new[3]
        else:
            assert old == new
    assert words == 25094
    assert same / words > 0.93  # the bundled model's accuracy (README) is measured by `evaluate`


@pytest.mark.realdata
def test_bundled_model_accuracy_on_ewt_test(ewt):
    result = run("evaluate", str(ewt["test"]), "--json", process=True)
    assert result.returncode == 0, result.stderr.decode()
    report = json.loads(result.stdout)
    assert report["tokens"] == 25094
    assert report["accuracy"] >= 0.94


@pytest.mark.parametrize(
    "extra, noted",
    [
        (["--batch-size", "4"], True),  # the pos defaults' summed loss and file order kept: said
        (["--batch-size", "4", "--reduction", "mean"], False),  # the user chose the regime
    ],
)
def test_a_batch_size_alone_on_pos_notes_the_summed_loss_and_file_order(extra, noted, tmp_path):
    result = train_on_sample(tmp_path / "run", "--model", "bilstm", *extra, epochs=1)
    assert result.returncode == 0, result.stderr.decode()
    stderr = result.stderr.decode()
    assert ("note: 4 sentences per update with the loss summed" in stderr) == noted, stderr


@pytest.mark.parametrize("args, status", [(["--version"], 0), (["tag", "missing.conllu"], 2)])
def test_the_command_leaves_through_pythons_exit_with_atexit_its_status_and_no_late_signal(
    args, status, tmp_path
):
    """`easyfirst` (easyfirst.cli.run) leaves through Python's own exit: the atexit functions run and
    what they print reaches stdout; a Ctrl-C during the exit, in an atexit function or in the
    teardown (where Python has put SIGINT's default back: ``late``'s ``__del__``), cuts nothing and
    leaves the status as it was."""
    script = (
        "import atexit, os, signal, sys\n"
        "def interrupt(kill=os.kill, pid=os.getpid(), sig=signal.SIGINT):\n"
        "    kill(pid, sig)\n"
        "class Late:\n"
        "    def __del__(self, interrupt=interrupt):\n"
        "        interrupt()\n"
        "late = Late()\n"
        "atexit.register(lambda: (interrupt(), print('atexit ran')))\n"
        "from easyfirst.cli import run\n"
        "sys.argv = ['easyfirst', *sys.argv[1:]]\n"
        "run()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == status, done.stderr
    assert done.stdout.endswith("atexit ran\n")


def test_an_interrupt_inside_a_string_exec_is_still_the_signals_status_under_python_m(tmp_path):
    """SIGTERM raised as KeyboardInterrupt inside a string ``exec`` (as in dataclasses' generated methods
    or Typer's evaluated annotations, where tests/training/test_robustness.py's interrupts landed):
    status 143 and "interrupted" under ``python -m``, where CPython would otherwise take that
    interrupt, handled since, for an unhandled one and kill itself with SIGINT after the exit (-2)."""
    (tmp_path / "probe.py").write_text(
        "from easyfirst.cli.app import app, run\n"
        "@app.command()\n"
        "def probe() -> None:\n"
        "    exec('import signal; signal.raise_signal(signal.SIGTERM)', {})\n"
        "if __name__ == '__main__':\n"
        "    run()\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "probe", "probe"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert (done.returncode, done.stderr) == (143, "interrupted\n")


def test_a_reader_that_left_is_status_1_without_a_complaint():
    """`easyfirst --version | head -0`: the reader closed the pipe before the command wrote; the flush
    fails, the status is 1 and nothing is said (no 'Exception ignored' from Python's exit)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "easyfirst", "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    child.stdout.close()  # before the interpreter has even started
    stderr = child.stderr.read().decode()
    child.stderr.close()
    assert child.wait(timeout=120) == 1, stderr
    assert stderr == ""


NO_MODEL_NEEDED = [
    (["--help"], 0, ""),
    (["--version"], 0, ""),
    *(
        ([verb, "--help"], 0, "")
        for verb in ("train", "tag", "evaluate", "plot", "analyze", "export", "data", "serve")
    ),
    (["train", "--attention", "nope"], 2, "model.attention must be one of csoftmax"),
    (["train", "--task", "pos", "--anneal-epochs", "3", "--attention", "uniform"], 2, "anneals learned"),
    (["tag", "missing.conllu"], 2, "missing.conllu: no such file"),
    (["tag", "--text", "a b", "--format", "html"], 2, "--format must be"),
    (["tag", "--text", "a b", "-m", "no-such-run"], 2, "no-such-run: model folder not found"),
    (["tag", "a.conllu", "b.conllu"], 2, "several inputs are written into a folder: give -o DIR"),
    (["tag", "--batch-size", "0", "--text", "a b"], 2, "--batch-size must be an integer >= 1, not 0"),
    (["evaluate", "missing.conllu"], 2, "missing.conllu: no such file"),
]


@pytest.mark.parametrize("args, status, said", NO_MODEL_NEEDED)
def test_help_version_and_errors_that_need_no_model_never_import_torch(args, status, said, tmp_path):
    """Importing torch is most of a command's start (docs/tagging.md, "Start-up"): what needs no model
    answers without it."""
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('torch imported:', 'torch' in sys.modules, file=sys.stderr))\n"
        "sys.argv = ['easyfirst', *sys.argv[1:]]\n"
        "from easyfirst.__main__ import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == status, done.stderr
    assert said in done.stderr
    assert done.stderr.endswith("torch imported: False\n"), done.stderr


@pytest.fixture
def three_inputs(tmp_path) -> list[Path]:
    """Three inputs from different folders: the sample, 40 of it (enough words for the read-ahead and
    the pool of processes) and plain text."""
    folders = [tmp_path / name for name in ("x", "y", "z")]
    for folder in folders:
        folder.mkdir()
    inputs = [folders[0] / "a.conllu", folders[1] / "b.conllu", folders[2] / "c.txt"]
    inputs[0].write_bytes(SAMPLE.read_bytes())
    inputs[1].write_bytes(SAMPLE.read_bytes() * 40)
    inputs[2].write_text("She reads a book. The dog barks at the mailman.\n\nA second paragraph.\n")
    return inputs


def test_many_inputs_are_written_as_each_alone_and_a_rerun_redoes_none(three_inputs, tmp_path):
    out = tmp_path / "out"
    result = run("tag", *three_inputs, "-o", out, process=True)
    assert result.returncode == 0, result.stderr.decode()
    assert said(result.stderr) == f"tagged 3 inputs into {out}\n"  # what it wrote; no bar off a terminal
    for path in three_inputs:
        alone = run("tag", path, process=True)
        assert alone.returncode == 0, alone.stderr.decode()
        assert (out / path.name).read_bytes() == alone.stdout, path.name
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in three_inputs)  # no temporary files

    written = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    again = run("tag", *three_inputs, "-o", out, process=True)
    assert again.returncode == 0, again.stderr.decode()
    assert again.stderr.decode() == f"skipped 3 of 3 inputs: their output is in {out} already\n"
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == written


def test_a_bad_input_among_many_is_named_and_the_others_are_written(three_inputs, tmp_path):
    bad = tmp_path / "bad.conllu"
    bad.write_text("# text = a b\n1\ta\ta\tX\t_\t_\t0\troot\t_\t_\n2\tb\tb\tX\t_\n\n", encoding="utf-8")
    out = tmp_path / "out"
    result = run(
        "tag", three_inputs[0], bad, tmp_path / "missing.conllu", three_inputs[2], "-o", out, process=True
    )
    assert result.returncode == 2
    assert said(result.stderr).splitlines() == [
        f"{bad}:3: expected 10 tab-separated columns, found 5",
        f"{tmp_path / 'missing.conllu'}: no such file",
        f"2 of 4 inputs failed (above); 2 tagged into {out}",
    ]
    assert sorted(p.name for p in out.iterdir()) == ["a.conllu", "c.txt"]
    # the rerun tags the one that was mended, and only it
    bad.write_bytes(SAMPLE.read_bytes())
    again = run("tag", three_inputs[0], bad, three_inputs[2], "-o", out, process=True)
    assert again.returncode == 0, again.stderr.decode()
    assert said(again.stderr) == (
        f"skipped 2 of 3 inputs: their output is in {out} already\ntagged 1 input into {out}\n"
    )
    assert (out / "bad.conllu").read_bytes() == (out / "a.conllu").read_bytes()


def test_a_folder_is_its_files_and_a_name_clash_is_refused_before_tagging(three_inputs, tmp_path):
    out = tmp_path / "out"
    (three_inputs[0].parent / ".hidden").write_text("not an input")
    result = run("tag", three_inputs[0].parent, three_inputs[1], "-o", out, process=True)
    assert result.returncode == 0, result.stderr.decode()
    assert sorted(p.name for p in out.iterdir()) == ["a.conllu", "b.conllu"]

    twin = three_inputs[1].parent / "a.conllu"
    twin.write_bytes(SAMPLE.read_bytes())
    clash = run("tag", three_inputs[0], twin, "-o", tmp_path / "other")
    assert clash.returncode == 2
    assert clash.stderr.decode() == (
        f"{three_inputs[0]} and {twin} would both be written to {tmp_path / 'other' / 'a.conllu'}: "
        "rename one, or tag them into different folders\n"
    )
    assert not (tmp_path / "other").exists()
    assert (
        run("tag", *three_inputs).stderr.decode() == "several inputs are written into a folder: give -o DIR\n"
    )


def test_the_progress_bar_counts_inputs_and_words_on_a_terminal_only(monkeypatch, tmp_path):
    import io

    from rich.console import Console

    import easyfirst.cli.tag as tag_verb
    from easyfirst.tagging.corpus import Corpus

    corpus = Corpus(tmp_path, [(str(SAMPLE), tmp_path / "a"), (str(SAMPLE), tmp_path / "b")])
    screen = io.StringIO()
    monkeypatch.setattr(tag_verb, "err", Console(file=screen, force_terminal=True, width=120))
    with tag_verb.Progress.for_files(corpus) as progress:
        for _ in corpus.todo:
            progress.words(1200)
            progress.words(34)
            progress.done()
    shown = screen.getvalue()
    assert "2/2 files" in shown and "2,468 words" in shown

    log = io.StringIO()
    monkeypatch.setattr(tag_verb, "err", Console(file=log, force_terminal=False))
    with tag_verb.Progress.for_files(corpus) as progress:
        progress.words(1234)
        progress.done()
    assert log.getvalue() == ""
