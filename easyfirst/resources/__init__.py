"""Files shipped inside the package: the bundled English UPOS model (``en_ewt_upos``).

Kept free of torch, so that a command can find the model's files before it imports torch.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEFAULT_MODEL = "en_ewt_upos"
# the files of a model folder, this one's and every run's (written by easyfirst.runs)
MODEL_FILE, CONFIG_FILE, VOCAB_FILE = "model.pt", "config.json", "vocab.json"


def default_model_path() -> Path:
    """The folder of the English UPOS model shipped inside the package."""
    return Path(str(resources.files("easyfirst.resources") / DEFAULT_MODEL))
