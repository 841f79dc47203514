"""The training loop: Adagrad with gradient-norm clipping, best epoch chosen on the task's dev score
(accuracy for POS, entity F1 for NER; see easyfirst.tasks).

``train(config, output)`` writes to the run folder ``output``:

- the model of the best dev epoch (``model.pt``, ``config.json``, ``vocab.json``; see easyfirst.model.io);
- ``metrics.json``: ``{"dev": {"accuracy": …}, "test": {"accuracy": …}, "best_epoch": …, "epochs": […]}``
  with accuracies as fractions (for NER also ``f1``, ``precision``, ``recall`` and ``per_type``);
- ``train.log``: what was printed, without colours;
- ``checkpoint.pt``: the training state at the end of the last epoch (and every ``checkpoint_every``
  steps), from which ``easyfirst train --resume`` continues.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from easyfirst import distributed
from easyfirst.config import Config
from easyfirst.data.batching import IGNORE, INFERENCE_MAX_TOKENS, Encoded, encode, iterate_batches
from easyfirst.data.conllu import Sentence
from easyfirst.data.features import (
    active_features,
    build_feature_vocabs,
    drop_words,
    word_dropout_probabilities,
)
from easyfirst.data.vocab import Vocabularies
from easyfirst.errors import InputError
from easyfirst.losses import class_weight_vector
from easyfirst.metrics import distribution_report, tag_report
from easyfirst.model.io import (
    CONFIG_FILE,
    VOCAB_FILE,
    atomic_write,
    load_model,
    read_json,
    save_model,
    write_json,
)
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.tasks import get_task


@dataclass
class Splits:
    train: list[Sentence]
    dev: list[Sentence]
    test: list[Sentence] | None
    paths: dict[str, str]


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
        if not task.prefixed and not Path(path).is_file():
            raise InputError(f"{split} file not found", path)
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


def evaluate_sentences(
    model: EasyFirstTagger,
    vocabs: Vocabularies,
    items: list[Encoded],
    gold: list[Sentence],
    batch_size: int,
    device: torch.device,
    score=tag_report,
) -> dict:
    """Tag encoded sentences and score them against their gold tags with ``score`` (the task's), plus ECE
    and support of the output distributions."""
    model.eval()
    itos = vocabs.tags.itos
    predicted: list[list[str]] = [[] for _ in items]
    ids: list[torch.Tensor] = [torch.zeros(0, dtype=torch.long) for _ in items]
    distributions: list[torch.Tensor] = [torch.zeros(0, len(itos)) for _ in items]
    with torch.inference_mode():
        for batch in iterate_batches(items, batch_size, max_tokens=INFERENCE_MAX_TOKENS):
            batch = batch.to(device)
            best, probabilities = (t.cpu() for t in model.predict(model(batch)[0], batch.mask))
            for row, (index, n) in enumerate(zip(batch.order, batch.lengths.tolist(), strict=True)):
                predicted[index] = [itos[t] for t in best[row, :n].tolist()]
                ids[index], distributions[index] = best[row, :n], probabilities[row, :n]
    report = score([s.tags for s in gold], predicted)
    gold_ids = [
        torch.tensor([vocabs.tags.stoi.get(t, IGNORE) for t in s.tags], dtype=torch.long) for s in gold
    ]
    return report | distribution_report(distributions, ids, gold_ids)


class RunLog:
    """Prints to the console and appends the same text, uncoloured, to ``train.log``."""

    def __init__(self, console: Console, path: Path, append: bool = False):
        self.console, self.path = console, path
        self.file = path.open("a" if append else "w", encoding="utf-8")  # a new run starts a new log

    def __call__(self, *objects) -> None:
        self.console.print(*objects)
        capture = Console(file=self.file, width=120, color_system=None, force_terminal=False)
        capture.print(*objects)
        self.file.flush()

    def close(self) -> None:
        self.file.close()


CHECKPOINT_FILE = "checkpoint.pt"


def train(
    config: Config,
    output: str | Path,
    *,
    device: str = "cpu",
    console: Console | None = None,
    resume: bool = False,
) -> dict:
    """Train a tagger as configured, writing the run folder ``output``; returns the metrics.

    With ``resume``, continue the run in ``output`` from its ``checkpoint.pt`` (model, optimizer, random
    number generators, data order and position within the epoch), reaching the same result as a run
    that was never interrupted.
    """
    console = console or Console(stderr=True)
    output = Path(output)
    group, device = distributed.start(device)  # one process, or one of torchrun's (see distributed.py)
    if group.main:
        output.mkdir(parents=True, exist_ok=True)
    log = RunLog(console, output / "train.log", append=resume) if group.main else distributed.SilentLog()
    try:
        return _train(config, output, torch.device(device), log, resume, group)
    finally:
        log.close()
        distributed.stop(group)


def save_checkpoint(path: Path, **state) -> None:
    """Write the training state atomically; it holds tensors and plain values only (weights_only-loadable)."""
    atomic_write(path, lambda out: torch.save(state, out))


def load_checkpoint(path: Path) -> dict:
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise InputError(
            "no checkpoint to resume from (was this run started by `easyfirst train`?)", path
        ) from None
    except Exception as error:  # noqa: BLE001 (any unreadable file is the user's to fix)
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise InputError(f"not a readable checkpoint: {first}", path) from None


def _train(
    config: Config,
    output: Path,
    device: torch.device,
    log: RunLog,
    resume: bool,
    group: distributed.Group = distributed.Group(),
) -> dict:
    t = config.train
    spec = get_task(config.data.task)  # (`task` names the progress bar below)
    metric = spec.metric
    if t.threads > 0:
        torch.set_num_threads(t.threads)
    generator = seed_everything(t.seed)
    checkpoint = load_checkpoint(output / CHECKPOINT_FILE) if resume else None
    splits = load_splits(config)
    config.data.train, config.data.dev, config.data.test = (splits.paths[k] for k in ("train", "dev", "test"))
    limit = config.data.max_train_length
    train_sents = [s for s in splits.train if len(s.words) <= limit and s.words]
    dropped = len(splits.train) - len(train_sents)
    log(
        f"[bold]data[/] train {splits.paths['train']} ({len(train_sents)} sentences, {dropped} longer than "
        f"{limit} words dropped), dev {splits.paths['dev']} ({len(splits.dev)}), "
        f"test {splits.paths['test']} ({len(splits.test or [])})"
    )

    if resume:
        vocabs = Vocabularies.from_json(read_json(output / VOCAB_FILE))
    else:
        vocabs = Vocabularies.build(
            ((s.words, s.tags) for s in train_sents),
            word_min_freq=config.model.word_min_freq,
            max_affix=config.model.max_affix,
            lowercase=config.model.lowercase,
        )
        vocabs.features = build_feature_vocabs(active_features(config.model), train_sents)
        class_weight_vector(config.loss.class_weights, vocabs.tags.itos)  # unknown tag: fail before writing
        if group.main:
            write_json(output / CONFIG_FILE, config.to_dict())  # so that an interrupted run can be resumed
            write_json(output / VOCAB_FILE, vocabs.to_json())
    model = EasyFirstTagger(config, vocabs)
    if config.model.pretrained and not resume:
        covered = model.embedder.load_pretrained(config.model.pretrained, vocabs)
        log(f"pretrained vectors cover {covered} of {len(vocabs.words) - 2} words")
    model.to(device)
    trainer = distributed.wrap(model, group, device)  # the model, or DDP around it (averages gradients)
    if group.parallel:
        log(
            f"[bold]data-parallel[/] {group.size} processes ({distributed.backend()}), each a shard of every "
            f"epoch's batches: {group.size} × {config.train.batch_size} sentences per update"
        )
    steps = "N = L" if config.model.sketch_steps is None else f"N = {config.model.sketch_steps}"
    kind = config.model.model if config.decodes else "bilstm (N = 0)"
    log(
        f"[bold]model[/] {kind}, attention {config.model.attention if config.decodes else '-'}, {steps}; "
        f"{sum(p.numel() for p in model.parameters()):,} parameters; {len(vocabs.words):,} words, "
        f"{len(vocabs.tags)} tags"
    )
    log(f"[bold]output[/] {model.describe_output()}")

    train_items = [encode(vocabs, s.words, s.tags, s.extra) for s in train_sents]
    dev_items = [encode(vocabs, s.words, extra=s.extra) for s in splits.dev]
    drop_probabilities = None
    if config.model.word_dropout > 0:
        counts = Counter(w.lower() if vocabs.lowercase else w for s in train_sents for w in s.words)
        drop_probabilities = word_dropout_probabilities(counts, vocabs.words, config.model.word_dropout)
    optimizer = make_optimizer(config, model)
    distributed.seed_dropout(t.seed, group)
    tokens_per_epoch = sum(len(e) for e in train_items)
    history: list[dict] = []
    best = {metric: -1.0, "epoch": 0}
    first_epoch, first_step, total_loss, seen, elapsed = 1, 0, 0.0, 0, 0.0
    if checkpoint is not None:
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        generator.set_state(checkpoint["epoch_generator"])
        # each process's own dropout stream (older checkpoints kept process 0's alone)
        streams = checkpoint.get("torch_rng_by_process") or [checkpoint["torch_rng"]]
        torch.set_rng_state(streams[group.rank] if group.rank < len(streams) else streams[0])
        history, best = checkpoint["history"], checkpoint["best"]
        first_epoch, first_step = checkpoint["epoch"], checkpoint["step"]
        total_loss, seen, elapsed = checkpoint["loss_sum"], checkpoint["seen"], checkpoint["elapsed"]
        if not group.main:  # the checkpoint holds process 0's partial sums; the others start afresh
            total_loss, seen = 0.0, 0
        if checkpoint.get("processes", 1) != group.size:
            raise InputError(
                f"the run was trained by {checkpoint.get('processes', 1)} process(es); resume it with as many",
                output / CHECKPOINT_FILE,
            )
        log(f"resuming from {output / CHECKPOINT_FILE}: epoch {first_epoch}, after step {first_step}")
    console = log.console

    def checkpoint_now(epoch: int, step: int, epoch_generator: torch.Tensor, seconds: float) -> None:
        streams = distributed.gather(torch.get_rng_state(), group)  # every process calls this, at once
        if not group.main:
            return
        save_checkpoint(
            output / CHECKPOINT_FILE,
            model=model.state_dict(),
            optimizer=optimizer.state_dict(),
            epoch=epoch,
            step=step,
            epoch_generator=epoch_generator,
            torch_rng=streams[0],
            torch_rng_by_process=streams,
            history=history,
            best=best,
            loss_sum=total_loss,
            seen=seen,
            elapsed=seconds,
            processes=group.size,
        )

    for epoch in range(first_epoch, t.epochs + 1):
        model.train()
        started = time.perf_counter() - elapsed
        epoch_generator = generator.get_state()  # the data order below is drawn from this state
        batches = distributed.shard(list(iterate_batches(train_items, t.batch_size, generator)), group)
        columns = (
            TextColumn(f"epoch {epoch}/{t.epochs}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]:.4f}  {task.fields[speed]:,.0f} tok/s"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as progress:
            task = progress.add_task("train", total=len(batches), completed=first_step, loss=0.0, speed=0.0)
            for step in range(first_step + 1, len(batches) + 1):
                batch = batches[step - 1].to(device)
                if drop_probabilities is not None:
                    batch.words = drop_words(batch.words, drop_probabilities)
                scores, _ = trainer(batch)
                loss = model.loss(scores, batch.tags, batch.mask)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), t.clip)
                if not (torch.isfinite(loss) and torch.isfinite(norm)):
                    what = "loss" if not torch.isfinite(loss) else "gradient norm"
                    value = (loss if what == "loss" else norm).item()
                    raise FloatingPointError(
                        f"the {what} became {value} at epoch {epoch}, step {step}; the parameters were not "
                        f"updated, and the last checkpoint and best model are kept"
                    )
                optimizer.step()
                n = int(batch.mask.sum())
                total_loss += loss.item() * n
                seen += n
                progress.update(
                    task,
                    advance=1,
                    loss=total_loss / seen,
                    speed=seen / max(time.perf_counter() - started, 1e-9),
                )
                if t.checkpoint_every and step % t.checkpoint_every == 0 and step < len(batches):
                    checkpoint_now(epoch, step, epoch_generator, time.perf_counter() - started)
        seconds = time.perf_counter() - started
        total_loss, seen = distributed.sum_over([total_loss, seen], group, device)
        dev = None
        if group.main:  # dev on process 0 only; all processes then agree on the result
            dev = evaluate_sentences(
                model, vocabs, dev_items, splits.dev, t.eval_batch_size, device, spec.score
            )
        dev = distributed.broadcast(dev, group)
        improved = dev[metric] > best[metric]
        if improved:
            best = {metric: dev[metric], "epoch": epoch}
            if group.main:
                save_model(output, model, config, vocabs)
        row = {
            "epoch": epoch,
            "loss": total_loss / seen,
            "dev_accuracy": dev["accuracy"],
            f"dev_{metric}": dev[metric],
            **{f"dev_{key}": dev[key] for key, _ in spec.columns},
            "seconds": seconds,
            "tokens_per_second": tokens_per_epoch / seconds,
        }
        history.append(row)
        first_step, total_loss, seen, elapsed = 0, 0.0, 0, 0.0
        checkpoint_now(epoch + 1, 0, generator.get_state(), 0.0)
        log(
            f"epoch {epoch:>3}  loss {row['loss']:.4f}  dev {spec.metric_label} {100 * dev[metric]:6.2f}  "
            + "".join(f"{label} {100 * dev[key]:6.2f}  " for key, label in spec.columns)
            + f"{seconds:6.1f} s  {row['tokens_per_second']:>8,.0f} tok/s"
            + ("  [green]best[/]" if improved else "")
        )

    if not group.main:
        return {}
    # evaluate the best epoch's model, as saved
    model, _, _ = load_model(output, device)
    metrics: dict = {
        "dev": evaluate_sentences(model, vocabs, dev_items, splits.dev, t.eval_batch_size, device, spec.score)
    }
    if splits.test:
        test_items = [encode(vocabs, s.words, extra=s.extra) for s in splits.test]
        metrics["test"] = evaluate_sentences(
            model, vocabs, test_items, splits.test, t.eval_batch_size, device, spec.score
        )
    metrics.update(
        best_epoch=best["epoch"],
        epochs=history,
        data=splits.paths,
        seconds_per_epoch=sum(r["seconds"] for r in history) / len(history),
        train_sentences=len(train_sents),
        dropped_long_sentences=dropped,
        device=str(device),
        threads=torch.get_num_threads(),
        processes=group.size,
    )
    for split in ("dev", "test"):
        if split in metrics:
            metrics[split].pop("per_tag", None)
    write_json(output / "metrics.json", metrics)
    log(summary_table(metrics, metric, spec.metric_label, spec.columns))
    log(f"model and metrics written to {output}")
    return metrics


def make_optimizer(config: Config, model: torch.nn.Module) -> torch.optim.Optimizer:
    t = config.train
    if t.optimizer == "adagrad":
        return torch.optim.Adagrad(model.parameters(), lr=t.lr)
    if t.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=t.lr)
    return torch.optim.SGD(model.parameters(), lr=t.lr)


def summary_table(
    metrics: dict, metric: str = "accuracy", label: str = "acc", columns: tuple[tuple[str, str], ...] = ()
) -> Table:
    """Per-epoch loss and dev scores: the task's ``metric``, then the report keys of ``columns``."""
    table = Table(title=f"dev {'accuracy' if metric == 'accuracy' else label} per epoch", show_edge=False)
    names = ("epoch", "loss", f"dev {label}", *(f"dev {name}" for _, name in columns), "s/epoch", "tok/s")
    for name in names:
        table.add_column(name, justify="right")
    for row in metrics["epochs"]:
        mark = " *" if row["epoch"] == metrics["best_epoch"] else ""
        table.add_row(
            f"{row['epoch']}{mark}",
            f"{row['loss']:.4f}",
            f"{100 * row[f'dev_{metric}']:.2f}",
            *(f"{100 * row[f'dev_{key}']:.2f}" for key, _ in columns),
            f"{row['seconds']:.1f}",
            f"{row['tokens_per_second']:,.0f}",
        )
    caption = f"best epoch {metrics['best_epoch']} (*): dev {100 * metrics['dev'][metric]:.2f}"
    if "test" in metrics:
        caption += f", test {100 * metrics['test'][metric]:.2f}"
    table.caption = caption
    return table
