"""Every config the project ships parses with the project's own readers: each training config under
``configs/`` loads (easyfirst.config.Config.load), resolves and builds the model it describes (on
vocabularies from the task's sample); each search space under ``configs/tune/``, and each TOML code block
in the docs, reads as a search space (easyfirst.tuning.space.read_space) on its task's defaults. A stray
character in a shipped file (the first line of configs/tune/pos-sample.toml once read ``X``) fails here
before a user runs the command that names it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from easyfirst.config import Config
from easyfirst.errors import InputError
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.tasks import get_task
from easyfirst.training.loop import build_vocabularies
from easyfirst.tuning.space import read_space

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = {
    "pos": ROOT / "data" / "samples" / "en-sample.conllu",
    "ner": ROOT / "data" / "samples" / "en-ner-sample.conll",
    "qe": ROOT / "data" / "samples" / "qe-en-de-gaps",
}
TRAIN_CONFIGS = sorted((ROOT / "configs").glob("*.toml"))
SPACES = sorted((ROOT / "configs" / "tune").glob("*.toml"))
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]


def space_task(path: Path) -> str:
    """The task a search space is for, as its name says (``ner.toml``, ``pos-sample.toml``)."""
    return next(task for task in ("ner", "qe", "pos") if path.stem.startswith(task))


def toml_blocks(path: Path) -> list[tuple[int, str]]:
    """The TOML code blocks of a Markdown file (fenced as ``toml``), with the line each starts on."""
    text = path.read_text(encoding="utf-8")
    return [
        (text[: m.start()].count("\n") + 2, m.group(1))
        for m in re.finditer(r"^```toml\n(.*?)^```", text, re.S | re.M)
    ]


def test_there_are_shipped_configs_to_check():
    assert len(TRAIN_CONFIGS) >= 6 and len(SPACES) >= 2
    assert sum(len(toml_blocks(path)) for path in DOCS) >= 1


@pytest.mark.parametrize("path", TRAIN_CONFIGS, ids=lambda p: p.name)
def test_each_training_config_loads_resolves_and_builds_its_model(path):
    config = Config.load(path).resolved(str(path))
    task = get_task(config.data.task)
    sentences = task.read(str(SAMPLES[config.data.task]), config.data)
    vocabs = build_vocabularies(config, sentences)
    model = EasyFirstTagger(config.model, config.loss, vocabs, task.outputs)
    assert sum(p.numel() for p in model.parameters()) > 0
    assert model.embedder.words.embedding_dim == config.model.embedder.word_dim


@pytest.mark.parametrize("path", SPACES, ids=lambda p: p.name)
def test_each_search_space_reads_on_its_tasks_defaults(path):
    text = path.read_text(encoding="utf-8")
    space = read_space(text, str(path), Config.for_task(space_task(path)))
    assert space.parameters


@pytest.mark.parametrize(
    "path, line, text",
    [(path, line, text) for path in DOCS for line, text in toml_blocks(path)],
    ids=lambda v: v.name if isinstance(v, Path) else str(v)[:20],
)
def test_each_toml_block_in_the_docs_reads_as_a_search_space(path, line, text):
    """The docs' TOML blocks are search spaces (the tuning section's); one that is not would fail here
    and say where it is."""
    try:
        read_space(text, f"{path.name}:{line}", Config.for_task("ner"))
    except InputError as error:
        pytest.fail(f"{path.name}:{line}: {error}")


def test_a_space_with_a_stray_first_line_is_refused_with_its_place():
    """What the test above would report of the file as it was shipped: the reader's refusal, not a pass."""
    text = "X\n# a comment\n\n[model]\nhidden_dim = { low = 8, high = 48, step = 8 }\n"
    with pytest.raises(InputError, match="not valid TOML"):
        read_space(text, "pos-sample.toml", Config.for_task("pos"))
