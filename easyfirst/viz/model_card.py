"""Model cards: a README.md for an exported model, written from its run's config and metrics.

``easyfirst export RUN -o OUT`` writes ``OUT/README.md`` with :func:`model_card`: what the model is, the
data it was trained on (and the data set's licence where the data is one of the known sets), a command
that trains the same configuration again, the dev and test scores of the best epoch, and what it is
for and where it is weak. Everything in the card comes from ``config.json``, ``metrics.json`` and the
vocabularies; nothing is measured here.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from easyfirst import __version__
from easyfirst.config import Config
from easyfirst.data.datasets import DATASETS
from easyfirst.data.transformer_models import NAMED as TRANSFORMERS
from easyfirst.data.vectors import NAMED
from easyfirst.tasks import get_task

MODEL_NAMES = {
    "nef-f": "NEF-F (full-state sketch)",
    "nef-s": "NEF-S (single-state sketch)",
    "bilstm": "BiLSTM",
}
# scores kept as counts or sizes, not fractions: shown as they are rather than as percentages
NOT_PERCENT = {"tokens", "mean_support", "sentences", "words", "gaps", "source_words"}
SPLIT_FLAGS = {"train": "--train", "dev": "--dev", "test": "--test"}
RUN_KEYS = {("train", "seed"), ("train", "epochs")}  # given as --seed and --epochs


def model_card(
    config: Config,
    metrics: dict | None,
    sizes: dict[str, int],
    parameters: int,
    source: str,
    half: bool,
    stopped: Any = None,
    flags: Mapping[str, Any] | None = None,
) -> str:
    """The card of a model trained with ``config``; ``metrics`` is the run's metrics.json (None if the
    run folder has none), ``sizes`` the number of words and tags in its vocabularies, ``source`` the run
    folder it was exported from; ``stopped``, for a run that stopped before its last epoch, how far it
    got (easyfirst.cli.common.Stopped: ``stopped after epoch 1 of 20``); ``flags``, the flags of the
    command line for its training command (:func:`training_command`)."""
    parts = [
        _summary(config, sizes, parameters, half),
        _data(config, metrics),
        _command(config, stopped, source, flags),
        _scores(metrics, stopped),
        _use_and_limits(config, half, scored=bool(metrics)),
        f"*Written by `easyfirst export` (easyfirst {__version__}) from the run folder `{source}`.*\n",
    ]
    return "\n".join(parts)


def _summary(config: Config, sizes: dict[str, int], parameters: int, half: bool) -> str:
    model, task = config.model, config.data.task
    d, e = model.decoder, model.embedder
    tag_set = get_task(task).format.tag_set(config.data)
    name = MODEL_NAMES.get(model.model, model.model)
    steps = "" if model.model == "bilstm" else f", N = {d.sketch_steps or 'L'} sketch steps"
    rows = [
        ("task", f"{task}: {get_task(task).summary}"),
        ("model", f"{name}{steps}"),
    ]
    if model.model != "bilstm":
        rows.append(("attention", f"{d.attention}, temperature {d.attention_temperature:g}"))
    rows.append(("encoder", _encoder(config)))
    output = "CRF" if model.output.crf else f"{config.loss.loss} loss"
    if config.data.scheme != "bio":
        output += f", {config.data.scheme.upper()} tags (read out as BIO)"
    added = f", and the vectors' first {e.pretrained_words:,}" if e.pretrained and e.pretrained_words else ""
    only = sizes.get("vector_words", 0)  # words no training sentence has: their vectors kept as read
    kept = f"; {only:,} of them known only to the vectors, their rows kept as read" if only else ""
    rows += [
        ("output layer", output),
        ("tags", f"{sizes['tags']}" + (f" ({tag_set})" if tag_set else "")),
        (
            "vocabulary",
            f"{sizes['words']:,} words (those seen at least {e.word_min_freq} times{added}){kept}",
        ),
        ("pretrained vectors", _vectors(config, sizes)),
        ("transformer", _transformer(config)),
        ("affix n-grams", _affixes(config)),
        ("character features", _characters(config)),
        ("parameters", f"{parameters:,}"),
        ("weights", "float16 (loaded as float32)" if half else "float32"),
    ]
    table = "\n".join(f"| {key} | {_cell(value)} |" for key, value in rows)
    return (
        f"# Model card: {name}, {task} tagger\n\n"
        f"An easy-first tagger (Martins & Kreutzer, EMNLP 2017) trained with easyfirst. Load it with\n"
        f'`easyfirst tag -m THIS_FOLDER` or `Tagger.load("THIS_FOLDER")`.\n\n'
        f"| | |\n|---|---|\n{table}\n"
    )


def _vectors(config: Config, sizes: dict[str, int]) -> str:
    """The pretrained vectors' row: the set, its size, what it is and how many of the words it covered."""
    model, rows = config.model.embedder, []
    if model.pretrained:
        named = NAMED.get(model.pretrained)
        covered = model.pretrained_covered
        share = "" if covered is None else f", covering {covered:,} of its {sizes['words'] - 2:,} words"
        share += ", kept as read (not fine-tuned)" if model.freeze_vectors else ""
        rows.append(
            f"`{model.pretrained}`, {model.word_dim} dimensions{share}"
            + (f"; {named.about}" if named else "")
        )
    if model.source_pretrained:  # QE: the aligned source words' table
        covered = model.source_pretrained_covered
        share = "" if covered is None else f", covering {covered:,} of them"
        rows.append(f"source words: `{model.source_pretrained}`, {model.source_dim} dimensions{share}")
    return "; ".join(rows) or "none"


def _transformer(config: Config) -> str:
    """The transformer's row: which one, how its vectors are made, and the hash of the weights it needs."""
    e = config.model.embedder
    if not e.transformer:
        return "none"
    named = TRANSFORMERS.get(e.transformer)
    layers = e.transformer_layers + (", a learned mix" if e.transformer_mix else "")
    return (
        f"`{e.transformer}`" + (f" ({named.about})" if named else "") + f": layers {layers}, "
        f"{e.transformer_pooling} of each word's sub-words, "
        + ("fine-tuned (saved with the model)" if e.transformer_finetune else "frozen (loaded by name)")
        + (f"; its weights' SHA-256 {e.transformer_sha256}" if e.transformer_sha256 else "")
    )


DROPOUT_PLACES = {"embedding": "on the embeddings", "encoder": "between layers", "output": "on the outputs"}


def _encoder(config: Config) -> str:
    """The encoder's row: its BiLSTM layers and units, and its dropout."""
    m, h = config.model, config.model.encoder
    layers = f"{h.encoder_layers} stacked BiLSTM layers" if h.encoder_layers > 1 else "a BiLSTM"
    rates = {place: m.dropout_at(place) for place in ("embedding", "encoder", "output")}
    if h.encoder_layers == 1:
        del rates["encoder"]
    same = len(set(rates.values())) == 1
    dropout = (
        f"{m.dropout:g}"
        if same
        else ", ".join(f"{rate:g} {DROPOUT_PLACES[place]}" for place, rate in rates.items())
    )
    return f"{layers} of {h.hidden_dim} units per direction; {m.dropout_kind} dropout {dropout}"


def _affixes(config: Config) -> str:
    m = config.model.embedder
    if not m.affix_dim:
        return "none"
    return f"prefixes and suffixes of up to {m.max_affix} characters, {m.affix_dim}-d, summed per word"


def _characters(config: Config) -> str:
    m = config.model.embedder
    if not m.char_dim:
        return "none"
    if m.char_encoder == "cnn":
        return (
            f"a CNN over {m.char_dim}-d character embeddings, {m.char_filters} filters of {m.char_window} "
            "characters, max-pooled over the word (Ma & Hovy 2016)"
        )
    return (
        f"a BiLSTM over {m.char_dim}-d character embeddings, {m.char_filters // 2} units per direction, "
        "its final states (Lample et al. 2016)"
    )


def known_dataset(path: str | None):
    """The registered data set (easyfirst.data.datasets) whose split ``path`` is, or None."""
    if not path:
        return None
    posix = Path(path).as_posix()
    for dataset in DATASETS.values():
        if any(posix.endswith(relative) for relative in dataset.splits.values()):
            return dataset
    return None


def _data(config: Config, metrics: dict | None) -> str:
    data = config.data
    lines = ["## Data", ""]
    for split in ("train", "dev", "test"):
        path = getattr(data, split)
        lines.append(f"- {split}: " + (f"`{path}`" if path else "none"))
    if metrics and "train_sentences" in metrics:
        dropped = metrics.get("dropped_long_sentences", 0)
        lines.append(
            f"- {metrics['train_sentences']:,} training sentences"
            + (f" ({dropped:,} over {data.max_train_length} words left out of training)" if dropped else "")
        )
    dataset = known_dataset(data.train)
    lines.append("")
    if dataset is not None:
        lines.append(f"The training data is {dataset.note}; the model's vocabulary comes from it.")
    else:
        lines.append(
            "The data's licence is not recorded in the run: check the licence of the training data "
            "before you share the model, since its vocabulary comes from that data."
        )
    return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return repr(value)


def training_command(config: Config, flags: Mapping[str, Any] | None = None) -> str:
    """An ``easyfirst train`` command for ``config``: its task, data, seed and epochs, and for every other
    key that differs from the task's defaults its flag (``--pretrained glove-6b-50d``), or a ``--set``
    where it has none or takes a table (class weights). ``flags`` maps a key (``model.pretrained``) to
    its flag, whose ``typed(value)`` is the flag as typed (easyfirst.cli.flags.FLAG_OF)."""
    flags, e = flags or {}, config.model.embedder
    task_defaults = Config.for_task(config.data.task)
    task = get_task(config.data.task)
    vectors = task.with_vectors if e.pretrained else {}
    # what training takes with vectors (POS: temperature 0.25; NER: no affixes, 50 epochs) goes unsaid
    recipe = vectors.get("train", {}).get("optimizer", task_defaults.train.optimizer)
    # as training reads it: a run's other optimizer took none of the task's optimizer settings (NER: SGD's)
    task_defaults.assign("train", "optimizer", config.train.optimizer, ("the run", None))
    task_defaults.leave_other_optimizers(task.defaults)
    task_defaults.update(vectors, "task with vectors", keep_given=True)
    task_defaults.train.optimizer = recipe  # and is said
    saved, defaults = config.to_dict(), task_defaults.to_dict()
    args = ["easyfirst", "train", "--task", config.data.task]
    for split, flag in SPLIT_FLAGS.items():
        if saved["data"].get(split):
            args += [flag, saved["data"][split]]
    unset = []
    # what training wrote from the pretrained vectors: their coverage, their size, lower-cased lookups
    derived = {("model", "pretrained_covered"), ("model", "source_pretrained_covered")}
    derived |= {("model", "transformer_sha256")}
    derived |= {("model", "word_dim")} if e.pretrained else set()
    derived |= {("model", "source_dim")} if e.source_pretrained else set()
    named = NAMED.get(e.pretrained or "")
    derived |= {("model", "lowercase")} if named and named.uncased else set()
    for section, values in saved.items():
        for key, value in values.items():
            if section == "data" and key in SPLIT_FLAGS or (section, key) in RUN_KEYS | derived:
                continue
            if value == defaults.get(section, {}).get(key):
                continue
            flag = flags.get(f"{section}.{key}")
            option = flag.typed(value) if flag is not None else []
            if value is None and not option:
                unset.append(f"{section}.{key}")
                continue
            args += option or ["--set", f"{section}.{key}={_toml(value)}"]
    args += ["--seed", str(config.train.seed), "--epochs", str(config.train.epochs), "--output", "RUN"]
    command = " ".join(shlex.quote(a) for a in args)
    if unset:
        command += f"\n# and unset (the task's default is a value): {', '.join(unset)}"
    return command


def _command(config: Config, stopped: Any = None, source: str = "RUN", flags=None) -> str:
    rest = ""
    if stopped is not None:
        rest = (
            f"This model's run {stopped}: the model is the best of the epochs done. In the run folder, "
            f"this command trains the rest of them:\n\n```bash\neasyfirst train --resume {shlex.quote(source)}\n```\n\n"
        )
    return (
        "## Training\n\n"
        + rest
        + "A command that trains this configuration again (the task's defaults plus every setting that "
        "differs from them; the same seed on another machine or version gives a model that differs "
        "at rounding level):\n\n"
        f"```bash\n{training_command(config, flags)}\n```\n"
    )


def _number(key: str, value: float) -> str:
    return f"{value:g}" if key in NOT_PERCENT or isinstance(value, int) else f"{100 * value:.2f}"


def _scores(metrics: dict | None, stopped: Any = None) -> str:
    if not metrics and stopped is not None:
        return (
            f"## Scores\n\nNone: the run {stopped}, before its best model was scored (metrics.json is "
            "written at the end of the last epoch). `easyfirst evaluate FILE -m MODEL` scores it.\n"
        )
    if not metrics:
        return "## Scores\n\nThe run folder had no metrics.json, so the card has no scores.\n"
    splits = [s for s in ("dev", "test") if isinstance(metrics.get(s), dict)]
    keys = [
        k
        for k in dict.fromkeys(k for s in splits for k in metrics[s])
        if all(isinstance(metrics[s].get(k), int | float) for s in splits)
    ]
    lines = [
        "## Scores",
        "",
        f"At the best epoch, {metrics.get('best_epoch', '?')} of {len(metrics.get('epochs', []))}, chosen on "
        f"dev by `{metrics.get('best_metric', 'the task metric')}`; scores in percent except counts "
        f"({', '.join(sorted(k for k in keys if k in NOT_PERCENT)) or 'none'}).",
        "",
        "| score | " + " | ".join(splits) + " |",
        "|---|" + "---:|" * len(splits),
    ]
    lines += [
        f"| {key} | " + " | ".join(_number(key, metrics[s][key]) for s in splits) + " |" for key in keys
    ]
    if stopped is not None:
        lines[2] += f" The run {stopped}."
    if "seconds_per_epoch" in metrics:
        lines += ["", _how_trained(metrics)]
    return "\n".join(lines) + "\n"


def _how_trained(metrics: dict) -> str:
    """Who trained the model and how long an epoch took, as metrics.json says: Hogwild workers are
    processes of one torch thread each (easyfirst.training.hogwild), torchrun's processes each have
    ``threads``; the epoch's training and evaluation seconds apart (older runs timed training only)."""
    workers, processes, threads = (
        metrics.get("workers", 1),
        metrics.get("processes", 1),
        metrics.get("threads"),
    )
    each = f"{threads} torch thread(s)" if threads else "an unrecorded number of threads"
    if workers > 1:
        who = f"{workers} Hogwild worker processes, one torch thread each"
    elif processes > 1:
        who = f"{processes} data-parallel processes (torchrun), {each} each"
    else:
        who = f"one process with {each}"
    per_epoch = f"{metrics['seconds_per_epoch']:.0f} s of training"
    if "eval_seconds_per_epoch" in metrics:
        per_epoch += (
            f" and {metrics['eval_seconds_per_epoch']:.0f} s of evaluation (dev scores, saving) per epoch"
        )
    else:
        per_epoch += " per epoch (evaluation not timed)"
    backend = f" Backend: {metrics['backend']}." if "backend" in metrics else ""
    device = metrics.get("device", "?")
    if "processor" in metrics:  # older runs did not record it; on a GPU it names the host's CPU
        device += f" ({metrics['processor']})" if device == "cpu" else f" (host CPU {metrics['processor']})"
    return f"Trained on {device} by {who}: {per_epoch}.{backend}"


def _use_and_limits(config: Config, half: bool, scored: bool = True) -> str:
    limits = [
        "It knows the words, spelling and tag set of its training data; expect lower scores on text "
        "of another domain, period or language.",
    ]
    if not config.model.embedder.pretrained:
        limits.append(
            "It was trained without pretrained word vectors: a word unseen in training (or seen once) "
            f"is an unknown word, tagged from {_unknown_word(config)}."
        )
    else:
        limits.append(
            "Its word embeddings started from the pretrained vectors above; the rows of the words it "
            "knows are part of its weights, so tagging needs neither the vectors nor their package. A "
            f"word outside its vocabulary is an unknown word, tagged from {_unknown_word(config)}."
        )
    if config.data.max_train_length:
        limits.append(
            f"Sentences over {config.data.max_train_length} words were left out of training; tagging "
            "takes any length (with N = L sketch steps, time grows with the square of the length)."
        )
    if half:
        limits.append(
            "Its weights are stored in float16: scores can differ from the run's in the last digit."
        )
    return (
        "## Intended use and limits\n\n"
        + (
            "Tagging and studying text like its training data: the scores above were measured on that "
            "data's dev and test splits only.\n\n"
            if scored
            else "Tagging and studying text like its training data (its scores were not measured).\n\n"
        )
        + "\n".join(f"- {limit}" for limit in limits)
        + "\n"
    )


def _unknown_word(config: Config) -> str:
    """What the model reads of a word it does not know: its affixes, characters, case, and the context."""
    parts = ["capitalization" if p == "case feature" else p for p in config.model.embedder.spelling()] + [
        "context"
    ]
    return "its " + (f"{', '.join(parts[:-1])} and {parts[-1]}" if len(parts) > 1 else parts[0])


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")
