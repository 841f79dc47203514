"""The POS task (easyfirst/tasks/pos.py): CoNLL-U read and written back through the task, its checks of
``[data] tag_column``, its score, on small files written here."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest

from easyfirst.config import Config
from easyfirst.errors import InputError
from easyfirst.tasks import TASKS
from easyfirst.tasks.pos import POS

FILE = (
    "# sent_id = a\n"
    "1\tDogs\tdog\tNOUN\tNNS\t_\t_\t_\t_\t_\n"
    "2\tbark\tbark\tVERB\tVBP\t_\t_\t_\t_\t_\n"
    "\n"
    "# sent_id = b\n"
    "1\tYes\tyes\tINTJ\tUH\t_\t_\t_\t_\t_\n"
    "2\t!\t!\tPUNCT\t.\t_\t_\t_\t_\t_\n"
    "\n"
)


def data(**values):
    """The task's [data] settings, with ``values`` changed."""
    return replace(Config.for_task("pos").data, **values)


def test_the_registry_holds_this_task_under_its_name():
    assert TASKS["pos"] is POS
    assert POS.scoring.metric == "accuracy"


@pytest.mark.parametrize(
    "column, tags", [("upos", [["NOUN", "VERB"], ["INTJ", "PUNCT"]]), ("xpos", [["NNS", "VBP"], ["UH", "."]])]
)
def test_read_gives_the_words_and_the_chosen_column(column, tags, tmp_path):
    path = tmp_path / "a.conllu"
    path.write_text(FILE, encoding="utf-8")
    sentences = POS.read(path, data(tag_column=column))
    assert [s.words for s in sentences] == [["Dogs", "bark"], ["Yes", "!"]]
    assert [s.tags for s in sentences] == tags


def test_stream_reads_the_same_sentences_from_an_open_file():
    sentences = list(POS.stream(io.BytesIO(FILE.encode()), data(), "stdin"))
    assert [s.words for s in sentences] == [["Dogs", "bark"], ["Yes", "!"]]


def test_a_malformed_line_is_named_by_path_and_line(tmp_path):
    path = tmp_path / "bad.conllu"
    path.write_text(FILE.replace("2\tbark\tbark\tVERB", "2\tbark\tVERB"), encoding="utf-8")
    with pytest.raises(InputError) as error:
        POS.read(path, data())
    assert str(error.value).startswith(f"{path}:3: ")
    assert "10 tab-separated columns" in str(error.value)


def test_a_column_file_says_which_files_a_pos_model_reads(tmp_path):
    path = tmp_path / "ner.conll"
    path.write_text("Dogs NNS O\nbark VBP O\n", encoding="utf-8")
    with pytest.raises(InputError, match="pos"):
        POS.read(path, data())


def test_validate_takes_upos_or_xpos_only():
    POS.format.validate(data(tag_column="xpos"), "cfg.toml")
    with pytest.raises(InputError, match="tag_column must be upos or xpos"):
        POS.format.validate(data(tag_column="lemma"), "cfg.toml")


def test_write_replaces_the_tag_column_and_copies_every_other_byte(tmp_path):
    path = tmp_path / "a.conllu"
    path.write_text(FILE, encoding="utf-8")
    seen = []

    def predict(sentences, **_):
        seen.extend(sentences)
        return [[f"T{i}" for i, _ in enumerate(words)] for words in sentences]

    out = io.BytesIO()
    with path.open("rb") as source:
        count = POS.write(source, out, predict, data(), None, name=str(path))
    assert count == 2
    assert seen == [["Dogs", "bark"], ["Yes", "!"]]
    expected = FILE.replace("\tNOUN\t", "\tT0\t").replace("\tVERB\t", "\tT1\t")
    expected = expected.replace("\tINTJ\t", "\tT0\t").replace("\tPUNCT\t", "\tT1\t")
    assert out.getvalue().decode() == expected


def test_score_is_the_fraction_of_words_tagged_right():
    report = POS.scoring.score([["A", "B", "C"], ["A"]], [["A", "X", "C"], ["B"]])
    assert report["accuracy"] == pytest.approx(2 / 4)
    assert report["tokens"] == 4
    assert POS.scoring.title("dev", report) == "dev: accuracy 50.00% over 4 words"


def test_pos_refuses_the_qe_heads():
    config = Config.for_task("pos")
    config.model.output.gaps = True
    with pytest.raises(InputError, match=r"\[model\] gaps: only for the qe task, not pos"):
        POS.prepare(config, [])
