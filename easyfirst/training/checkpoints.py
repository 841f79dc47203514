"""Checkpoints of a training run: ``checkpoint.pt`` in the run folder, written after every epoch, every
``checkpoint_minutes`` of training within one (:class:`CheckpointClock`, 5 by default) and every
``checkpoint_every`` updates, from which ``easyfirst train --resume`` continues: the model, the
optimizer's state, the random number generators, the data order and the position within the epoch
(with Hogwild workers, each worker's; see easyfirst.training.hogwild). Tensors and plain values only, so that
``torch.load(..., weights_only=True)`` reads them.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from easyfirst.atomic import atomic_write, remove_stale_temporaries, signals_deferred
from easyfirst.errors import InputError
from easyfirst.resources import CHECKPOINT_FILE, CONFIG_FILE, METRICS_FILE, MODEL_FILE, VOCAB_FILE
from easyfirst.training import distributed
from easyfirst.training.state import Run

RUN_FILES = (MODEL_FILE, CONFIG_FILE, VOCAB_FILE, CHECKPOINT_FILE, METRICS_FILE)  # written atomically


def remove_run_temporaries(output: Path) -> None:
    """Remove the temporary files that a killed run left in its folder ``output`` beside the files it
    writes (easyfirst.atomic.remove_stale_temporaries), before the run (or its resumption) writes them."""
    remove_stale_temporaries(output / name for name in RUN_FILES)


def load_checkpoint(path: Path, epochs: int | None = None) -> dict:
    """The checkpoint at ``path``, to train on to ``epochs``: refused when the run has finished them
    (its metrics.json written), where resuming would only score it again."""
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise InputError(
            "no checkpoint to resume from: the run stopped before its first one, or is not a training run "
            "(`easyfirst train --resume` trains one that stopped so again from the start)",
            path,
        ) from None
    except Exception as error:  # noqa: BLE001 (any unreadable file is the user's to fix)
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise InputError(f"not a readable checkpoint: {first}", path) from None
    done = checkpoint["epoch"] - 1  # it holds the epoch to start from
    finished = epochs is not None and done >= epochs and not checkpoint["step"]
    if finished and (path.parent / METRICS_FILE).is_file():
        raise InputError(
            f"the run has finished its {done} epochs (metrics.json written): nothing to resume; "
            f"--epochs N with N over {done} trains it longer",
            path.parent,
        )
    return checkpoint


class CheckpointClock:
    """Whether a time-based checkpoint is due within an epoch: ``minutes`` of training since the last
    checkpoint (or since the epoch began: each epoch ends with one). Off (0) under torchrun, whose
    processes must all checkpoint at the same update (``checkpoint_every`` counts updates for them)."""

    def __init__(self, minutes: float, group: distributed.Group):
        self.seconds = 0.0 if group.parallel else 60 * minutes
        self.restart()

    def due(self) -> bool:
        return bool(self.seconds) and time.monotonic() - self.since >= self.seconds

    def restart(self) -> None:
        """A checkpoint has just been written: the next is due ``minutes`` from now."""
        self.since = time.monotonic()


def restore_checkpoint(run: Run, checkpoint: dict, workers: int = 1) -> None:
    """Put the model, the optimizer, the random number generators and the progress back as saved;
    ``workers``: the Hogwild processes that will continue it."""
    group = run.group
    if checkpoint.get("processes", 1) != group.size:
        raise InputError(
            f"the run was trained by {checkpoint.get('processes', 1)} process(es); resume it with as many",
            run.output / CHECKPOINT_FILE,
        )
    within = len(checkpoint.get("worker_steps") or [1]) if checkpoint["step"] else workers
    if within != workers:  # within an epoch, each worker continues its own part
        raise InputError(
            f"the run stopped within an epoch of {within} Hogwild worker(s); resume it with --workers {within}",
            run.output / CHECKPOINT_FILE,
        )
    run.model.load_state_dict(checkpoint["model"])
    run.optimizer.load_state_dict(checkpoint["optimizer"])
    run.generator.set_state(checkpoint["epoch_generator"])
    # each process's own dropout stream (older checkpoints kept process 0's alone)
    streams = checkpoint.get("torch_rng_by_process") or [checkpoint["torch_rng"]]
    torch.set_rng_state(streams[group.rank] if group.rank < len(streams) else streams[0])
    p = run.progress
    p.history, p.best = checkpoint["history"], checkpoint["best"]
    p.epoch, p.step = checkpoint["epoch"], checkpoint["step"]
    p.worker_steps = list(checkpoint.get("worker_steps") or [])
    p.loss_sum, p.seen, p.elapsed = checkpoint["loss_sum"], checkpoint["seen"], checkpoint["elapsed"]
    if not group.main:  # the checkpoint holds process 0's partial sums; the others start afresh
        p.loss_sum, p.seen = 0.0, 0
    run.log(f"resuming from {run.output / CHECKPOINT_FILE}: epoch {p.epoch}, after step {p.step}")


def save_checkpoint(run: Run, epoch: int, step: int, epoch_generator: torch.Tensor, seconds: float) -> None:
    """Write the training state atomically (tensors and plain values only: weights_only-loadable), from
    which ``--resume`` continues at ``epoch`` after ``step``. Every process calls it at once."""
    streams = distributed.gather(torch.get_rng_state(), run.group)
    if not run.group.main:
        return
    p = run.progress
    state = dict(
        model=run.model.state_dict(),
        optimizer=run.optimizer.state_dict(),
        epoch=epoch,
        step=step,
        epoch_generator=epoch_generator,
        torch_rng=streams[0],
        torch_rng_by_process=streams,
        history=p.history,
        best=p.best,
        loss_sum=p.loss_sum,
        seen=p.seen,
        elapsed=seconds,
        processes=run.group.size,
        worker_steps=p.worker_steps,
    )
    with signals_deferred():  # Ctrl-C inside torch.save would surface as a RuntimeError
        atomic_write(run.output / CHECKPOINT_FILE, lambda out: torch.save(state, out))
