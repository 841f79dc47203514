"""Annealing the attention temperature over the epochs (issue #26): accuracy is learnt early at a mild
temperature, sharp (easy-first) attention late at a low one.

With ``[train] anneal_epochs = E > 0`` the scores z of Eq. 2 are divided by T_e in epoch e, where T_e
goes geometrically from ``anneal_from`` (epoch 1) to ``anneal_to`` (epoch E) and stays there:

    T_e = anneal_from · (anneal_to / anneal_from) ** (min(e, E) − 1) / (E − 1))      (E = 1: anneal_to)

The schedule is a function of the epoch alone, so a run resumed within an epoch continues it. Each
epoch's temperature is written into the run's ``[model] attention_temperature`` before the epoch trains,
so the model saved at the best dev epoch tags with the temperature it was scored with, and the saved
``[train]`` keys keep the whole schedule for ``--resume``.
"""

from __future__ import annotations

from easyfirst.config import Config, TrainConfig
from easyfirst.model.tagger import EasyFirstTagger


def temperature(t: TrainConfig, epoch: int) -> float:
    """The attention temperature of ``epoch`` (1-based) under the schedule of ``t`` (annealing on)."""
    if t.anneal_epochs <= 1:
        return t.anneal_to
    progress = (min(epoch, t.anneal_epochs) - 1) / (t.anneal_epochs - 1)
    return t.anneal_from * (t.anneal_to / t.anneal_from) ** progress


def start_epoch(config: Config, model: EasyFirstTagger, epoch: int) -> float | None:
    """Set the epoch's temperature on the model and in ``config`` (what save_model writes); returns it,
    or None when the run does not anneal."""
    if not config.train.anneal_epochs or model.decoder is None:
        return None
    value = temperature(config.train, epoch)
    config.model.attention_temperature = value
    model.decoder.temperature = value
    return value


def describe(t: TrainConfig) -> str:
    """One line for the training log."""
    return (
        f"attention temperature annealed from {t.anneal_from:g} (epoch 1) to {t.anneal_to:g} "
        f"(epoch {t.anneal_epochs} on), geometrically"
    )
