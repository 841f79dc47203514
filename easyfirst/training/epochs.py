"""One epoch of training: the updates of :func:`train_epoch`, by this process alone or, with Hogwild
workers (easyfirst.training.hogwild), by all of them (:func:`hogwild_epoch`); :func:`train_part` and
:func:`backward_step` are one process's updates, the same in both.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager

import torch
from rich.progress import (
    BarColumn,
    Progress,
    TextColumn,
)
from rich.table import Column

from easyfirst.backends.chooser import plan_for
from easyfirst.config import TrainConfig
from easyfirst.data.batching import Batch, collate, indices_in_order
from easyfirst.data.buckets import bucket_indices
from easyfirst.data.features import drop_words
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.parallel.workers import Workers
from easyfirst.training import anneal, distributed, hogwild
from easyfirst.training.checkpoints import CheckpointClock, save_checkpoint
from easyfirst.training.optim import clip_gradients, schedule_lr
from easyfirst.training.reporting import ProgressLines, Rate, duration
from easyfirst.training.state import Run


def train_epoch(run: Run, epoch: int) -> float:
    """One pass over the shuffled training batches (from ``run.progress.step`` on, when resuming), by
    this process or, with Hogwild workers, by all of them (:func:`hogwild_epoch`); returns the epoch's
    seconds. Stops with FloatingPointError on a non-finite loss or gradient."""
    t, p = run.config.train, run.progress
    run.model.train()
    started = time.perf_counter() - p.elapsed
    epoch_generator = run.generator.get_state()  # the data order below is drawn from this state
    order = (
        bucket_indices([len(e) for e in run.train_items], t.batch_size, run.generator)
        if t.shuffle
        else indices_in_order(len(run.train_items), t.batch_size)
    )
    if run.workers is not None:
        return hogwild_epoch(run, epoch, order, epoch_generator, started)
    batches = distributed.shard(run_batches(run, order), run.group)
    clock = CheckpointClock(t.checkpoint_minutes, run.group)
    with progress_bar(run, epoch, len(batches), p.step) as update:

        def after(step: int, words: int, loss: float) -> bool:
            p.loss_sum += loss
            p.seen += words
            update(step, p.loss_sum / p.seen, p.seen)
            counted = t.checkpoint_every and step % t.checkpoint_every == 0
            if (counted or clock.due()) and step < len(batches):
                save_checkpoint(run, epoch, step, epoch_generator, time.perf_counter() - started)
                clock.restart()
            return False

        train_part(run, batches, p.step, epoch, after)
    return time.perf_counter() - started


def start_epoch(run: Run, epoch: int) -> None:
    """The epoch's attention temperature (when annealed) and learning rate (with ``lr_decay``); Hogwild's
    forked workers call it too (easyfirst.training.epochs.hogwild_work)."""
    t = run.config.train
    anneal.start_epoch(run.config, run.model, epoch)
    base = [t.embedding_lr, t.lr] if t.embedding_lr is not None else [t.lr]
    base += [t.transformer_lr] if len(run.optimizer.param_groups) > len(base) else []  # fine-tuned
    schedule_lr(run.optimizer, base, t.lr_decay, epoch)


def hogwild_epoch(
    run: Run, epoch: int, order: list[list[int]], epoch_generator: torch.Tensor, started: float
) -> float:
    """The epoch by K processes sharing the model (easyfirst.training.hogwild): worker k takes every K-th batch of
    ``order`` from the k-th, this process (worker 0) among them; returns the epoch's seconds."""
    t, p, workers = run.config.train, run.progress, run.workers
    board, count = workers.board, workers.count
    parts = [order[rank::count] for rank in range(count)]
    board.zero_()
    if p.worker_steps:  # resuming within the epoch: each worker from where it was
        board[:, hogwild.STEPS] = torch.tensor(p.worker_steps, dtype=board.dtype)
        board[0, hogwild.LOSS], board[0, hogwild.WORDS] = p.loss_sum, p.seen
    every = max(1, t.checkpoint_every // count) if t.checkpoint_every else 0
    clock = CheckpointClock(t.checkpoint_minutes, run.group)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the cores are the workers'
    workers.start([(epoch, part) for part in parts])
    try:
        with progress_bar(run, epoch, len(order), int(board[:, hogwild.STEPS].sum())) as update:

            def after(step: int, words: int, loss: float) -> bool:
                hogwild_record(board, 0, step, words, loss)
                total = board.sum(0).tolist()
                seconds = time.perf_counter() - started
                update(int(total[0]), total[1] / max(total[2], 1), int(total[2]))
                if ((every and step % every == 0) or clock.due()) and step < len(parts[0]):
                    p.loss_sum, p.seen = total[1], int(total[2])
                    p.worker_steps = [int(k) for k in board[:, hogwild.STEPS].tolist()]
                    save_checkpoint(run, epoch, sum(p.worker_steps), epoch_generator, seconds)
                    clock.restart()
                return bool(workers.stop)

            try:
                train_part(run, run_batches(run, parts[0]), int(board[0, hogwild.STEPS]), epoch, after)
            except BaseException:
                workers.stop.fill_(1)  # the others end their parts too
                raise
        workers.wait()
    finally:
        torch.set_num_threads(threads)
    total = board.sum(0).tolist()
    p.loss_sum, p.seen, p.worker_steps = total[1], int(total[2]), []
    return time.perf_counter() - started


def hogwild_record(board: torch.Tensor, rank: int, step: int, words: int, loss: float) -> None:
    """Worker ``rank``'s row of the board after its update number ``step`` (see easyfirst.training.hogwild)."""
    board[rank, hogwild.STEPS] = step
    board[rank, hogwild.LOSS] += loss
    board[rank, hogwild.WORDS] += words


def hogwild_work(run: Run) -> Callable:
    """What a forked worker does with a part of an epoch: its updates, recorded on the board."""

    def work(workers: Workers, rank: int, message: tuple[int, list[list[int]]]) -> None:
        epoch, part = message
        start_epoch(run, epoch)  # forked before the epoch: set its temperature and learning rate here
        run.model.train()
        torch.manual_seed(hash((run.config.train.seed, rank, epoch)) % 2**63)  # its own dropout stream

        def after(step: int, words: int, loss: float) -> bool:
            hogwild_record(workers.board, rank, step, words, loss)
            return bool(workers.stop)

        done = int(workers.board[rank, hogwild.STEPS])
        train_part(run, run_batches(run, part), done, epoch, after)

    return work


def run_batches(run: Run, order: list[list[int]]) -> list[Batch]:
    """The training batches of the sentence indices ``order``."""
    return [collate([run.train_items[i] for i in indices], indices) for indices in order]


def bar_columns(epoch: int, epochs: int) -> tuple:
    """The bar's columns: the text whole, and the bar in the width it leaves (at most 40), so that
    ``epoch 20/20 ━━╸  2,027/12,329  loss 0.4662  1,934 words/s  1 h 3 min left`` fits 80 columns
    (a bar of fixed width cut the line at its counts). ``speed`` starts with its own spaces."""
    return (
        TextColumn(f"epoch {epoch}/{epochs}"),
        BarColumn(bar_width=None, table_column=Column(ratio=1, max_width=40)),
        TextColumn(
            "{task.completed:,}/{task.total:,}  loss {task.fields[loss]:.4f}{task.fields[speed]}",
            table_column=Column(no_wrap=True),
        ),
    )


@contextmanager
def progress_bar(run: Run, epoch: int, total: int, done: int):
    """The epoch's progress: a bar on a terminal, else plain lines on the run log
    (easyfirst.training.reporting.ProgressLines); yields ``update(completed, loss, words)``. Only the
    main process calls it (Hogwild's other workers run :func:`train_part` alone). The speed and time
    left come once measured (reporting.Rate)."""
    console = run.log.console
    if not console.is_terminal:
        yield ProgressLines(run.log, epoch, run.config.train.epochs, total, done)
        return
    rate = Rate(total)
    with Progress(*bar_columns(epoch, run.config.train.epochs), console=console, transient=True) as bar:
        shown = bar.add_task("train", total=total, completed=done, loss=0.0, speed="")

        def update(completed: int, loss: float, words: int) -> None:
            measured = rate(completed, words)
            speed = "" if measured is None else f"  {measured[0]:,.0f} words/s  {duration(measured[1])} left"
            bar.update(shown, completed=completed, loss=loss, speed=speed)

        yield update


def train_part(
    run: Run, batches: list[Batch], done: int, epoch: int, after: Callable[[int, int, float], bool]
) -> None:
    """Updates on ``batches`` after the first ``done``: forward, backward, clipping and the optimizer's
    step each; then ``after(step, words, loss)`` (the loss summed over the batch's words), which returns
    True to stop early. A non-finite loss or gradient raises FloatingPointError before any update."""
    t, model = run.config.train, run.model
    parameters = list(model.parameters())
    for step in range(done + 1, len(batches) + 1):
        batch = batches[step - 1].to(run.device)
        if run.drop_probabilities is not None:
            batch.words = drop_words(batch.words, run.drop_probabilities)
        loss, norm = backward_step(model, run.trainer, run.optimizer, parameters, batch, t)
        if not (torch.isfinite(loss) and torch.isfinite(norm)):
            what = "loss" if not torch.isfinite(loss) else "gradient norm"
            value = (loss if what == "loss" else norm).item()
            raise FloatingPointError(
                f"the {what} became {value} at epoch {epoch}, step {step}; the parameters were not "
                f"updated, and the last checkpoint and best model are kept"
            )
        run.optimizer.step()
        n = int(batch.mask.sum())
        if after(step, n, loss.item() * (n if t.reduction == "mean" else 1)):
            return


def backward_step(
    model: EasyFirstTagger,
    trainer: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    parameters: list[torch.nn.Parameter],
    batch: Batch,
    t: TrainConfig,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The loss of ``batch`` (``t.reduction`` over its words, plus its extra outputs'), its
    gradients, clipped to norm ``t.clip``: ``(loss, norm before clipping)``. ``optimizer.step()`` is
    the caller's, after checking both are finite. ``trainer``: the model, or DDP around it."""
    scores, _, head_scores = trainer(batch, heads=True, plan=plan_for(model, batch.mask, training=True))
    loss = model.loss(scores, batch.tags, batch.mask, t.reduction)
    if model.heads is not None:  # the extra outputs' losses (easyfirst.model.heads)
        loss = loss + model.head_loss(head_scores, batch, t.reduction)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    return loss, clip_gradients(parameters, t.clip)
