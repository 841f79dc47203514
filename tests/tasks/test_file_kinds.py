"""Each kind of file given to each kind of model, by ``tag``, ``evaluate`` and ``train``: a model reads
its own kind (and ``tag`` plain text), and refuses every other kind in one line that says what the file
looks like and what the model reads, with exit status 2. None is read as something it is not: a
CoNLL-U file without comment lines given to an NER model was once read as a column file whose words
were the ids 1, 2, 3 (every tag ``O``, status 0)."""

from __future__ import annotations

from pathlib import Path

import pytest

import easyfirst.parallel.cores as cores
from conftest import NER_SAMPLE, QE_SAMPLE, SAMPLE, run_cli

RANGES = (  # no comment line; the first sentence has a multiword token and an empty node
    "1-2\tShe's\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tShe\tshe\tPRON\tPRP\t_\t_\t_\t_\t_\n"
    "2\t's\tbe\tAUX\tVBZ\t_\t_\t_\t_\t_\n"
    "2.1\tgone\tgo\tVERB\tVBN\t_\t_\t_\t_\t_\n"
    "3\there\there\tADV\tRB\t_\t_\t_\t_\t_\n"
    "4\t.\t.\tPUNCT\t.\t_\t_\t_\t_\t_\n"
    "\n"
)
POS_COLUMNS = "The\tDT\ncat\tNN\nsleeps\tVBZ\n.\t.\n\nA\tDT\ndog\tNN\n.\t.\n"
TEXT = "The cat sleeps on the mat. A dog barks.\n"
TINY = ("--epochs", 1, "--hidden-dim", 8, "--threads", 1)
TRAIN = {"pos": SAMPLE, "ner": NER_SAMPLE, "qe": QE_SAMPLE}

OK, LOOKS = "ok", "looks"  # read, or refused saying what the file looks like
# (file kind, model kind) → (tag, evaluate, train), written out by hand: what each should do
EXPECTED = {
    ("conllu", "pos"): (OK, OK, OK),
    ("conllu", "ner"): (LOOKS, LOOKS, LOOKS),
    ("conllu", "qe"): (LOOKS, LOOKS, LOOKS),
    ("conllu-bare", "pos"): (OK, OK, OK),
    ("conllu-bare", "ner"): (LOOKS, LOOKS, LOOKS),
    ("conllu-bare", "qe"): (LOOKS, LOOKS, LOOKS),
    ("conllu-ranges", "pos"): (OK, OK, OK),
    ("conllu-ranges", "ner"): (LOOKS, LOOKS, LOOKS),
    ("conllu-ranges", "qe"): (LOOKS, LOOKS, LOOKS),
    ("ner-columns", "pos"): (LOOKS, LOOKS, LOOKS),
    ("ner-columns", "ner"): (OK, OK, OK),
    ("ner-columns", "qe"): (LOOKS, LOOKS, LOOKS),
    ("pos-columns", "pos"): (LOOKS, LOOKS, LOOKS),
    # a column file is an NER model's kind: tagged; its tags (DT, NN) are not entity tags, said so
    ("pos-columns", "ner"): (OK, "tag 'DT' is not O", "tag 'DT' is not O"),
    ("pos-columns", "qe"): (LOOKS, LOOKS, LOOKS),
    ("qe", "pos"): ("QE input needs a qe model", "names a QE data set", "train file not found"),
    ("qe", "ner"): ("QE input needs a qe model", "names a QE data set", "train file not found"),
    ("qe", "qe"): (OK, OK, OK),
    ("text", "pos"): (OK, LOOKS, LOOKS),  # tag reads plain text (tokenized); scoring needs gold tags
    ("text", "ner"): (OK, LOOKS, LOOKS),
    ("text", "qe"): (LOOKS, LOOKS, LOOKS),
}
KINDS = {  # what the refusal says a file looks like
    "conllu": "looks like CoNLL-U",
    "conllu-bare": "looks like CoNLL-U",
    "conllu-ranges": "looks like CoNLL-U",
    "ner-columns": "looks like a CoNLL column file",
    "pos-columns": "looks like a CoNLL column file",
    "text": "looks like plain text",
}
READS = {"pos": "reads CoNLL-U", "ner": "reads CoNLL column files", "qe": ("QE data set", "sentence pairs")}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("kinds")
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(True)
    written = {
        "conllu-bare": "".join(line for line in lines if not line.startswith("#")),
        "conllu-ranges": RANGES + RANGES,
        "pos-columns": POS_COLUMNS,
        "text": TEXT,
    }
    for kind, content in written.items():
        (folder / kind).write_text(content, encoding="utf-8")
    return {"conllu": SAMPLE, "ner-columns": NER_SAMPLE, "qe": QE_SAMPLE} | {k: folder / k for k in written}


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """A tiny model of each kind: one epoch of 8 units on its sample."""
    folder = tmp_path_factory.mktemp("models")
    found = {}
    for task, sample in TRAIN.items():
        out = folder / task
        result = run_cli("train", "--task", task, "--train", sample, "--dev", sample, *TINY, "-o", out)
        assert result.returncode == 0, result.stderr.decode()
        found[task] = out
    return found


@pytest.fixture(autouse=True)
def one_core(monkeypatch):
    """``tag`` on one core: no reader forked in the test's process (tests/verbs.py)."""
    monkeypatch.setattr(cores, "available_cores", lambda: 1)


@pytest.mark.parametrize(("kind", "task"), sorted(EXPECTED))
def test_each_file_kind_given_to_each_model_kind(kind, task, files, models, tmp_path):
    path = files[kind]
    outcomes = {
        "tag": run_cli("tag", path, "-m", models[task], "-o", tmp_path / "tagged"),
        "evaluate": run_cli("evaluate", path, "-m", models[task]),
        "train": run_cli(
            "train", "--task", task, "--train", path, "--dev", path, *TINY, "-o", tmp_path / "run"
        ),
    }
    for (verb, result), expected in zip(outcomes.items(), EXPECTED[kind, task], strict=True):
        stderr = result.stderr.decode()
        assert "Traceback" not in stderr, (verb, stderr)
        if expected == OK:
            assert result.returncode == 0, (verb, stderr)
            continue
        assert result.returncode == 2, (verb, result.returncode, stderr)
        lines = stderr.strip().splitlines()
        assert len(lines) == 1, (verb, stderr)
        assert str(path) in lines[0] or str(models[task]) in lines[0], (verb, lines[0])  # or the model
        if expected == LOOKS:
            reads = READS[task] if isinstance(READS[task], tuple) else (READS[task],)
            assert KINDS[kind] in lines[0] and any(r in lines[0] for r in reads), (verb, lines[0])
        else:
            assert expected in lines[0], (verb, lines[0])
    refused = [verb for verb, expected in zip(outcomes, EXPECTED[kind, task], strict=True) if expected != OK]
    if "tag" in refused:
        assert not (tmp_path / "tagged").exists()  # nothing half-written
    if "train" in refused:
        assert not (tmp_path / "run").exists()
