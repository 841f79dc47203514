"""Data-parallel training on several processes with ``torch.nn.parallel.DistributedDataParallel``.

    torchrun --nproc_per_node K -m easyfirst train --task pos --output runs/pos ...

``torchrun`` starts K copies of ``easyfirst train`` and sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR`` and ``MASTER_PORT``; :func:`start` joins them into one process group (gloo on the CPU,
NCCL with ``--device cuda``, one GPU per process: ``cuda:LOCAL_RANK``). Without ``torchrun`` (no
``WORLD_SIZE`` > 1) everything here is a no-op and training runs as one process.

Every process reads the same data, builds the same vocabularies and draws the same batch order from
the seed (processes other than 0 then reseed their dropout, see :func:`seed_dropout`); each then trains on its own shard of every epoch's batches (batch k goes to process
k mod K; the last ``len % K`` batches of the shuffled order are left out so that all processes take
the same number of steps). DDP averages the gradients, so all processes apply the same update and
keep identical weights. An update therefore sees K batches: the effective batch is K × ``batch_size``.

Only process 0 (the "main" one) writes files (model, metrics, ``train.log``, checkpoints) and prints;
it alone evaluates on dev after each epoch and broadcasts the result, so that every process takes the
same decisions (best epoch, early stopping). The training loss shown is summed over all processes.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from rich.console import Console
from torch import distributed as dist
from torch import nn

from easyfirst.atomic import die_with_parent
from easyfirst.errors import InputError

T = TypeVar("T")


@dataclass(frozen=True)
class Group:
    """This process's place among the training processes: ``rank`` of ``size`` (0 of 1 alone)."""

    rank: int = 0
    size: int = 1

    @property
    def main(self) -> bool:
        """Whether this process writes files and prints (rank 0)."""
        return self.rank == 0

    @property
    def parallel(self) -> bool:
        return self.size > 1


def launched() -> bool:
    """Whether this process was started by ``torchrun`` with more than one process."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def start(device: str) -> tuple[Group, str]:
    """Join the process group that ``torchrun`` set up; returns the group and this process's device."""
    if not launched():
        return Group(), device
    die_with_parent()  # torchrun's agent killed: no process of its group goes on (docs/studies/cores.md)
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if torch.device(device).type == "cuda":
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', rank))}"
        torch.cuda.set_device(device)
        backend = "nccl"
    else:
        backend = "gloo"
    if not dist.is_initialized():
        dist.init_process_group(backend, rank=rank, world_size=size)
    return Group(rank, size), device


def backend() -> str:
    return dist.get_backend() if dist.is_initialized() else "none"


def stop(group: Group) -> None:
    if group.parallel and dist.is_initialized():
        # free what still holds the group (DDP's reducer can sit in a reference cycle) while it is alive,
        # not at interpreter exit, where a process sometimes aborted after a finished run ("terminate
        # called without an active exception"); the likely cause, not a proven one
        gc.collect()
        dist.destroy_process_group()


def wrap(model: nn.Module, group: Group, device: torch.device) -> nn.Module:
    """The module to call for training: ``model`` itself alone, else DDP around it (which averages
    gradients in ``backward``). Evaluation and saving use ``model`` directly."""
    if not group.parallel:
        return model
    ids = [device.index] if device.type == "cuda" else None
    # static graph: the same parameters take part in every update, and some never do (e.g. the scores'
    # v for left-to-right attention), which DDP then skips instead of waiting for their gradients
    # no buffer changes in training (constraint masks, class weights, the vectors' own words kept as
    # read: easyfirst.model.embedder), so none is sent from the first process before every forward
    return nn.parallel.DistributedDataParallel(
        model, device_ids=ids, static_graph=True, broadcast_buffers=False
    )


def shard(batches: Sequence[T], group: Group) -> list[T]:
    """This process's batches of an epoch: every ``size``-th, starting at ``rank``, equal counts for all."""
    if not group.parallel:
        return list(batches)
    usable = len(batches) // group.size * group.size
    if usable == 0:
        raise InputError(
            f"{len(batches)} training batch(es) cannot be shared among {group.size} processes; use "
            "fewer processes or a smaller --batch-size"
        )
    return list(batches[group.rank : usable : group.size])


def seed_dropout(seed: int, group: Group) -> None:
    """Give processes other than 0 their own random stream for dropout and word dropout.

    All processes start from the same seed (the same initial weights and batch order); after the model
    is built, processes 1..K−1 reseed torch's global generator from (seed, rank), so that the K shards of
    an update do not draw correlated dropout masks. Process 0 keeps the stream of a one-process run.
    Checkpoints keep every process's stream (:func:`gather`), so a resumed run continues each exactly.
    """
    if group.rank > 0:
        torch.manual_seed(hash((seed, group.rank)) % 2**63)


def gather(value: Any, group: Group) -> list[Any]:
    """Every process's ``value`` (any picklable object), in rank order, on every process."""
    if not group.parallel:
        return [value]
    box: list[Any] = [None] * group.size
    dist.all_gather_object(box, value)
    return box


def broadcast(value: Any, group: Group) -> Any:
    """Process 0's ``value`` (any picklable object), on every process."""
    if not group.parallel:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def sum_over(values: Sequence[float], group: Group, device: torch.device) -> list[float]:
    """Each value summed over all processes (for the training loss and token count of an epoch)."""
    if not group.parallel:
        return list(values)
    total = torch.tensor(list(values), dtype=torch.float64, device=device)
    dist.all_reduce(total)
    return total.tolist()


class SilentLog:
    """The run log of processes other than 0: prints nothing and writes no file."""

    console = Console(quiet=True)

    def __call__(self, *objects) -> None:
        pass

    def close(self) -> None:
        pass
