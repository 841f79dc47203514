"""A task is a format and a scoring (easyfirst.tasks.parts) plus its defaults and extra outputs
(easyfirst.data.outputs): a task made here of a new reader and the shared per-word accuracy trains, loads
and tags end to end, and a made-up extra output (capitalization, one tag per word) is trained, scored,
returned by the API and written by the format's writer, with no module outside the task knowing of it."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import pytest
import torch

from easyfirst.api import Tagger
from easyfirst.config import Config
from easyfirst.data.detect import TEXT, Looks, WrongKind
from easyfirst.data.outputs import OutputHead
from easyfirst.data.sentence import Sentence
from easyfirst.errors import InputError
from easyfirst.tagging.pipeline import predictor
from easyfirst.tasks import TASKS, Task
from easyfirst.tasks.parts import Format, Scoring
from easyfirst.training.loop import train

LINES = [
    "The/D dog/N barks/V",
    "A/D Cat/N sleeps/V",
    "Dogs/N bark/V",
    "The/D old/A Dog/N sleeps/V",
    "a/D cat/N Barks/V",
]


class Slashes(Format[Sentence]):
    """One sentence a line, each word written ``word/TAG``: the format of the test."""

    input_kind = "slash files"

    def read(self, path, data) -> list[Sentence]:
        text = path.read() if hasattr(path, "read") else Path(path).read_bytes()
        sentences = []
        for number, line in enumerate(text.decode().splitlines(), 1):
            pairs = [token.rsplit("/", 1) for token in line.split()]
            if any(len(pair) != 2 for pair in pairs):
                raise WrongKind("a word without /TAG", Looks(TEXT, "words without tags"), TEXT, path, number)
            sentences.append(Sentence([w for w, _ in pairs], [t for _, t in pairs], number))
        return sentences

    def write(self, source: BinaryIO, out: BinaryIO, predict, data, options, *, name: str, **_) -> int:
        sentences = self.read(source, data)
        tags, heads = predict([s.words for s in sentences], heads=True)
        columns = [tags, *heads.values()]
        for k, sentence in enumerate(sentences):
            words = [
                "/".join([w, *(column[k][i] for column in columns)]) for i, w in enumerate(sentence.words)
            ]
            out.write((" ".join(words) + "\n").encode())
        return len(sentences)


CAPITALS = OutputHead(
    name="capitals",
    labels=("lower", "upper"),
    over="words",
    what="capitalization tags",
    gold=lambda sentence: ["upper" if w[0].isupper() else "lower" for w in sentence.words],
)


def make_task(name: str, outputs=()) -> Task:
    return Task(
        name=name,
        help="slash-tagged words",
        summary="tags of words written word/TAG",
        dataset="ud-en-ewt",
        format=Slashes(),
        scoring=Scoring(),
        outputs=outputs,
    )


def trained(tmp_path: Path, task: Task, monkeypatch) -> tuple[Path, Path]:
    monkeypatch.setitem(TASKS, task.name, task)
    data = tmp_path / "tiny.txt"
    data.write_text("\n".join(LINES) + "\n")
    config = Config.for_task(task.name)
    config.data.train = config.data.dev = str(data)
    config.train.epochs, config.train.threads = 2, 1
    config.model.encoder.hidden_dim, config.model.embedder.word_dim, config.model.embedder.affix_dim = 8, 8, 4
    train(config, tmp_path / "run")
    return data, tmp_path / "run"


def test_a_task_of_a_new_reader_and_the_shared_scoring_trains_loads_and_tags(tmp_path, monkeypatch):
    task = make_task("slashes")
    data, run = trained(tmp_path, task, monkeypatch)
    tagger = Tagger.load(run)
    assert tagger.config.data.task == "slashes" and set(tagger.tags) == {"D", "N", "V", "A"}
    out = tmp_path / "out.txt"
    with open(data, "rb") as source, open(out, "wb") as stream:
        assert (
            task.write(source, stream, predictor(tagger, 16), tagger.config.data, None, name=str(data)) == 5
        )
    written = [line.split() for line in out.read_text().splitlines()]
    assert [[t.split("/")[0] for t in line] for line in written] == [
        [t.split("/")[0] for t in line.split()] for line in LINES
    ]
    assert all(t.split("/")[1] in tagger.tags for line in written for t in line)
    sentences = task.read(data, None)
    tagged = tagger.tag([s.words for s in sentences])
    report = task.scoring.score([s.tags for s in sentences], [t.tags for t in tagged])
    pairs = [
        (g, w)
        for line, out in zip(LINES, written, strict=True)
        for g, w in zip(line.split(), out, strict=True)
    ]
    right = sum(g.split("/")[1] == w.split("/")[1] for g, w in pairs)
    assert report["tokens"] == 15 and report["accuracy"] == pytest.approx(right / 15)


def test_a_reader_of_the_wrong_kind_is_named_by_the_task(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("no tags here\n")
    with pytest.raises(InputError) as error:
        make_task("slashes").read(bad, None)
    assert str(error.value).startswith(f"{bad}:1: a word without /TAG")
    assert "this is a slashes model, which reads plain text" in str(error.value)


def test_a_made_up_extra_output_trains_is_scored_returned_and_written(tmp_path, monkeypatch):
    task = make_task("capitals", (CAPITALS,))
    data, run = trained(tmp_path, task, monkeypatch)
    state = torch.load(run / "model.pt", weights_only=True)
    assert {"heads.capitals.output.weight", "heads.capitals.output.bias"} <= set(state)
    metrics = (run / "metrics.json").read_text()
    assert '"capitals_accuracy"' in metrics  # the shared scoring's report of an extra output
    assert "capitalization tags" in (run / "train.log").read_text()  # the output layer's line
    tagger = Tagger.load(run)
    words = [["Dogs", "bark"], [], ["a", "Cat"]]
    tagged = tagger.tag(words, heads=True)
    assert [list(t.heads) for t in tagged] == [["capitals"]] * 3
    assert [len(t.heads["capitals"]) for t in tagged] == [2, 0, 2]  # one per word; none for no words
    assert all(tag in ("lower", "upper") for t in tagged for tag in t.heads["capitals"])
    out = tmp_path / "out.txt"
    with open(data, "rb") as source, open(out, "wb") as stream:
        task.write(source, stream, predictor(tagger, 16), tagger.config.data, None, name=str(data))
    first = out.read_text().splitlines()[0].split()
    assert [t.split("/")[0] for t in first] == ["The", "dog", "barks"]
    assert all(t.split("/")[2] in ("lower", "upper") for t in first)


def test_an_extra_output_reads_its_gold_and_counts_its_positions():
    sentence = Sentence(["The", "dog"], ["D", "N"], 1)
    assert CAPITALS.gold(sentence) == ["upper", "lower"]
    assert CAPITALS.positions(2, None) == 2 and CAPITALS.filled(None) == []
    gaps = OutputHead("g", ("OK", "BAD"), "gaps", "gap tags", gold=lambda s: None, empty="OK")
    assert gaps.positions(2, None) == 3 and gaps.filled(None) == ["OK"]
    aligned = OutputHead("a", ("OK", "BAD"), "aligned", "a", gold=lambda s: None, empty="BAD", aligned="src")
    assert (
        aligned.positions(0, {"src": ["x", "y"]}) == 2 and aligned.filled({"src": ["x", "y"]}) == ["BAD"] * 2
    )
    with pytest.raises(ValueError, match="over must be"):
        OutputHead("x", ("a",), "sentences", "x", gold=lambda s: None)
