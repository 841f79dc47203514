"""The Python API: Tagger.load(run_dir).tag(...), attention matrices, exports, and the bundled model."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from conftest import SAMPLE, run_cli
from easyfirst import Tagger
from easyfirst.api import default_model_path
from easyfirst.config import Config
from easyfirst.data.conllu import read_conllu
from easyfirst.errors import InputError
from easyfirst.training.loop import train


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    config = Config()
    config.data.train = config.data.dev = str(SAMPLE)
    config.train.epochs = 2
    out = tmp_path_factory.mktemp("api") / "run"
    train(config, out)
    return out


def test_tag_returns_one_tag_per_word_and_keeps_empty_sentences(run_dir):
    tagger = Tagger.load(run_dir)
    sentences = [["The", "dog", "barks", "."], [], ["Hi"], ["unseen-wordzzz"] * 60]
    tagged = tagger.tag(sentences)
    assert [t.tokens for t in tagged] == sentences
    assert [len(t.tags) for t in tagged] == [4, 0, 1, 60]
    assert all(t in tagger.tags for sentence in tagged for t in sentence.tags)
    assert all(t.attention is None and t.probabilities is None and t.heads is None for t in tagged)


def test_attention_is_n_by_l_and_even_for_csoftmax(run_dir):
    tagger = Tagger.load(run_dir)
    sentences = [["The", "dog", "barks", "."], ["A", "cat", "sat", "on", "the", "mat", "."], []]
    attention = [t.attention for t in tagger.tag(sentences, attention=True)]
    assert [tuple(a.shape) for a in attention] == [(4, 4), (7, 7), (0, 0)]
    for matrix in attention[:2]:
        torch.testing.assert_close(matrix.sum(1), torch.ones(matrix.shape[0]), atol=1e-5, rtol=0)  # α ∈ Δ
        torch.testing.assert_close(matrix.sum(0), torch.ones(matrix.shape[1]), atol=1e-5, rtol=0)  # β^L = 1


@pytest.mark.parametrize("beyond_length", [True, False])
def test_attention_with_n_fixed_has_a_row_per_step_the_sentence_ran(run_dir, beyond_length):
    tagger = Tagger.load(run_dir)
    tagger.model.steps, tagger.model.steps_beyond_length = 3, beyond_length  # N = 3 (weights unchanged)
    sentences = [["The", "dog", "barks", "."], ["Hi", "!"], ["A", "cat", "sat", "on", "the", "mat", "."]]
    attention = [t.attention for t in tagger.tag(sentences, attention=True)]
    short = (3, 2) if beyond_length else (2, 2)  # N as a maximum: a 2-word sentence runs 2 steps
    assert [tuple(a.shape) for a in attention] == [(3, 4), short, (3, 7)]
    for matrix in attention:  # every row is a step that ran: a distribution, not padding
        torch.testing.assert_close(matrix.sum(1), torch.ones(matrix.shape[0]), atol=1e-5, rtol=0)


def test_batch_size_does_not_change_tags(run_dir):
    tagger = Tagger.load(run_dir)
    words = [s.words for s in read_conllu(SAMPLE)]
    assert tagger.tag(words, batch_size=1) == tagger.tag(words, batch_size=1000)  # Tagged: tokens, tags


def test_export_to_float16_keeps_predictions(run_dir, tmp_path):
    from easyfirst.runs import load_model, save_model

    model, config, vocabs = load_model(run_dir)
    save_model(tmp_path / "half", model, config, vocabs, half=True)
    state = torch.load(tmp_path / "half" / "model.pt", weights_only=True)
    assert {v.dtype for v in state.values() if v.is_floating_point()} == {torch.float16}
    words = [s.words for s in read_conllu(SAMPLE)]
    full, half = (
        Tagger.load(run_dir).tag(words),
        Tagger.load(tmp_path / "half").tag(words),
    )
    agree = sum(a == b for x, y in zip(full, half, strict=True) for a, b in zip(x.tags, y.tags, strict=True))
    assert agree / sum(len(x) for x in full) > 0.97


def test_loading_something_that_is_not_a_model_folder(tmp_path):
    with pytest.raises(InputError, match="model folder not found"):
        Tagger.load(tmp_path / "nothing")
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        Tagger.load(tmp_path)


# torch's weights-only reader first warns that it meets a pickle protocol it was not written for
@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_a_pickle_in_place_of_the_weights_is_refused_without_running(run_dir, tmp_path):
    import pickle
    import shutil

    folder = tmp_path / "evil"
    shutil.copytree(run_dir, folder)
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    (folder / "model.pt").write_bytes(pickle.dumps({"x": Payload()}))
    with pytest.raises(InputError, match="refused to unpickle"):
        Tagger.load(folder)
    assert not marker.exists()


def test_bundled_default_model_tags_out_of_the_box():
    assert (default_model_path() / "model.pt").is_file(), "the package must ship its default model"
    tagger = Tagger.load()
    # unambiguous sentences a UPOS tagger at ~95% must get right (checked by hand against the UD guidelines)
    sentences = [["She", "reads", "a", "book", "."], ["The", "cat", "sat", "on", "the", "mat", "."]]
    assert [t.tags for t in tagger.tag(sentences)] == [
        ["PRON", "VERB", "DET", "NOUN", "PUNCT"],
        ["DET", "NOUN", "VERB", "ADP", "DET", "NOUN", "PUNCT"],
    ]
    size = sum(f.stat().st_size for f in default_model_path().iterdir())
    assert size < 10 * 2**20


def test_export_refuses_a_folder_with_a_model_unless_overwrite(tmp_path):
    from conftest import run_cli

    bundled = default_model_path()
    out = tmp_path / "shipped"
    assert run_cli("export", bundled, out).returncode == 0
    (out / "model.pt").write_bytes(b"old")
    again = run_cli("export", bundled, out)
    assert again.returncode == 2
    assert again.stderr.decode().strip() == f"{out}: already holds a model (--overwrite replaces it)"
    assert (out / "model.pt").read_bytes() == b"old"
    replaced = run_cli("export", bundled, out, "--overwrite")
    assert replaced.returncode == 0, replaced.stderr.decode()
    assert Tagger.load(out).tag([["She", "reads", "."]]) == Tagger.load().tag([["She", "reads", "."]])


def test_a_bundled_model_is_taken_by_its_name_wherever_a_model_is():
    from easyfirst.resources import BUNDLED, DEFAULT_MODEL, default_model_path, model_folder

    assert BUNDLED["en-upos"] == DEFAULT_MODEL and model_folder("en-upos") == default_model_path()
    assert model_folder("runs/en-upos") == Path("runs/en-upos")  # a path is a path
    sentence = [["She", "reads", "a", "book", "."]]
    assert Tagger.load("en-upos").tag(sentence) == Tagger.load().tag(sentence)
    by_name = run_cli("tag", "--text", "She reads a book.", "-m", "en-upos")
    default = run_cli("tag", "--text", "She reads a book.")
    assert by_name.returncode == 0 and by_name.stdout == default.stdout


def test_the_bundled_ner_model_finds_the_entities_of_a_plain_sentence():
    """en-ner (CoNLL-2003, GloVe 6B 50-d in its weights): tags without the vectors' package."""
    tagger = Tagger.load("en-ner")
    assert tagger.config.data.task == "ner" and tagger.config.model.output.crf
    words = "John Smith visited Paris with the European Union delegation .".split()
    tags = tagger.tag([words])[0].tags
    assert tags == ["B-PER", "I-PER", "O", "B-LOC", "O", "O", "B-ORG", "I-ORG", "O", "O"]
