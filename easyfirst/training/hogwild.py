"""Hogwild training: K processes update one set of shared parameters and optimizer state without locks.

    easyfirst train --task pos --workers 2

At one sentence per update (the paper's regime, the POS default) an update is a few milliseconds of
tiny operations on one core (easyfirst.backends.compiled), so a second core helps only by running a second
stream of updates. Following Recht et al. (2011, "Hogwild!") and PyTorch's own Hogwild example, the
model's parameters and the optimizer's state (Adagrad's sums of squared gradients) are moved into
shared memory (:func:`share`), K − 1 worker processes are forked (easyfirst.parallel.workers), and every epoch
each of the K processes (this one included, as worker 0) takes every K-th sentence of the epoch's order
and runs its own forward, backward, clipping and optimizer step, writing into the shared tensors in
place, without locks. Their gradients are their own; their updates interleave.

Everything else stays with this process: dev evaluation after each epoch (the workers wait), the best
model, checkpoints and the log. A checkpoint holds the shared state and each worker's position in the
epoch (the ``board``), so ``--resume`` continues with as many workers from where each one was. The
order in which updates land depends on timing, so a run with K > 1 is not repeatable bit for bit;
``--workers 1`` is the single-process path, deterministic for a seed.

Only one sentence per update on the CPU takes workers: batched regimes (``batch_size`` > 1, a GPU) run
one process, whose batched operations already use the cores through torch's threads (and torchrun,
easyfirst.training.distributed, trains them data-parallel). The default (``workers`` unset) is one worker per
core this process may run on, at most :data:`MAX_WORKERS`, and at most one per
:data:`SENTENCES_PER_WORKER` training sentences (a small set trains in one process, deterministically).
"""

from __future__ import annotations

import torch
from torch import nn

from easyfirst.errors import InputError
from easyfirst.parallel.cores import available_cores

MAX_WORKERS = 8  # beyond this, updates to the shared dense weights collide more than they gain
SENTENCES_PER_WORKER = 500  # fewer training sentences per worker: fork fewer workers
STEPS, LOSS, WORDS = range(3)  # the columns of the workers' board: each one's updates, loss sum, words
COLUMNS = 3


def choose_workers(
    requested: int | None, batch_size: int, device: torch.device, sentences: int, distributed: bool
) -> int:
    """How many processes train: ``requested`` if given (checked against the regime), else the default
    (see module): one per core for one sentence per update on the CPU, 1 for every other regime."""
    hogwild_regime = batch_size == 1 and device.type == "cpu" and not distributed
    if requested is None:
        if not hogwild_regime:
            return 1
        return max(1, min(available_cores(), MAX_WORKERS, sentences // SENTENCES_PER_WORKER))
    if requested > 1 and not hogwild_regime:
        why = (
            "under torchrun"
            if distributed
            else f"on {device.type}"
            if device.type != "cpu"
            else f"with {batch_size} sentences per update"
        )
        raise InputError(
            f"--workers {requested}: Hogwild workers train one sentence per update on the CPU, not {why}; "
            "use --workers 1 (batched updates already use the cores through torch's threads)"
        )
    return requested


def share(model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """Move ``model``'s parameters and ``optimizer``'s state tensors into shared memory, in place (the
    optimizer keeps pointing at them), so that forked workers update the same tensors."""
    model.share_memory()
    for state in optimizer.state.values():
        for value in state.values():
            if torch.is_tensor(value):
                value.share_memory_()
