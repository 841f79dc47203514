"""``easyfirst serve``: a trained tagger over HTTP, as an ASGI app (Starlette) run by uvicorn.

``create_app(model)`` is the app factory for any ASGI server::

    uvicorn --factory easyfirst.serve:create_app            # the bundled model
    # or, in a module of your own:  app = create_app("runs/pos-nef-f")

The serving libraries are the optional extra ``serve`` (``pip install "easyfirst[serve]"``); this
module imports them only when an app is built, so that ``easyfirst --help`` works without them.

A front end: may import the API (:class:`easyfirst.api.Tagger`), ``tagging``, ``tasks``, ``viz`` and below;
nothing imports it but the CLI.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from easyfirst.errors import InputError
from easyfirst.resources import NOT_FOUND
from easyfirst.serve.admission import Admission
from easyfirst.serve.requests import BATCH_WINDOW_MS, Limits

EXTRA = 'pip install "easyfirst[serve]"'
PACKAGES = ("starlette", "uvicorn")


def require() -> None:
    """Fail, naming the extra to install, unless the serving libraries are installed."""
    missing = [name for name in PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise InputError(f"serving needs {' and '.join(missing)}, not installed here: {EXTRA}")


def create_app(
    model: str | Path | None = None,
    *,
    device: str = "cpu",
    limits: Limits = Limits(),
    batch_window_ms: float = BATCH_WINDOW_MS,
    admission: Admission = Admission(),
):
    """The ASGI app serving the model folder ``model`` (None: the bundled English UPOS model).

    ``limits``: what one request may hold (body bytes, sentences, words per sentence);
    ``batch_window_ms``: how long the tagging worker waits for more requests to tag together;
    ``admission``: the words a process lets wait (beyond: 503) and an optional deadline per request."""
    require()
    from easyfirst.api import Tagger
    from easyfirst.serve.app import build_app, model_name

    if model is not None and not Path(model).exists():
        raise InputError(NOT_FOUND, model)
    tagger = Tagger.load(model, device, threads=None)  # a server sets its processes' threads itself
    if tagger.device.type == "cpu":  # each group's sentences one by one in compiled loops, where Numba is
        from easyfirst.backends.chooser import load_tagging_loops

        load_tagging_loops()
    return build_app(tagger, model_name(model), limits, batch_window_ms / 1000, admission)


__all__ = ["EXTRA", "Admission", "Limits", "create_app", "require"]
