"""Model cards: `easyfirst export RUN -o OUT` writes OUT/README.md from the run's config and metrics."""

from __future__ import annotations

import json
import shlex

import pytest

from conftest import SAMPLE, run_cli, said
from easyfirst.cli.flags import FLAG_OF
from easyfirst.config import Config
from easyfirst.training.loop import train
from easyfirst.viz.model_card import model_card, training_command


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    config = Config.for_task("pos")
    config.data.train = config.data.dev = config.data.test = str(SAMPLE)
    config.train.epochs = 2
    config.model.decoder.attention_temperature = 0.25  # a setting away from the defaults, for the command
    out = tmp_path_factory.mktemp("card") / "run"
    train(config, out)
    return out


def test_export_with_o_writes_the_model_and_its_card(run_dir, tmp_path):
    out = tmp_path / "shipped"
    result = run_cli("export", run_dir, "-o", out)
    assert result.returncode == 0, result.stderr.decode()
    assert {"model.pt", "config.json", "vocab.json", "README.md"} <= {p.name for p in out.iterdir()}
    card = (out / "README.md").read_text(encoding="utf-8")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    # the scores are the run's metrics.json, in percent, at its best epoch
    dev, test = metrics["dev"]["accuracy"], metrics["test"]["accuracy"]
    assert f"| accuracy | {100 * dev:.2f} | {100 * test:.2f} |" in card
    assert f"At the best epoch, {metrics['best_epoch']} of 2" in card
    assert "temperature 0.25" in card and "pretrained word vectors" in card
    assert "float16" in card  # exported with --half, the default
    assert str(SAMPLE) in card  # the data it was trained on


def _config_of(command: str, monkeypatch, tmp_path) -> Config:
    """The config that ``easyfirst train`` builds from ``command`` (its first line), read where training
    would begin (data files and vectors are not opened)."""
    from typer.testing import CliRunner

    import easyfirst.cli.train as train_verb
    from easyfirst.cli import app

    built = []
    monkeypatch.setattr(train_verb, "check_paths", lambda cfg: None)
    monkeypatch.setattr(train_verb, "run_training", lambda cfg, output, device: built.append(cfg))
    monkeypatch.chdir(tmp_path)  # the command's --output RUN is made there
    args = shlex.split(command.splitlines()[0])
    assert args[:2] == ["easyfirst", "train"]
    result = CliRunner().invoke(app, args[1:])
    assert result.exit_code == 0, result.output
    return built[0]


def test_the_cards_command_trains_the_same_configuration(monkeypatch, tmp_path):
    """The card's command, run through the CLI itself, builds the config the run was trained with, and
    says it with flags where flags exist."""
    config = Config.for_task("ner")
    config.data.train, config.data.dev = "/data/esp.train", "/data/esp.testa"
    config.model.decoder.attention_temperature = 0.25
    config.model.decoder.sketch_steps = None  # N = L, the flag's "L"
    config.model.output.crf = False  # a --no- flag
    config.loss.class_weights = {"B-PER": 2.0}
    config.train.reduction, config.train.seed, config.train.epochs = "mean", 7, 3
    command = training_command(config, FLAG_OF)
    rebuilt = _config_of(command, monkeypatch, tmp_path)
    assert rebuilt.to_dict() == config.to_dict()
    args = shlex.split(command)
    assert {"--attention-temperature", "--sketch-steps", "--no-crf", "--reduction"} <= set(args)
    assert args.count("--set") == 1  # the class weights: a table, which only --set gives whole


def test_the_cards_command_names_the_vectors_and_leaves_what_they_decide(monkeypatch, tmp_path):
    """A run with a named uncased set: the command gives --pretrained NAME, and not the word size or the
    lower-cased lookups that the vectors set (training sets them again from the same vectors)."""
    config = Config.for_task("pos")
    e = config.model.embedder
    e.pretrained, e.word_dim, e.lowercase = "glove-6b-50d", 50, True
    e.pretrained_covered = 9000
    command = training_command(config, FLAG_OF)
    args = shlex.split(command)
    assert args[args.index("--pretrained") + 1] == "glove-6b-50d"
    assert "--set" not in args and "--lowercase" not in args and "--word-dim" not in args
    rebuilt = _config_of(command, monkeypatch, tmp_path)
    # the word size is set by training
    assert rebuilt.model.embedder.pretrained == "glove-6b-50d" and rebuilt.model.embedder.word_dim != 50
    # a set of vectors given by path may be cased: lower-cased lookups stay in the command
    config.model.embedder.pretrained = "/vectors/cased.txt"
    assert "model.lowercase=true" in training_command(config, FLAG_OF)


@pytest.mark.parametrize(("temperature", "said"), [(0.25, False), (0.35, True)])
def test_the_cards_command_leaves_the_tasks_defaults_with_vectors(monkeypatch, tmp_path, temperature, said):
    """POS with vectors trains at temperature 0.25 unless told otherwise: a run at 0.25 needs no
    --attention-temperature in its command, a run given 0.35 with vectors does, and both rebuild."""
    config = Config.for_task("pos")
    e = config.model.embedder
    e.pretrained, e.word_dim, e.lowercase = "glove-6b-50d", 50, True
    config.model.decoder.attention_temperature = temperature
    command = training_command(config, FLAG_OF)
    assert ("--attention-temperature" in shlex.split(command)) is said
    rebuilt = _config_of(command, monkeypatch, tmp_path)
    assert rebuilt.model.decoder.attention_temperature == temperature


@pytest.mark.parametrize("vectors", [True, False])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_the_cards_command_of_a_ner_run_says_only_what_the_recipe_does_not(
    monkeypatch, tmp_path, optimizer, vectors
):
    """NER trains SGD with momentum and a decaying rate, with vectors or without (issue #44): a run of
    the recipe needs no optimizer flag; a run with Adam says --optimizer adam and --lr, not the SGD
    settings it never took, and both commands rebuild the run's config."""
    config = Config.for_task("ner")
    if vectors:
        config.set_dotted('model.pretrained="glove-6b-50d"')
    if optimizer == "adam":
        config.set_dotted('train.optimizer="adam"')
        config.set_dotted("train.lr=0.002")
    config = config.resolved("test").thawed()
    if vectors:
        e = config.model.embedder
        e.word_dim, e.lowercase = 50, True  # what the vectors set when training reads them
    args = shlex.split(training_command(config, FLAG_OF))
    flags = {"--optimizer", "--lr", "--momentum", "--lr-decay", "--batch-size", "--epochs"} & set(args)
    assert flags == ({"--epochs"} if optimizer == "sgd" else {"--optimizer", "--lr", "--epochs"})
    rebuilt, trained = _config_of(shlex.join(args), monkeypatch, tmp_path).to_dict(), config.to_dict()
    if vectors:
        for table in (rebuilt, trained):  # what reading the vectors sets, which the rebuild does not do
            del table["model"]["word_dim"], table["model"]["lowercase"]
    assert rebuilt == trained


def test_export_drops_the_affix_vocabularies_a_model_without_affixes_never_reads(tmp_path):
    """A run with affix_dim = 0 saved before training left the n-grams out (its vocab.json holds them):
    the export carries none, says so on its card, and tags as the run does."""
    from easyfirst.api import Tagger

    config = Config.for_task("pos")
    config.data.train = config.data.dev = str(SAMPLE)
    config.train.epochs, config.model.embedder.affix_dim = 1, 0
    run = tmp_path / "run"
    train(config, run)
    vocab = json.loads((run / "vocab.json").read_text())
    vocab["prefixes"]["symbols"] = vocab["suffixes"]["symbols"] = ["T", "Th", "e", "he"]  # as before
    (run / "vocab.json").write_text(json.dumps(vocab))
    # float32 weights: float16 could flip a tie of this one-epoch model, which is not what is tested
    done = run_cli("export", run, "-o", tmp_path / "out", "--no-half")
    assert done.returncode == 0, done.stderr.decode()
    exported = json.loads((tmp_path / "out" / "vocab.json").read_text())
    assert exported["prefixes"]["symbols"] == exported["suffixes"]["symbols"] == []
    assert exported["words"] == vocab["words"]
    assert "| affix n-grams | none |" in (tmp_path / "out" / "README.md").read_text()
    text = "The cat sat on the mat . Dogs bark ."
    assert Tagger.load(tmp_path / "out").tag(text) == Tagger.load(run).tag(text)


def test_export_needs_one_output_folder(run_dir, tmp_path):
    none = run_cli("export", run_dir)
    assert none.returncode == 2 and "no output folder" in none.stderr.decode()
    both = run_cli("export", run_dir, tmp_path / "a", "-o", tmp_path / "b")
    assert both.returncode == 2 and "not both" in both.stderr.decode()
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    ("counts", "who"),
    [
        (
            {"workers": 2, "processes": 1, "threads": 2},
            "by 2 Hogwild worker processes, one torch thread each",
        ),
        ({"workers": 1, "processes": 2, "threads": 4}, "by 2 data-parallel processes (torchrun), 4 torch"),
        ({"workers": 1, "processes": 1, "threads": 1}, "by one process with 1 torch thread(s)"),
    ],
)
def test_the_card_says_who_trained_the_model_and_both_times_per_epoch(counts, who):
    """A run of 2 Hogwild workers said '2 thread(s) and 1 process(es)' and gave its training seconds as
    the epoch's: the card names workers and processes truthfully and labels both times."""
    from easyfirst.viz.model_card import model_card

    metrics = {
        "dev": {"accuracy": 0.9},
        "best_epoch": 1,
        "epochs": [{}],
        "device": "cpu",
        "seconds_per_epoch": 43.2,
        "eval_seconds_per_epoch": 9.6,
        **counts,
    }
    card = model_card(
        Config.for_task("pos"), metrics, {"words": 10, "tags": 3}, 100, "runs/x", False, flags=FLAG_OF
    )
    assert f"Trained on cpu {who}" in card
    assert "43 s of training and 10 s of evaluation (dev scores, saving) per epoch." in card
    assert "process(es)" not in card
    card = model_card(
        Config.for_task("pos"),
        {**metrics, "processor": "Example CPU 3000"},
        {"words": 10, "tags": 3},
        100,
        "runs/x",
        False,
        flags=FLAG_OF,
    )
    assert f"Trained on cpu (Example CPU 3000) {who}" in card  # which machine the seconds are of
    card = model_card(
        Config.for_task("pos"),
        {**metrics, "device": "cuda:0", "processor": "Example CPU 3000"},
        {"words": 10, "tags": 3},
        100,
        "runs/x",
        False,
        flags=FLAG_OF,
    )
    assert f"Trained on cuda:0 (host CPU Example CPU 3000) {who}" in card  # the GPU ran it, not that CPU
    older = {k: v for k, v in metrics.items() if k != "eval_seconds_per_epoch"}
    card = model_card(
        Config.for_task("pos"), older, {"words": 10, "tags": 3}, 100, "runs/x", False, flags=FLAG_OF
    )
    assert "43 s of training per epoch (evaluation not timed)." in card


def test_the_card_names_the_encoder_and_the_learned_scheme():
    config = Config.for_task("ner")
    config.model.encoder.encoder_layers, config.model.encoder.hidden_dim = 2, 100
    config.model.dropout_kind, config.model.dropout = "locked", 0.3
    config.model.embedder.embedding_dropout = 0.5
    card = model_card(config, None, {"words": 10, "tags": 3}, 100, "runs/x", False, flags=FLAG_OF)
    assert (
        "| encoder | 2 stacked BiLSTM layers of 100 units per direction; locked dropout 0.5 on the "
        "embeddings, 0.3 between layers, 0.3 on the outputs |" in card
    )
    assert "| output layer | CRF, BIOES tags (read out as BIO) |" in card  # NER's default scheme
    assert "--encoder-layers 2" in card and "--scheme" not in card  # the command to train it again
    plain = model_card(
        Config.for_task("pos"), None, {"words": 10, "tags": 3}, 100, "runs/x", False, flags=FLAG_OF
    )
    assert "| encoder | a BiLSTM of 50 units per direction; naive dropout 0.2 |" in plain


def test_a_run_that_stopped_early_is_exported_evaluated_and_plotted_saying_so(run_dir, tmp_path):
    """A run interrupted at epoch 1 of 20 (no metrics.json, its checkpoint at the start of epoch 2):
    export, evaluate and plot each say so in one line, and the card states the epochs done, gives the
    command that trains the rest, and has no "scores above" to refer to."""
    import shutil

    import torch

    stopped = tmp_path / "stopped"
    shutil.copytree(run_dir, stopped)
    (stopped / "metrics.json").unlink()
    config = json.loads((stopped / "config.json").read_text())
    config["train"]["epochs"] = 20
    (stopped / "config.json").write_text(json.dumps(config))
    torch.save({"epoch": 2, "step": 0}, stopped / "checkpoint.pt")  # what a resume reads of it here
    note = (
        f"note: {stopped} stopped after epoch 1 of 20: its model is the best of those epochs "
        f"(easyfirst train --resume {stopped} trains the rest)"
    )
    out = tmp_path / "shipped"
    exported = run_cli("export", stopped, "-o", out)
    assert exported.returncode == 0, exported.stderr.decode()
    assert exported.stderr.decode().splitlines()[0] == note
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "This model's run stopped after epoch 1 of 20" in card
    assert f"```bash\neasyfirst train --resume {stopped}\n```" in card
    assert "None: the run stopped after epoch 1 of 20, before its best model was scored" in card
    assert "scores above" not in card
    evaluated = run_cli("evaluate", SAMPLE, "-m", stopped)
    assert evaluated.returncode == 0 and said(evaluated.stderr).splitlines() == [note]
    plotted = run_cli("plot", "-m", stopped, "--text", "She reads .", "--terminal")
    assert plotted.returncode == 0 and plotted.stderr.decode().splitlines()[0] == note
    finished = run_cli("evaluate", SAMPLE, "-m", run_dir)  # a run that finished its epochs: no note
    assert finished.returncode == 0 and "note:" not in finished.stderr.decode()
