"""Files shipped inside the package: the bundled models, each a model folder chosen by a short name
(``-m en-ner``, ``Tagger.load("en-ner")``); the English UPOS model (``en-upos``) is the default.

Kept free of torch, so that a command can find the model's files before it imports torch.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

# name → the folder inside this package; the first is the default model
BUNDLED = {"en-upos": "en_ewt_upos", "en-ner": "en_conll03_ner"}
DEFAULT_MODEL = BUNDLED["en-upos"]
# what a --model value that names nothing is told (a run folder's path, or a name of BUNDLED)
NOT_FOUND = f"model folder not found (a run folder written by `easyfirst train`, or a bundled model: {', '.join(BUNDLED)})"
# the files of a model folder, this one's and every run's (written by easyfirst.runs)
MODEL_FILE, CONFIG_FILE, VOCAB_FILE = "model.pt", "config.json", "vocab.json"
CHECKPOINT_FILE, METRICS_FILE = "checkpoint.pt", "metrics.json"  # a run folder's, beside the model's


def default_model_path() -> Path:
    """The folder of the English UPOS model shipped inside the package."""
    return Path(str(resources.files("easyfirst.resources") / DEFAULT_MODEL))


def model_folder(model: str | Path | None) -> Path:
    """The folder a ``--model`` value names: None is the default model, a bundled model's name (see
    :data:`BUNDLED`) its folder inside the package, anything else a path (``./en-ner`` for a folder of
    that name in the working directory)."""
    if model is None:
        return default_model_path()
    name = str(model)
    if name in BUNDLED:
        return Path(str(resources.files("easyfirst.resources") / BUNDLED[name]))
    return Path(model)
