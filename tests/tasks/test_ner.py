"""`easyfirst train --task ner`, `tag` and `evaluate` on CoNLL column files, end to end on the
self-written NER sample; the IOB1 Latin-1 round trip of the issue's acceptance; user errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import IOB1_LATIN1, NER_SAMPLE, SAMPLE, run_cli, said
from easyfirst.data import schemes


@pytest.fixture(scope="module")
def ner_run(tmp_path_factory) -> Path:
    """NEF-F (N = 5) with the NER features and the task's SGD, 8 epochs on the sample (train = dev =
    test): seconds."""
    out = tmp_path_factory.mktemp("ner") / "run"
    result = run_cli(
        "train", "--task", "ner", "--train", NER_SAMPLE, "--dev", NER_SAMPLE, "--test", NER_SAMPLE,
        "--epochs", 8, "--seed", 1, "--threads", 1, "--output", out,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    return out


def test_training_selects_on_entity_f1_and_learns_the_sample(ner_run):
    metrics = json.loads((ner_run / "metrics.json").read_text())
    f1s = [row["dev_f1"] for row in metrics["epochs"]]
    assert metrics["best_epoch"] == 1 + f1s.index(max(f1s))
    assert metrics["dev"]["f1"] == pytest.approx(max(f1s))
    assert metrics["test"]["f1"] > 0.8  # the sample's entities come from a few invented names
    assert set(metrics["test"]["per_type"]) == {"PER", "LOC", "ORG", "MISC"}
    config = json.loads((ner_run / "config.json").read_text())
    assert config["data"]["task"] == "ner" and config["model"]["sketch_steps"] == 5
    assert "dev F1" in (ner_run / "train.log").read_text()


def test_tag_writes_iob1_latin1_back_with_every_other_column_unchanged(ner_run, tmp_path):
    source = tmp_path / "german.iob1"
    source.write_bytes(IOB1_LATIN1)
    out = tmp_path / "tagged.iob1"
    result = run_cli("tag", source, "-m", ner_run, "--encoding", "latin-1", "--replace", "-o", out)
    assert result.returncode == 0, result.stderr.decode()
    before, after = IOB1_LATIN1.split(b"\n"), out.read_bytes().split(b"\n")
    assert len(before) == len(after)
    predicted = []
    for old, new in zip(before, after, strict=True):
        old_text, new_text = old.decode("latin-1"), new.decode("latin-1")
        if old_text.strip() and not old_text.startswith("-DOCSTART-"):
            # the same line up to the last column, whitespace and line ending included
            cut_old, cut_new = old_text.rstrip().rsplit(" ", 1), new_text.rstrip().rsplit(" ", 1)
            assert (
                cut_old[0] == cut_new[0]
                and old_text[len(old_text.rstrip()) :] == new_text[len(new_text.rstrip()) :]
            )
            predicted.append(cut_new[1])
        else:
            assert old == new
    # the predictions are IOB1: no B- that does not follow an entity of its own type
    previous = ""
    for tag in predicted:
        assert schemes.is_entity_tag(tag) and tag[0] in "BIO"
        if tag.startswith("B-"):
            assert previous == tag[2:]
        previous = tag[2:]


def test_tag_appends_a_column_by_default(ner_run):
    result = run_cli("tag", "-", "-m", ner_run, input=b"-DOCSTART- -X- O\n\nMaria x O\nsaid x O\n")
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().split("\n")
    assert lines[:2] == ["-DOCSTART- -X- O", ""]
    assert [line.rsplit(" ", 1)[0] for line in lines[2:4]] == ["Maria x O", "said x O"]


def test_analyze_says_where_the_first_focus_goes_against_the_entities(ner_run):
    from easyfirst import Tagger
    from easyfirst.data.conll import read_conll

    result = run_cli("analyze", NER_SAMPLE, "-m", ner_run, "--json")
    assert result.returncode == 0, result.stderr.decode()
    entities = json.loads(result.stdout)["entities"]
    sentences = [s for s in read_conll(NER_SAMPLE) if set(s.tags) != {"O"}]
    tagged = Tagger.load(ner_run).tag([s.words for s in sentences], attention=True)
    on_entity = [s.tags[int(t.attention[0].argmax())] != "O" for s, t in zip(sentences, tagged, strict=True)]
    assert entities["sentences"] == len(sentences) > 0
    assert entities["share_on_entity"] == pytest.approx(sum(on_entity) / len(sentences))
    text = run_cli("analyze", NER_SAMPLE, "-m", ner_run).stdout.decode()
    assert f"on an entity word in {100 * entities['share_on_entity']:.1f}%" in " ".join(text.split())


def test_evaluate_reports_entity_scores(ner_run):
    result = run_cli("evaluate", NER_SAMPLE, "-m", ner_run, "--json")
    assert result.returncode == 0, result.stderr.decode()
    report = json.loads(result.stdout)
    assert report["entities"] == sum(
        line.split()[-1].startswith("B-") for line in NER_SAMPLE.read_text().splitlines() if line.strip()
    )
    assert 0.0 <= report["f1"] <= 1.0 and set(report["per_type"]) == {"PER", "LOC", "ORG", "MISC"}
    table = run_cli("evaluate", NER_SAMPLE, "-m", ner_run)
    assert table.returncode == 0 and b"entity F1" in table.stdout


def test_user_errors_on_column_files(ner_run, tmp_path):
    bad = tmp_path / "bad.conll"
    bad.write_text("a B-PER\nb c O\n")
    out = tmp_path / "out.conll"
    result = run_cli("tag", bad, "-m", ner_run, "-o", out)
    assert result.returncode == 2 and b"Traceback" not in result.stderr
    assert said(result.stderr).strip() == f"{bad}:2: expected 2 columns (as on line 1), found 3"
    assert not out.exists()
    result = run_cli("tag", SAMPLE, "--replace", process=True)  # the bundled model is a POS model
    assert result.returncode == 2 and b"--replace: only for column files" in result.stderr


def test_missing_conll2003_says_where_to_put_it(tmp_path):
    result = run_cli(
        "train", "--task", "ner", "--epochs", 1, "-o", tmp_path / "r",
        env={"EASYFIRST_DATA": str(tmp_path / "none"), "EASYFIRST_CACHE": str(tmp_path / "cache")},
    )  # fmt: skip
    assert result.returncode == 2
    message = result.stderr.decode()
    assert "ner/conll2003" in message and "eng.train" in message and "not freely downloadable" in message
    assert "/none: no such folder" in message  # where it looked (issue #39, item 7)


def test_ner_runs_n_as_a_maximum_and_an_older_run_keeps_n_for_every_sentence(ner_run, tmp_path):
    """configs/ner.toml reads N = 5 as Table 2's maximum (a 2-word sentence runs 2 steps); a run saved
    before `steps_beyond_length` existed has no such key and must keep running all N steps."""
    import shutil

    from easyfirst import Tagger

    config = json.loads((ner_run / "config.json").read_text())
    assert config["model"]["sketch_steps"] == 5 and config["model"]["steps_beyond_length"] is False
    (tagged,) = Tagger.load(ner_run).tag([["John", "Smith"]], attention=True)
    assert tagged.attention.shape == (2, 2)
    old = tmp_path / "old-run"
    shutil.copytree(ner_run, old)
    del config["model"]["steps_beyond_length"]
    (old / "config.json").write_text(json.dumps(config))
    (tagged,) = Tagger.load(old).tag([["John", "Smith"]], attention=True)
    assert tagged.attention.shape == (5, 2)


def test_a_file_of_the_wrong_kind_says_which_model_reads_what(ner_run, tmp_path):
    """Issue #17: a CoNLL-U file given to an ner model used to say 'expected 14 columns (as on line 1),
    found 11'; the CoNLL-2003 file given to the pos model 'expected 10 tab-separated columns'."""
    result = run_cli("tag", SAMPLE, "-m", ner_run, "--format", "model")
    assert result.returncode == 2 and b"Traceback" not in result.stderr
    message = said(result.stderr).strip()
    assert message.startswith(f"{SAMPLE}:2: expected ")
    assert "this looks like CoNLL-U" in message
    assert message.endswith(
        "this is an ner model, which reads CoNLL column files (one word per line, its tags in columns)"
    )
    result = run_cli("evaluate", NER_SAMPLE)  # the bundled model is a pos model
    assert result.returncode == 2
    message = result.stderr.decode().strip()
    assert "this looks like a CoNLL column file (NER: entity tags in the last column)" in message
    assert "this is a pos model, which reads CoNLL-U" in message


def test_an_ner_model_tags_plain_text_into_conllu_misc(ner_run, tmp_path):
    text = tmp_path / "news.txt"
    text.write_text("Peter Blackburn visited Brussels. It rained.\n", encoding="utf-8")
    result = run_cli("tag", text, "-m", ner_run)
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().splitlines()
    assert lines[:3] == ["# newpar", "# sent_id = 1", "# text = Peter Blackburn visited Brussels."]
    rows = [line.split("\t") for line in lines if line and not line.startswith("#")]
    assert [r[1] for r in rows] == ["Peter", "Blackburn", "visited", "Brussels", ".", "It", "rained", "."]
    assert all(r[3] == "_" and r[9].split("|")[0].startswith("NER=") for r in rows)
    assert rows[3][9].endswith("|SpaceAfter=No")  # "Brussels" before "."


def test_another_optimizer_than_the_tasks_sgd_says_the_rate_it_trains_at(tmp_path):
    """--optimizer adam without --lr trains at the generic rate, not SGD's 0.015: the log says so; with a
    rate given it says nothing."""
    common = [
        "train",
        "--task",
        "ner",
        "--train",
        NER_SAMPLE,
        "--dev",
        NER_SAMPLE,
        "--epochs",
        1,
        "--threads",
        1,
    ]
    bare = run_cli(*common, "--optimizer", "adam", "--output", tmp_path / "a")
    assert bare.returncode == 0, bare.stderr.decode()
    said = " ".join(bare.stderr.decode().split())
    assert "--optimizer adam takes none of the ner task's sgd settings: it trains at lr 0.1" in said
    given = run_cli(*common, "--optimizer", "adam", "--lr", "0.002", "--output", tmp_path / "b")
    assert given.returncode == 0 and "takes none of" not in given.stderr.decode()
    config = json.loads((tmp_path / "b" / "config.json").read_text())["train"]
    assert (config["optimizer"], config["lr"], config["momentum"], config["lr_decay"]) == (
        "adam",
        0.002,
        0.0,
        0.0,
    )
