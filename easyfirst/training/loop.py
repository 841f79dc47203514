"""The training loop: the configured optimizer (Adagrad by default, as in the paper) with gradient-norm
clipping, the best epoch chosen on the task's dev score (``Task.selection``: accuracy for POS, entity F1
for NER, F1-MULT for QE, of MT words and gaps together for a model that predicts gaps; see
easyfirst.tasks; ``[train] best_metric`` chooses another).

A run is four named steps, each readable alone: :func:`prepare_run` (data, vocabularies, model,
optimizer, and the state of an interrupted run), :func:`easyfirst.training.epochs.train_epoch` (one pass
over the batches, by one process or by Hogwild workers),
:func:`easyfirst.training.selection.evaluate_and_select` (dev score, best model, then
:func:`easyfirst.training.checkpoints.save_checkpoint`), and
:func:`easyfirst.training.selection.finish` (the best model on dev and test, ``metrics.json``, the
summary table).

``train(config, output)`` writes to the run folder ``output``:

- the model of the best dev epoch (``model.pt``, ``config.json``, ``vocab.json``; see easyfirst.runs);
- ``metrics.json``: ``{"dev": {"accuracy": …}, "test": {"accuracy": …}, "best_epoch": …, "epochs": […]}``
  with accuracies as fractions (for NER also ``f1``, ``precision``, ``recall`` and ``per_type``);
- ``train.log``: what was printed, without colours;
- ``checkpoint.pt``: the training state at the end of the last epoch (and every ``checkpoint_minutes``
  of training and ``checkpoint_every`` steps within one), from which ``easyfirst train --resume``
  continues; kept when the run ends, since ``--resume RUN --epochs N`` trains a finished run longer
  (docs/training.md, "Interrupted training").
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import torch
from rich.console import Console
from rich.markup import escape

from easyfirst.atomic import read_json, write_json
from easyfirst.backends.chooser import run_plan
from easyfirst.config import Config
from easyfirst.data.batching import encode
from easyfirst.data.features import active_features, build_feature_vocabs, word_dropout_probabilities
from easyfirst.data.sentence import Sentence
from easyfirst.data.vectors import open_vectors
from easyfirst.data.vocab import Vocabularies
from easyfirst.errors import InputError
from easyfirst.losses import class_weight_vector
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.parallel.workers import Workers
from easyfirst.resources import CONFIG_FILE, VOCAB_FILE
from easyfirst.tasks import get_task
from easyfirst.training import anneal, distributed, hogwild
from easyfirst.training.checkpoints import (
    CHECKPOINT_FILE,
    load_checkpoint,
    remove_run_temporaries,
    restore_checkpoint,
)
from easyfirst.training.epochs import hogwild_work, start_epoch, train_epoch
from easyfirst.training.optim import make_optimizer
from easyfirst.training.reporting import RunLog, duration, length_cap
from easyfirst.training.selection import evaluate_and_select, finish, stop_early
from easyfirst.training.state import Run, RunProgress, Splits


def load_splits(config: Config) -> Splits:
    """Read the train/dev/test files named in the config.

    With no file named at all, the task's default data set is used (see easyfirst.data.datasets). With a
    training file, a dev file is required (it chooses the best epoch) and a test file is optional.
    """
    from easyfirst.data.datasets import DATASETS, resolve_split

    d = config.data
    task = get_task(d.task)
    paths: dict[str, str | None] = {"train": d.train, "dev": d.dev, "test": d.test}
    if d.train is None and d.dev is None and d.test is None:
        dataset = DATASETS[task.dataset]
        paths = {
            split: str(resolve_split(dataset.name, split)) if split in dataset.splits else None
            for split in paths
        }
    elif d.train is None or d.dev is None:
        raise InputError(
            "give both --train and --dev (the dev set chooses the best epoch), or neither to use "
            f"the {d.task} task's default data set"
        )
    sentences: dict[str, list[Sentence]] = {}
    for split, path in paths.items():
        if path is None:
            continue
        task.check_exists(path, split)
        sentences[split] = task.read(path, d)
    if not sentences["train"]:
        raise InputError("the training file has no sentences", paths["train"])
    if not sentences["dev"]:
        raise InputError("the dev file has no sentences", paths["dev"])
    return Splits(sentences["train"], sentences["dev"], sentences.get("test") or None, paths)


def seed_everything(seed: int) -> torch.Generator:
    random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def train(
    config: Config,
    output: str | Path,
    *,
    device: str = "cpu",
    console: Console | None = None,
    resume: bool = False,
    on_epoch: Callable[[int, float], bool] | None = None,
) -> dict:
    """Train a tagger as configured, writing the run folder ``output``; returns the metrics.

    With ``resume``, continue the run in ``output`` from its ``checkpoint.pt`` (model, optimizer, random
    number generators, data order and position within the epoch), reaching the same result as a run
    that was never interrupted. ``on_epoch(epoch, dev_score)``, called after each epoch's dev score
    (the one that chooses the best epoch), ends the training there when it returns True (a pruned
    trial of ``easyfirst tune``); the run then finishes with the epochs it has.
    """
    started = time.perf_counter()
    console = console or Console(stderr=True)
    output = Path(output)
    group, device = distributed.start(device)  # one process, or one of torchrun's (see distributed.py)
    try:  # a --workers the regime cannot take is refused before the run folder is written
        hogwild.choose_workers(
            config.train.workers, config.train.batch_size, torch.device(device), 0, group.parallel
        )
    except InputError:
        distributed.stop(group)
        raise
    if group.main:
        output.mkdir(parents=True, exist_ok=True)
        remove_run_temporaries(output)
    log = RunLog(console, output / "train.log", append=resume) if group.main else distributed.SilentLog()
    run = None
    try:
        run = prepare_run(config, output, torch.device(device), log, resume, group)
        if config.train.anneal_epochs:
            log(anneal.describe(config.train))
        log(f"[bold]ready[/] in {duration(time.perf_counter() - started)} (data read, model built)")
        for epoch in range(run.progress.epoch, config.train.epochs + 1):
            start_epoch(run, epoch)
            seconds = train_epoch(run, epoch)
            evaluate_and_select(run, epoch, seconds)
            pruned = on_epoch is not None and on_epoch(epoch, run.progress.history[-1][f"dev_{run.metric}"])
            if pruned or stop_early(run, epoch):
                break
        return finish(run, started) if group.main else {}
    finally:
        if run is not None and run.workers is not None:
            run.workers.close()
        log.close()
        distributed.stop(group)


def build_model(
    builder: Config, train_sents: list[Sentence], log: RunLog
) -> tuple[Config, Vocabularies, EasyFirstTagger]:
    """A new run's resolved config, vocabularies and model. With pretrained vectors
    (easyfirst.data.vectors) the config takes the settings they decide and how many words they cover
    before it is resolved; their first words join the vocabulary and their rows the word embeddings."""
    m = builder.model.embedder
    vectors = open_vectors(m.pretrained) if m.pretrained else None
    for note in builder.follow_vectors(vectors) if vectors else ():
        log(note)
    source = open_vectors(m.source_pretrained) if m.source_pretrained else None
    if source:
        builder.follow_vectors(source, size="source_dim")
    vocabs = build_vocabularies(builder, train_sents)
    added = 0  # the vectors' words added to the vocabulary
    if vectors and m.pretrained_words > 0:
        added = vocabs.add_pretrained_words(vectors.first_words(m.pretrained_words))
        log(
            f"pretrained vectors: {added:,} of their first {m.pretrained_words:,} words added to the "
            "vocabulary (words not in the training set)"
        )
    words = vectors.lookup(vocabs.words.stoi, vocabs.lowercase) if vectors else None
    aligned = source.lookup_folded(vocabs.features["source"].stoi) if source else None
    if words is not None:
        m.pretrained_covered = len(words[0])
    if aligned is not None:
        m.source_pretrained_covered = len(aligned[0])
    config = builder.resolved("the run's config")
    m = config.model.embedder
    model = EasyFirstTagger(config.model, config.loss, vocabs, get_task(config.data.task).outputs)
    if vectors:
        model.embedder.load_pretrained(vectors, vocabs, found=words)
        training = len(vocabs.words) - 2 - added  # the words added from the vectors all have one
        log(
            f"[bold]vectors[/] {vectors.name}, {m.word_dim} dimensions"
            f"{', uncased' if vectors.uncased else ''}: they cover {m.pretrained_covered:,} of the "
            f"{len(vocabs.words) - 2:,} words ({m.pretrained_covered - added:,} of the {training:,} from "
            "the training set)" + ("; kept as read (--freeze-vectors)" if m.freeze_vectors else "")
        )
    if source:
        model.embedder.load_pretrained(source, vocabs, feature="source", found=aligned)
        log(
            f"[bold]source vectors[/] {source.name}, {m.source_dim} dimensions"
            f"{', uncased, matched case-insensitively' if source.uncased else ''}: they cover "
            f"{m.source_pretrained_covered:,} of the {len(vocabs.features['source']) - 2:,} aligned source words"
        )
    if model.embedder.transformer is not None:  # the run folder records which weights it was given
        config = config.replaced("model", transformer_sha256=model.embedder.transformer.sha256)
        model.settings = config.model
    return config, vocabs, model


def log_settings(
    log: RunLog, config: Config, model: EasyFirstTagger, vocabs: Vocabularies, device: torch.device
) -> None:
    """The training log's model, output and updates lines."""
    t = config.train
    m = config.model
    e, h, d = m.embedder, m.encoder, m.decoder
    steps = "N = L" if d.sketch_steps is None else f"N = {d.sketch_steps}"
    kind = m.model if m.decodes else "bilstm (N = 0)"
    attention = d.attention if m.decodes else "-"
    if m.decodes and d.attention_temperature != 1 and not t.anneal_epochs:  # --easy-first sets it
        attention += f" at temperature {d.attention_temperature:g}"
    chars = f"; characters: {e.char_dim}-d, " + (
        f"a CNN of {e.char_filters} filters of {e.char_window}"
        if e.char_encoder == "cnn"
        else f"a BiLSTM of {e.char_filters // 2} units per direction"
    )
    layers = f"{h.encoder_layers} BiLSTM layers" if h.encoder_layers > 1 else "a BiLSTM"
    rates = [m.dropout_at(place) for place in ("embedding", "encoder", "output")][
        :: 1 if h.encoder_layers > 1 else 2
    ]
    dropout = f"{m.dropout_kind} dropout {'/'.join(f'{r:g}' for r in rates)}"
    log(
        f"[bold]model[/] {kind}, attention {attention}, {steps}; {layers} of {h.hidden_dim} units per "
        f"direction, {dropout}; "
        f"{sum(p.numel() for p in model.parameters()):,} parameters; {len(vocabs.words):,} words "
        f"({f'{e.affix_dim}-d affixes' if e.affix_dim else 'no affixes'}), "
        f"{len(vocabs.tags)} tags{chars if e.char_dim else ''}"
    )
    if model.embedder.transformer is not None:
        log(f"[bold]transformer[/] {model.embedder.transformer.describe(e, t)}")
    log(f"[bold]output[/] {model.describe_output()}")
    per_update = "1 sentence" if t.batch_size == 1 else f"{t.batch_size} sentences"
    embedding_lr = "" if t.embedding_lr is None else f" (embedding tables {t.embedding_lr:g})"
    momentum = f" with momentum {t.momentum:g}" if t.momentum else ""
    decay = f" / (1 + {t.lr_decay:g}·(epoch − 1))" if t.lr_decay else ""
    plural = "s" * (t.patience > 1)
    patience = (
        f"; early stopping after {t.patience} epoch{plural} without a better dev score" if t.patience else ""
    )
    log(
        f"[bold]updates[/] {t.optimizer}{momentum}, lr {t.lr:g}{decay}{embedding_lr}, gradient norm clipped at "
        f"{t.clip:g}{patience}; {per_update} per "
        f"update, the loss {'summed' if t.reduction == 'sum' else 'averaged'} over its words; training "
        f"sentences {'shuffled every epoch' if t.shuffle else 'in file order'}"
    )
    # one line for both, where the updates and the dev scores run on the same backend (easyfirst.backends.chooser)
    updates, scores = (
        run_plan(m, size, device.type, training, t.backend).describe()
        for size, training in ((t.batch_size, True), (t.eval_batch_size, False))
    )
    said = updates if updates == scores else f"{updates} for the updates; {scores} for the dev scores"
    log(f"[bold]backend[/] {escape(said)}")


def prepare_run(
    config: Config, output: Path, device: torch.device, log: RunLog, resume: bool, group: distributed.Group
) -> Run:
    """Read the data, resolve the run's config once (what the data and the vectors decide: the data
    set's files, the task's settings that depend on the training data, the vectors' sizes; read-only
    from here on), build (or, resuming, reload) the vocabularies, the model and the optimizer, and
    restore an interrupted run's state from its checkpoint."""
    t = config.train
    task = get_task(config.data.task)
    if t.threads > 0:
        torch.set_num_threads(t.threads)
    generator = seed_everything(t.seed)
    checkpoint = load_checkpoint(output / CHECKPOINT_FILE, t.epochs) if resume else None
    splits = load_splits(config)
    builder = config.thawed()  # the caller's config stays as it was
    builder.data.train, builder.data.dev, builder.data.test = (
        splits.paths[k] for k in ("train", "dev", "test")
    )
    train_sents, kept, warning = length_cap(splits.train, config.data.max_train_length)
    task.prepare(builder, train_sents)  # settings that depend on the data (which extra outputs to train)
    metric, metric_label = task.scoring.selection(builder)
    columns = task.scoring.report_columns(builder)
    check_metric(metric, task, columns)
    test = f"test {splits.paths['test']} ({len(splits.test)})" if splits.test else "no test set"
    log(
        f"[bold]data[/] train {splits.paths['train']} ({kept}), dev {splits.paths['dev']} ({len(splits.dev)}), "
        f"{test}"
    )
    if warning:
        log(warning)
    if resume:
        config = builder.resolved(str(output / CONFIG_FILE))
        vocabs = Vocabularies.from_json(read_json(output / VOCAB_FILE))
        model = EasyFirstTagger(config.model, config.loss, vocabs, task.outputs)
    else:
        config, vocabs, model = build_model(builder, train_sents, log)
    if group.main and not resume:
        write_json(output / CONFIG_FILE, config.to_dict())  # so that an interrupted run can be resumed
        write_json(output / VOCAB_FILE, vocabs.to_json())
    model.to(device)
    model.backend = t.backend  # forced, or "auto" (easyfirst.backends.chooser)
    trainer = distributed.wrap(model, group, device)  # the model, or DDP around it (averages gradients)
    if group.parallel:
        log(
            f"[bold]data-parallel[/] {group.size} processes ({distributed.backend()}), each a shard of every "
            f"epoch's batches: {group.size} × {t.batch_size} sentences per update"
        )
    log_settings(log, config, model, vocabs, device)
    drop_probabilities = None
    if config.model.embedder.word_dropout > 0:
        counts = Counter(w.lower() if vocabs.lowercase else w for s in train_sents for w in s.words)
        drop_probabilities = word_dropout_probabilities(
            counts, vocabs.words, config.model.embedder.word_dropout
        )
    optimizer = make_optimizer(
        t.optimizer, t.lr, model, not group.parallel, t.embedding_lr, t.momentum, t.transformer_lr
    )
    run = Run(
        config=config,
        output=output,
        device=device,
        log=log,
        group=group,
        task=task,
        splits=splits,
        train_sents=train_sents,
        vocabs=vocabs,
        model=model,
        trainer=trainer,
        optimizer=optimizer,
        generator=generator,
        train_items=[
            encode(vocabs, s.words, s.tags, s.extra, task.targets(s), heads=model.outputs)
            for s in train_sents
        ],
        dev_items=[encode(vocabs, s.words, extra=s.extra, heads=model.outputs) for s in splits.dev],
        drop_probabilities=drop_probabilities,
        progress=RunProgress(best={metric: -1.0, "epoch": 0}),
        metric=metric,
        metric_label=metric_label,
        columns=columns,
    )
    distributed.seed_dropout(t.seed, group)
    count = hogwild.choose_workers(t.workers, t.batch_size, device, len(train_sents), group.parallel)
    if checkpoint is not None:
        restore_checkpoint(run, checkpoint, count)
    warm_transformer(run)  # before Hogwild's workers fork: they share what it computed
    if count > 1:
        start_hogwild(run, count)
    return run


def warm_transformer(run: Run) -> None:
    """A frozen transformer's vectors of every training and dev sentence, computed once for the run
    (easyfirst.model.transformer), within ``transformer_cache_mb``."""
    transformer = run.model.embedder.transformer
    if transformer is None or transformer.finetune:
        return
    transformer.start_cache(run.config.train.transformer_cache_mb)
    started = time.perf_counter()
    sentences = [s.words for s in run.train_sents] + [s.words for s in run.splits.dev]
    if run.model.embedder.transformer_source:  # QE: the source sentences too
        sentences += [s.extra["source"] for s in [*run.train_sents, *run.splits.dev]]
    if transformer.cache is not None:
        run.log(
            f"[bold]transformer[/] computing the vectors of {len(sentences):,} sentences, once for the run"
        )
    count = transformer.warm(sentences, run.device)
    cache = transformer.cache
    if cache is None:
        return
    run.log(
        f"[bold]transformer[/] the vectors of {count:,} sentences computed in "
        f"{time.perf_counter() - started:.1f} s and kept for the run "
        f"({cache.size / 2**20:,.0f} MB of {run.config.train.transformer_cache_mb:,})"
    )
    distinct, kept = len({tuple(s) for s in sentences if s}), len(cache.rows)
    if kept < distinct:  # the first ones were dropped: every epoch computes them again
        megabytes = math.ceil(cache.size / max(kept, 1) * distinct / 2**20 * 1.05)
        advice = f"; --transformer-cache-mb {megabytes:,} keeps them all" if kept else ""
        run.log(
            f"[bold yellow]transformer[/] only {kept:,} of the {distinct:,} sentences fit: the others are "
            f"computed again every epoch{advice}"
        )


def check_metric(metric: str, task, columns) -> None:
    """Refuse a ``best_metric`` that is not one of the dev scores of ``task``'s model."""
    known = {"accuracy", task.scoring.metric, *task.scoring.selectable, *(key for key, _ in columns)}
    if metric not in known:
        raise InputError(
            f"best_metric {metric!r} is not a dev score of this model (known: {', '.join(sorted(known))})"
        )


def start_hogwild(run: Run, count: int) -> None:
    """Share the model and the optimizer's state, and fork the other ``count`` − 1 Hogwild workers."""
    hogwild.share(run.model, run.optimizer)  # after a checkpoint's state is in: loading replaces tensors
    run.workers = Workers(count, hogwild_work(run), hogwild.COLUMNS)
    run.log(
        f"[bold]hogwild[/] {count} processes update the shared parameters and {run.config.train.optimizer}'s "
        f"state without locks, each taking one sentence in {count} of an epoch (not repeatable bit for bit: "
        "--workers 1 is)"
    )


def build_vocabularies(config: Config, train_sents: list[Sentence]) -> Vocabularies:
    """Words, affixes, tags and each active feature's symbols, from the training sentences."""
    m = config.model.embedder
    vocabs = Vocabularies.build(
        ((s.words, s.tags) for s in train_sents),
        word_min_freq=m.word_min_freq,
        max_affix=m.max_affix,
        lowercase=m.lowercase,
    )
    if not m.affix_dim:  # no affix embeddings: vocab.json carries no n-grams
        vocabs = vocabs.without_affixes()
    vocabs.features = build_feature_vocabs(active_features(m), train_sents)
    class_weight_vector(config.loss.class_weights, vocabs.tags.itos)  # unknown tag: fail before writing
    return vocabs
