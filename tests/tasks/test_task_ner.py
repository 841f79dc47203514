"""The NER task (easyfirst/tasks/ner.py): column files read and written back through the task (schemes,
encodings, replacing the tag column), its tag options, its scheme conversion for training and its
entity score, on small files written here."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest

from easyfirst.config import Config
from easyfirst.data.sentence import Sentence
from easyfirst.errors import InputError
from easyfirst.tasks import TASKS
from easyfirst.tasks.ner import NER, ColumnOptions

# IOB1: an entity starts with I-, B- only between two adjacent entities of one type
IOB1 = "Anna NNP I-PER\nKarl NNP B-PER\nsaw VBD O\nOslo NNP I-LOC\n\nHi UH O\n"


def data(**values):
    """The task's [data] settings, with ``values`` changed."""
    return replace(Config.for_task("ner").data, **values)


def test_ner_is_registered_and_its_options_are_column_options():
    assert TASKS["ner"] is NER
    assert NER.format.TagOptions is ColumnOptions
    assert TASKS["pos"].format.text_column(data()) == "upos" and NER.format.text_column(data()) == "misc:NER"


def test_read_converts_any_scheme_to_bio(tmp_path):
    path = tmp_path / "a.conll"
    path.write_text(IOB1, encoding="utf-8")
    sentences = NER.read(path, data())
    assert [s.words for s in sentences] == [["Anna", "Karl", "saw", "Oslo"], ["Hi"]]
    assert [s.tags for s in sentences] == [["B-PER", "B-PER", "O", "B-LOC"], ["O"]]


def test_read_uses_the_configured_columns_and_encoding(tmp_path):
    path = tmp_path / "latin.conll"
    path.write_bytes("B-PER Zoë\nO lebt\n".encode("latin-1"))
    sentences = NER.read(path, data(token_column=1, label_column=0, encoding="latin-1"))
    assert sentences[0].words == ["Zoë", "lebt"] and sentences[0].tags == ["B-PER", "O"]


def test_a_line_with_too_few_columns_is_named_by_path_and_line(tmp_path):
    path = tmp_path / "bad.conll"
    path.write_text("Anna NNP B-PER\nKarl NNP B-PER\nsaw\n", encoding="utf-8")
    with pytest.raises(InputError) as error:
        NER.read(path, data())
    assert str(error.value).startswith(f"{path}:3: ")


def test_write_appends_the_predicted_tags_in_the_input_scheme(tmp_path):
    path = tmp_path / "a.conll"
    path.write_text(IOB1, encoding="utf-8")

    def predict(sentences):  # BIO: two adjacent one-word persons, one location
        return [["B-PER", "B-PER", "O", "B-LOC"] if len(words) == 4 else ["O"] for words in sentences]

    out = io.BytesIO()
    with path.open("rb") as source:
        count = NER.write(source, out, predict, data(), ColumnOptions(), name=str(path))
    assert count == 2
    assert out.getvalue().decode() == (
        "Anna NNP I-PER I-PER\nKarl NNP B-PER B-PER\nsaw VBD O O\nOslo NNP I-LOC I-LOC\n\nHi UH O O\n"
    )


def test_write_replaces_the_tag_column_in_the_scheme_asked_for(tmp_path):
    path = tmp_path / "a.conll"
    path.write_text("New NNP O\nYork NNP O\n", encoding="utf-8")
    out = io.BytesIO()
    with path.open("rb") as source:
        NER.write(
            source,
            out,
            lambda sentences: [["B-LOC", "I-LOC"]],
            data(),
            ColumnOptions(replace=True, scheme="bioes"),
            name=str(path),
        )
    assert out.getvalue().decode() == "New NNP B-LOC\nYork NNP E-LOC\n"


def test_column_options_refuse_an_unknown_scheme_or_encoding():
    with pytest.raises(InputError, match="--scheme must be bio, iob1 or bioes, not 'iobes'"):
        ColumnOptions(scheme="iobes")
    with pytest.raises(InputError, match="--encoding: unknown encoding 'latin-9x'"):
        ColumnOptions(encoding="latin-9x")


def test_configure_takes_the_encoding_option_only_when_given():
    given = data()
    NER.format.configure(given, ColumnOptions())
    assert given.encoding == "utf-8"
    NER.format.configure(given, ColumnOptions(encoding="latin-1"))
    assert given.encoding == "latin-1"


def test_tag_options_of_another_task_name_that_task():
    with pytest.raises(
        InputError, match=r"--gaps: only for QE file prefixes.*\(qe models\); this is a ner model"
    ):
        NER.tag_options({"gaps": True})
    assert NER.tag_options({"replace": True, "gaps": None}) == ColumnOptions(replace=True)


def test_prepare_converts_the_training_tags_to_bioes():
    config = Config.for_task("ner")
    config.data.scheme = "bioes"
    sentence = Sentence(["New", "York", "and", "Bo"], ["B-LOC", "I-LOC", "O", "B-PER"], line=1)
    NER.prepare(config, [sentence])
    assert sentence.tags == ["B-LOC", "E-LOC", "O", "S-PER"]


def test_score_counts_whole_entities():
    gold = [["B-PER", "I-PER", "O", "B-LOC"]]
    predicted = [["B-PER", "O", "O", "B-LOC"]]  # the person is cut short: one of two entities right
    report = NER.scoring.score(gold, predicted)
    assert report["precision"] == pytest.approx(1 / 2)
    assert report["recall"] == pytest.approx(1 / 2)
    assert report["entities"] == 2
    assert report["accuracy"] == pytest.approx(3 / 4)
    assert NER.scoring.title("test", report).startswith(
        "test: entity F1 50.00 (precision 50.00, recall 50.00)"
    )
    assert NER.scoring.known_labels(["O", "B-PER", "I-PER", "B-LOC"]) == {"PER", "LOC"}
