"""What the verbs share: consoles, the model and device options, loading a tagger, checking inputs. What
an input is and how its tagged output is written is easyfirst.tagging.pipeline, below the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from easyfirst.errors import EMPTY_NAME, InputError
from easyfirst.resources import BUNDLED, MODEL_FILE, model_folder

WIDE = 1000  # off a terminal, nothing is wrapped: a record stays on one line (for grep and scripts)


def console(stderr: bool = False) -> Console:
    """A console for the user: wrapped to the terminal's width on a terminal, never wrapped elsewhere."""
    made = Console(stderr=stderr)
    return made if made.is_terminal else Console(stderr=stderr, width=WIDE, soft_wrap=True)


err = console(stderr=True)


def given_path(value: str) -> Path:
    """A path as given on the command line, the parser of every path argument and option: an empty one
    (an unset shell variable) is refused, where Path("") would silently name the current folder."""
    if value == "":
        raise typer.BadParameter(EMPTY_NAME)
    return Path(value)


ModelOption = Annotated[
    Path | None,
    typer.Option(
        "--model",
        "-m",
        parser=given_path,
        metavar="NAME|PATH",
        help="Run folder written by `easyfirst train`, or a bundled model by name: en-upos (the default), en-ner.",
    ),
]
DeviceOption = Annotated[str, typer.Option(metavar="DEVICE", help="cpu, cuda, cuda:1, ...")]
BatchOption = Annotated[
    int, typer.Option(help="Sentences per batch (each batch also at most 1,024 padded words).")
]


def check_device(device: str) -> None:
    import torch

    try:
        torch.device(device)
    except RuntimeError:
        raise InputError(f"--device: not a device name: {device!r}") from None
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError("--device cuda: no CUDA GPU is available here (use --device cpu)")


def check_option(flag: str, value, rule) -> None:
    """Refuse a verb's option value that breaks ``rule`` (easyfirst.fields), as ``flag: ...``."""
    if value is not None and not rule.test(value):
        raise InputError(f"{flag} must be {rule.says()}, not {value!r}")


def load_tagger(model: Path | None, device: str = "cpu"):
    """The tagger of ``model`` (None: the bundled one) on ``device``; a missing folder is reported
    before torch is imported (for the device's check and the model)."""

    folder = model_folder(model)
    if (model is None or str(model) in BUNDLED) and not (folder / MODEL_FILE).is_file():
        which = "default model" if model is None else f"model {model}"
        raise InputError(f"the bundled {which} is missing from this installation; pass --model RUN_DIR")
    if not folder.exists():
        raise InputError("model folder not found", model)
    check_device(device)
    from easyfirst.api import Tagger

    return Tagger.load(folder, device)


def task_of(tagger):
    """The tagger's task (easyfirst.tasks) and its [data] settings."""
    from easyfirst.tasks import get_task

    return get_task(tagger.config.data.task), tagger.config.data


def check_input(path: Path, what: str = "no such file") -> None:
    """Fail unless ``path`` is an input of some task (a file, or a QE prefix)."""
    from easyfirst.tasks import TASKS

    if not any(task.exists(path) for task in TASKS.values()):
        raise InputError(what, path)


def read_sentences(path: Path, tagger):
    """The sentences of ``path`` in the format of the tagger's task."""
    task, data = task_of(tagger)
    return task.read(path, data)
