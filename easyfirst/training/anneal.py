"""Annealing the attention temperature over the epochs: accuracy is learnt early at a mild
temperature, sharp (easy-first) attention late at a low one.

With ``[train] anneal_epochs = E > 0`` the scores z of Eq. 2 are divided by T_e in epoch e, where T_e
goes geometrically from ``anneal_from`` (epoch 1) to ``anneal_to`` (epoch E) and stays there:

    T_e = anneal_from · (anneal_to / anneal_from) ** (min(e, E) − 1) / (E − 1))      (E = 1: anneal_to)

The schedule is a function of the epoch alone, so a run resumed within an epoch continues it. Each
epoch's temperature is training state: the model's decoder's, set before the epoch trains. The run's
resolved config is never written into; the model saved at the best dev epoch is saved with a copy of it
whose ``[model] attention_temperature`` is that epoch's (:func:`epoch_config`), so it tags with the
temperature it was scored with, and the saved ``[train]`` keys keep the whole schedule for ``--resume``.
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
    """Set the epoch's temperature on the model; returns it, or None when the run does not anneal."""
    if not config.train.anneal_epochs or model.decoder is None:
        return None
    value = temperature(config.train, epoch)
    model.decoder.temperature = value
    return value


def epoch_config(config: Config, model: EasyFirstTagger) -> Config:
    """The config saved with the model of the epoch now training: the run's, with the epoch's
    temperature when annealing (what the model was scored with)."""
    if not config.train.anneal_epochs or model.decoder is None:
        return config
    return config.replaced("model", attention_temperature=model.decoder.temperature)


def describe(t: TrainConfig) -> str:
    """One line for the training log."""
    return (
        f"attention temperature annealed from {t.anneal_from:g} (epoch 1) to {t.anneal_to:g} "
        f"(epoch {t.anneal_epochs} on), geometrically"
    )
