"""The best epoch on dev: each epoch's dev score and the model kept when it is the best so far
(:func:`evaluate_and_select`, which then writes the checkpoint), early stopping after ``[train] patience``
epochs without a better score (:func:`stop_early`), and the best model's final dev and test scores
with ``metrics.json`` and the summary (:func:`finish`). Steps of easyfirst.training.loop's run.
"""

from __future__ import annotations

import time

import torch

from easyfirst.atomic import write_json
from easyfirst.backends.chooser import run_plan
from easyfirst.data.batching import encode
from easyfirst.parallel.cores import processor
from easyfirst.runs import load_model, save_model
from easyfirst.training import anneal, distributed
from easyfirst.training.checkpoints import save_checkpoint
from easyfirst.training.reporting import duration, evaluate_sentences, summary_table
from easyfirst.training.state import Run


def evaluate_and_select(run: Run, epoch: int, seconds: float) -> None:
    """Score the epoch's model on dev (process 0, shared with the others), save it if it is the best so
    far, add the epoch's row to the history, save the checkpoint and log the row: ``seconds`` of
    training, then those of all this (``eval``), so that the epoch lines add up to the wall clock."""
    evaluated = time.perf_counter()
    p, task, group = run.progress, run.task, run.group
    metric = run.metric
    p.loss_sum, p.seen = distributed.sum_over([p.loss_sum, p.seen], group, run.device)
    dev = None
    if group.main:  # dev on process 0 only; all processes then agree on the result
        dev = evaluate_sentences(
            run.model,
            run.vocabs,
            run.dev_items,
            run.splits.dev,
            run.config.train.eval_batch_size,
            run.device,
            task.scoring.score,
            task.score_outputs,
        )
    dev = distributed.broadcast(dev, group)
    improved = dev[metric] > p.best[metric]
    if improved:
        p.best = {metric: dev[metric], "epoch": epoch}
        if group.main:
            save_model(run.output, run.model, anneal.epoch_config(run.config, run.model), run.vocabs)
    words = sum(len(e) for e in run.train_items)
    row = {
        "epoch": epoch,
        "loss": p.loss_sum / p.seen,
        "dev_accuracy": dev["accuracy"],
        f"dev_{metric}": dev[metric],
        **{f"dev_{key}": dev[key] for key, _ in run.columns},
        "seconds": seconds,
        "tokens_per_second": words / seconds,
    }
    if run.config.train.anneal_epochs:
        row["attention_temperature"] = run.model.decoder.temperature
    p.history.append(row)
    p.step, p.loss_sum, p.seen, p.elapsed, p.worker_steps = 0, 0.0, 0, 0.0, []
    row["eval_seconds"] = time.perf_counter() - evaluated  # the checkpoint's row: up to its writing
    save_checkpoint(run, epoch + 1, 0, run.generator.get_state(), 0.0)
    row["eval_seconds"] = time.perf_counter() - evaluated
    run.log(
        f"epoch {epoch:>3}  loss {row['loss']:.4f}  dev {run.metric_label} {100 * dev[metric]:6.2f}  "
        + "".join(f"{label} {100 * dev[key]:6.2f}  " for key, label in run.columns if key != metric)
        + f"train {seconds:6.1f} s  eval {row['eval_seconds']:5.1f} s  {row['tokens_per_second']:>8,.0f} tok/s"
        + (f"  T {row['attention_temperature']:.3g}" if "attention_temperature" in row else "")
        + ("  [green]best[/]" if improved else "")
    )


def stop_early(run: Run, epoch: int) -> bool:
    """Whether ``[train] patience`` epochs have passed without a better dev score (logged when so)."""
    t, p = run.config.train, run.progress
    if not t.patience or epoch >= t.epochs or epoch - p.best["epoch"] < t.patience:
        return False
    p.stopped_early = epoch
    run.log(
        f"stopping early after epoch {epoch} of {t.epochs}: no better dev {run.metric_label} for "
        f"{t.patience} epoch{'s' * (t.patience > 1)} (the best: epoch {p.best['epoch']})"
    )
    return True


def finish(run: Run, started: float) -> dict:
    """Score the best epoch's model, as saved, on dev and test; write ``metrics.json`` and the summary.
    ``started``: the run's start (``time.perf_counter()``), for the wall time it reports."""
    scoring = time.perf_counter()
    config, task, splits, p = run.config, run.task, run.splits, run.progress
    batch_size = config.train.eval_batch_size
    model, _, _ = load_model(run.output, run.device)
    if model.embedder.transformer is not None:  # a frozen transformer's vectors of dev, computed already
        model.embedder.transformer.cache = run.model.embedder.transformer.cache
    metrics: dict = {
        "dev": evaluate_sentences(
            model,
            run.vocabs,
            run.dev_items,
            splits.dev,
            batch_size,
            run.device,
            task.scoring.score,
            task.score_outputs,
        )
    }
    if splits.test:
        test_items = [encode(run.vocabs, s.words, extra=s.extra, heads=model.outputs) for s in splits.test]
        metrics["test"] = evaluate_sentences(
            model,
            run.vocabs,
            test_items,
            splits.test,
            batch_size,
            run.device,
            task.scoring.score,
            task.score_outputs,
        )
    metrics.update(
        best_epoch=p.best["epoch"],
        epochs=p.history,
        data=splits.paths,
        seconds_per_epoch=sum(r["seconds"] for r in p.history) / len(p.history),
        eval_seconds_per_epoch=sum(r.get("eval_seconds", 0.0) for r in p.history) / len(p.history),
        train_sentences=len(run.train_sents),
        dropped_long_sentences=len(splits.train) - len(run.train_sents),
        device=str(run.device),
        processor=processor(),  # what the seconds per epoch were measured on
        threads=torch.get_num_threads(),
        processes=run.group.size,
        workers=1 if run.workers is None else run.workers.count,
        # which backend computed the updates, and why (easyfirst.backends.chooser): the model card says it
        backend=run_plan(
            config.model, config.train.batch_size, run.device.type, True, config.train.backend
        ).describe(),
        best_metric=run.metric,
    )
    if p.stopped_early:
        metrics["stopped_early"] = p.stopped_early
    for split in ("dev", "test"):
        if split in metrics:
            metrics[split].pop("per_tag", None)
    columns = tuple(c for c in run.columns if c[0] != run.metric)
    run.log(summary_table(metrics, run.metric, run.metric_label, columns))
    now = time.perf_counter()
    run.log(
        f"model and metrics written to {run.output}; the best model scored in {duration(now - scoring)}, "
        f"{duration(now - started)} in all"
    )
    # the run's last write: a run whose metrics.json is written has finished, its log whole (a log line
    # refused after it, on a full disk, would leave a finished run that --resume has nothing to do for)
    write_json(run.output / "metrics.json", metrics)
    return metrics
