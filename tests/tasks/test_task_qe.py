"""The QE task (easyfirst/tasks/qe.py): a data set as a prefix of parallel files, the input claimed from a
prefix or --src/--mt/--alignments, the tags written back (2N+1 or one per word, source tags beside),
the heads settled from the training data, its scores' labels; small files written here."""

from __future__ import annotations

import io

import pytest

from easyfirst.config import Config
from easyfirst.errors import InputError
from easyfirst.tasks import TASKS
from easyfirst.tasks.qe import QE, QEOptions, score_label, source_tags_path

FILES = {
    "src": "the cat\nhello\n",
    "mt": "die Katze\nhallo\n",
    "src-mt.alignments": "0-0 1-1\n0-0\n",
    "tags": "OK BAD\nOK\n",
}


def write_set(prefix, **changes):
    for suffix, text in {**FILES, **changes}.items():
        (prefix.parent / f"{prefix.name}.{suffix}").write_text(text, encoding="utf-8")
    return prefix


def test_read_gives_mt_words_with_their_tags_and_aligned_source(tmp_path):
    prefix = write_set(tmp_path / "set")
    assert QE.exists(prefix) and not QE.exists(tmp_path / "other")
    sentences = QE.read(prefix, Config.for_task("qe").data)
    assert [s.words for s in sentences] == [["die", "Katze"], ["hallo"]]
    assert [s.tags for s in sentences] == [["OK", "BAD"], ["OK"]]
    assert sentences[0].extra["source"] == ["the", "cat"]


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"tags": "OK BAD\nOK FINE\n"}, ".tags:2: tag 'FINE' is neither OK nor BAD"),
        ({"tags": "OK\nOK\n"}, ".tags:1: 1 tags for 2 MT words: expected 2 (one per word) or 5"),
        (
            {"src-mt.alignments": "0-0 1-2\n0-0\n"},
            ".src-mt.alignments:1: alignment 1-2: MT index 2 out of range",
        ),
        ({"mt": "die Katze\n"}, ".mt:2: the file ends after line 1"),
    ],
)
def test_a_bad_line_is_named_by_file_and_line(changes, message, tmp_path):
    prefix = write_set(tmp_path / "set", **changes)
    with pytest.raises(InputError) as error:
        QE.read(prefix, Config.for_task("qe").data)
    assert str(error.value).startswith(str(prefix)) and message in str(error.value)


def test_check_exists_names_the_missing_files(tmp_path):
    prefix = write_set(tmp_path / "set")
    QE.check_exists(prefix, "train")
    (tmp_path / "set.tags").unlink()
    with pytest.raises(InputError, match="set.tags"):
        QE.check_exists(prefix, "train")


def test_claim_input_reads_a_prefix_or_the_three_files_but_never_the_tags(tmp_path):
    prefix = write_set(tmp_path / "set", tags="not even tags\n")
    assert QE.claim_input(str(tmp_path / "set.mt"), {}) is None  # a file: not claimed
    sentences = QE.claim_input(str(prefix), {})
    assert [s.words for s in sentences] == [["die", "Katze"], ["hallo"]]
    files = {
        k: tmp_path / f"set.{e}"
        for k, e in (("src", "src"), ("mt", "mt"), ("alignments", "src-mt.alignments"))
    }
    assert [s.words for s in QE.claim_input(None, files)] == [["die", "Katze"], ["hallo"]]


def test_claim_input_refuses_half_the_files_or_both_ways(tmp_path):
    prefix = write_set(tmp_path / "set")
    src, mt = tmp_path / "set.src", tmp_path / "set.mt"
    with pytest.raises(InputError, match="missing --alignments"):
        QE.claim_input(None, {"src": src, "mt": mt})
    with pytest.raises(InputError, match="not both"):
        QE.claim_input(str(prefix), {"src": src, "mt": mt, "alignments": src})
    with pytest.raises(InputError, match="no such file"):
        QE.claim_input(None, {"src": src, "mt": mt, "alignments": tmp_path / "none"})


def predict_with(found):
    def predict(words, extras, heads: bool):  # easyfirst.tagging.pipeline.predictor's QE form
        assert heads and len(extras) == len(words)
        return [["BAD"] * len(w) for w in words], found

    return predict


def test_write_gives_2n_plus_1_tags_and_the_source_tags_beside_the_output(tmp_path):
    prefix = write_set(tmp_path / "set")
    sentences = QE.claim_input(str(prefix), {})
    heads = {"gaps": [["OK", "BAD", "OK"], ["BAD", "OK"]], "source_tags": [["OK", "BAD"], ["BAD"]]}
    out, output = io.BytesIO(), tmp_path / "out.tags"
    count = QE.write(sentences, out, predict_with(heads), None, QEOptions(), name="set", output=output)
    assert count == 2
    assert out.getvalue().decode() == "OK BAD BAD BAD OK\nBAD BAD OK\n"
    assert source_tags_path(output) == tmp_path / "out.source_tags"
    assert (tmp_path / "out.source_tags").read_text() == "OK BAD\nBAD\n"


def test_write_one_tag_per_word_unless_gaps_asked_for(tmp_path):
    sentences = QE.claim_input(str(write_set(tmp_path / "set")), {})
    out = io.BytesIO()
    QE.write(sentences, out, predict_with({}), None, QEOptions(), name="set")
    assert out.getvalue().decode() == "BAD BAD\nBAD\n"
    out = io.BytesIO()
    QE.write(sentences, out, predict_with({}), None, QEOptions(gaps=True), name="set")
    assert out.getvalue().decode() == "OK BAD OK BAD OK\nOK BAD OK\n"


def test_prepare_switches_on_the_heads_the_data_has_and_refuses_the_others(tmp_path):
    gap_tags = "OK OK OK BAD OK\nOK OK OK\n"
    sentences = QE.read(write_set(tmp_path / "gaps", tags=gap_tags), Config.for_task("qe").data)
    config = Config.for_task("qe")
    QE.prepare(config, sentences)
    assert config.model.output.gaps is True and config.model.output.source_tags is False
    assert QE.scoring.selection(config) == ("target_f1_mult", "target F1-MULT")
    assert ("gaps_mcc", "gaps MCC") in QE.scoring.report_columns(config)
    config = Config.for_task("qe")
    config.model.output.source_tags = True
    with pytest.raises(InputError, match="source_tags = true, but the training data has no source tags"):
        QE.prepare(config, sentences)


def test_score_is_f1_ok_times_f1_bad():
    # gold OK OK BAD BAD, predicted OK BAD BAD BAD: OK P=1 R=1/2 F=2/3; BAD P=2/3 R=1 F=4/5
    report = TASKS["qe"].scoring.score([["OK", "OK", "BAD", "BAD"]], [["OK", "BAD", "BAD", "BAD"]])
    assert report["f1_ok"] == pytest.approx(2 / 3)
    assert report["f1_bad"] == pytest.approx(4 / 5)
    assert report["f1_mult"] == pytest.approx(8 / 15)
    assert score_label("source_mcc") == "source MCC" and score_label("f1_bad") == "F1-BAD"
    assert score_label("loss") == "loss"
