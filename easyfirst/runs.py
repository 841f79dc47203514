"""Run folders: a trained model as a ``state_dict`` plus plain JSON, loaded without running any code.

A model folder holds ``model.pt`` (tensors only, loaded with ``torch.load(..., weights_only=True)``),
``config.json`` (the whole :class:`~easyfirst.config.Config` of the run) and ``vocab.json``. Every file
is written atomically (easyfirst.atomic).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import torch

from easyfirst.atomic import atomic_write, read_json, signals_deferred, write_json
from easyfirst.config import Config
from easyfirst.data.vocab import Vocabularies
from easyfirst.errors import InputError
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.parallel.workers import one_thread
from easyfirst.resources import CONFIG_FILE, MODEL_FILE, NOT_FOUND, VOCAB_FILE
from easyfirst.tasks import get_task


def save_model(
    folder: str | Path, model: EasyFirstTagger, config: Config, vocabs: Vocabularies, half: bool = False
) -> None:
    """Write the model folder; ``half`` stores floating-point tensors as float16 (for shipping)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {
        k: (v.half() if half and v.is_floating_point() else v).detach().cpu()
        for k, v in model.state_dict().items()
    }
    with signals_deferred():  # Ctrl-C inside torch.save would surface as a RuntimeError
        atomic_write(folder / MODEL_FILE, lambda out: torch.save(state, out))
    write_json(folder / CONFIG_FILE, config.to_dict())
    write_json(folder / VOCAB_FILE, vocabs.to_json())


def load_model(
    folder: str | Path, device: str | torch.device = "cpu"
) -> tuple[EasyFirstTagger, Config, Vocabularies]:
    """Load a model folder for inference (float32, eval mode), on one torch thread (easyfirst.parallel.
    workers.one_thread): building the model and copying its 2 M weights into it are small operations
    (the bundled model: 257 ms with two threads and a float32 copy of the state made first, 79 ms with
    one thread and the copy converting, medians of 8 alternating loads on the busy 2-core machine of
    docs/tagging.md)."""
    with one_thread():
        return _load_model(Path(folder), device)


def _load_model(folder: Path, device) -> tuple[EasyFirstTagger, Config, Vocabularies]:
    if not folder.is_dir():
        raise InputError(NOT_FOUND, folder)
    config = Config.from_saved(read_json(folder / CONFIG_FILE), str(folder / CONFIG_FILE))
    try:
        vocabs = Vocabularies.from_json(read_json(folder / VOCAB_FILE))
    except (KeyError, TypeError, ValueError) as error:
        raise InputError(f"malformed vocabulary: {error}", folder / VOCAB_FILE) from None
    try:  # a transformer is loaded here, and refused when its weights are not the run's
        model = EasyFirstTagger(
            config.model, config.loss, vocabs, get_task(config.data.task).outputs, drawn=False
        )
    except InputError as error:
        raise InputError(error.message, error.path or folder / CONFIG_FILE, error.line) from None
    path = folder / MODEL_FILE
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        if (folder / "train.log").is_file():  # a run that stopped (interrupted, a full disk) before one
            raise InputError(
                "not found: the training run in this folder stopped before it wrote its first model; "
                f"`easyfirst train --resume {folder}` trains it",
                path,
            ) from None
        raise InputError("not found", path) from None
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InputError(
            f"not a loadable model state (refused to unpickle anything but tensors): {first}", path
        ) from None
    if not isinstance(state, dict):
        raise InputError("not a model state dictionary", path)
    try:
        model.load_state_dict(state)  # float16 weights (easyfirst export --half) become float32 in the copy
    except (RuntimeError, AttributeError) as error:
        raise InputError(
            f"does not match {CONFIG_FILE} and {VOCAB_FILE}: {str(error).splitlines()[0]}", path
        ) from None
    return model.to(device).eval(), config, vocabs
