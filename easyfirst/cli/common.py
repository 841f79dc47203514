"""What the verbs share: consoles, the model option, loading a tagger, reading inputs, writing outputs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from easyfirst.errors import InputError

WIDE = 1000  # off a terminal, nothing is wrapped: a record stays on one line (for grep and scripts)


def console(stderr: bool = False) -> Console:
    """A console for the user: wrapped to the terminal's width on a terminal, never wrapped elsewhere."""
    made = Console(stderr=stderr)
    return made if made.is_terminal else Console(stderr=stderr, width=WIDE, soft_wrap=True)


err = console(stderr=True)

ModelOption = Annotated[
    Path | None,
    typer.Option(
        "--model",
        "-m",
        help="Run folder written by `easyfirst train` (default: the bundled English UPOS model).",
    ),
]
DeviceOption = Annotated[str, typer.Option(help="cpu, cuda, cuda:1, ...")]
BatchOption = Annotated[int, typer.Option(help="Sentences tagged at once.")]


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
    from easyfirst.api import Tagger, default_model_path

    if model is not None and not model.exists():
        raise InputError("model folder not found", model)
    if model is None and not (default_model_path() / "model.pt").is_file():
        raise InputError("the bundled default model is missing from this installation; pass --model RUN_DIR")
    return Tagger.load(model, device)


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


def open_input(path: str | None):
    """A binary stream for ``path`` (stdin for None or ``-``) and its name for messages."""
    from easyfirst.data.files import open_binary

    if path is None or path == "-":
        return sys.stdin.buffer, "<stdin>"
    return open_binary(path), path


def check_output(output: Path | None) -> None:
    """Fail before any work if ``output`` cannot be written."""
    if output is None:
        return
    if output.is_dir():
        raise InputError("is a folder; give a file name", output)
    folder = output.parent if str(output.parent) else Path(".")
    if not folder.is_dir():
        raise InputError("cannot write: the folder does not exist", output)
    if not os.access(folder, os.W_OK):
        raise InputError("cannot write: permission denied", output)


def write_output(output: Path | None, write) -> None:
    """Call ``write(binary_stream)`` on stdout, or on a temporary file renamed to ``output`` on success."""
    if output is None:
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    from easyfirst.atomic import atomic_write

    check_output(output)
    try:
        atomic_write(output, write)
    except OSError as error:
        raise InputError(f"cannot write: {error.strerror}", output) from None


def text_words(text: str, pretokenized: bool) -> list[list[str]]:
    """The sentences of --text: tokenized by segtok, or (``pretokenized``) split on whitespace only."""
    from easyfirst.data.text import split, whitespace_tokens

    if pretokenized:
        words = [t.form for t in whitespace_tokens(text)]
        sentences = [words] if words else []
    else:
        sentences = [s.words for s in split(text)]
    if not sentences:
        raise InputError("--text has no words")
    return sentences
