"""The state of one training run, shared by the loop (easyfirst.training.loop), the epochs
(easyfirst.training.epochs) and the checkpoints (easyfirst.training.checkpoints): its data splits
(:class:`Splits`), where it stands (:class:`RunProgress`, what a checkpoint restores) and everything it
works with (:class:`Run`, made by :func:`easyfirst.training.loop.prepare_run`). A module of its own so
that those three import it rather than each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from easyfirst.config import Config
from easyfirst.data.batching import Encoded
from easyfirst.data.sentence import Sentence
from easyfirst.data.vocab import Vocabularies
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.parallel.workers import Workers
from easyfirst.tasks import Task
from easyfirst.training import distributed
from easyfirst.training.reporting import RunLog


@dataclass
class Splits:
    train: list[Sentence]
    dev: list[Sentence]
    test: list[Sentence] | None
    paths: dict[str, str]


@dataclass
class RunProgress:
    """Where a run stands: the next epoch and the step within it already done, the partial loss of that
    epoch, the per-epoch history and the best dev score so far (what a checkpoint restores)."""

    epoch: int = 1
    step: int = 0
    loss_sum: float = 0.0
    seen: int = 0  # words of the epoch so far
    elapsed: float = 0.0  # seconds of the epoch so far (before an interruption)
    history: list[dict] = field(default_factory=list)
    best: dict = field(default_factory=dict)
    worker_steps: list[int] = field(default_factory=list)  # Hogwild: each worker's updates of the epoch
    stopped_early: int = 0  # the epoch after which [train] patience stopped the run (0: it did not)


@dataclass
class Run:
    """Everything one training run works with, made by :func:`easyfirst.training.loop.prepare_run`."""

    config: Config
    output: Path
    device: torch.device
    log: RunLog
    group: distributed.Group
    task: Task
    splits: Splits
    train_sents: list[Sentence]
    vocabs: Vocabularies
    model: EasyFirstTagger
    trainer: torch.nn.Module  # the model, or DDP around it
    optimizer: torch.optim.Optimizer
    generator: torch.Generator  # draws each epoch's data order
    train_items: list[Encoded]
    dev_items: list[Encoded]
    drop_probabilities: torch.Tensor | None  # word dropout (NER), per word id
    progress: RunProgress
    metric: str  # the dev score that chooses the best epoch (Task.selection)
    metric_label: str
    columns: tuple[tuple[str, str], ...]  # more dev scores in the per-epoch log (Task.report_columns)
    workers: Workers | None = None  # Hogwild's other processes (easyfirst.training.hogwild), if any
