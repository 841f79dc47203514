"""What the verbs share: consoles, the model and device options, loading a tagger, checking inputs. What
an input is and how its tagged output is written is easyfirst.tagging.pipeline, below the CLI."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from easyfirst.atomic import INTERRUPTS
from easyfirst.backends import CHOICES, NAMES
from easyfirst.errors import EMPTY_NAME, InputError
from easyfirst.resources import BUNDLED, MODEL_FILE, NOT_FOUND, model_folder

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
BackendOption = Annotated[
    str,
    typer.Option(
        metavar="NAME",
        help=f"Force a backend (debugging, benchmarks): one of {' | '.join(NAMES)}; auto: the fastest "
        "that supports each batch (docs/architecture.md).",
    ),
]
BatchOption = Annotated[
    int, typer.Option(help="Sentences per batch (each batch also at most 1,024 padded words).")
]


def import_torch():
    """torch, imported with an interrupt held until the import is done, then raised (easyfirst.atomic.
    INTERRUPTS): raised inside torch's start, a KeyboardInterrupt was swallowed by the C code that
    imports NumPy (`serve` then came up after a SIGTERM), or aborted the process from c10d's C++ init
    (exit status -6): both seen with SIGTERM sent 2.3 to 2.6 s into `serve --workers 2` on the loaded
    2-core machine."""
    with INTERRUPTS.held():
        import torch
    return torch


def check_device(device: str) -> None:
    torch = import_torch()

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


def load_tagger(model: Path | None, device: str = "cpu", note: bool = False, backend: str = "auto"):
    """The tagger of ``model`` (None: the bundled one) on ``device``, with ``backend`` forced unless
    "auto" (easyfirst.backends), which tags a large call on every core (``Tagger.processes``; a library
    call runs in its own process unless asked: easyfirst.tagging.pool). A missing folder or unknown
    backend is reported before torch is imported (for the device's check and the model). ``note``: say
    so if the run stopped before its last epoch (:func:`note_stopped`), where its scores or plots are
    studied."""

    folder = model_folder(model)
    if (model is None or str(model) in BUNDLED) and not (folder / MODEL_FILE).is_file():
        which = "default model" if model is None else f"model {model}"
        raise InputError(f"the bundled {which} is missing from this installation; pass --model RUN_DIR")
    if not folder.exists():
        raise InputError(NOT_FOUND, model)
    check_device(device)
    if backend not in CHOICES:
        raise InputError(f"--backend {backend}: one of {', '.join(CHOICES)}")
    from easyfirst.api import Tagger
    from easyfirst.backends.chooser import load_tagging_loops
    from easyfirst.parallel.cores import tagging_processes

    tagger = Tagger.load(folder, device, backend=backend, threads=None)  # the verb's threads: torch's own
    tagger.processes = tagging_processes()  # a large call on every core (at most 8); one off the CPU
    load_tagging_loops(tagger.model)  # the compiled loops, loaded before a pool forks (and compiled once)
    if note:
        note_stopped(folder, tagger.config)
    return tagger


def say_backend(tagger) -> None:
    """Log what computes the tagger's batches (``backend: numba (compiled CPU loops: BiLSTM and decoder)``),
    one line on stderr, as ``train`` logs its own."""
    err.print(f"backend: {tagger.chosen_backend}", markup=False, highlight=False, soft_wrap=True)


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


@dataclass(frozen=True)
class Stopped:
    """How far a run that stopped before its last epoch got (:func:`stopped`): ``done`` whole epochs of
    its ``epochs`` (None: unknown, neither metrics.json nor a checkpoint says), ``within`` one more
    begun."""

    done: int | None
    epochs: int
    within: bool = False

    def __str__(self) -> str:
        if self.done is None:
            return f"stopped before the end of its {self.epochs} epochs (no metrics.json, no checkpoint)"
        part = " and part of the next" if self.within else ""
        return f"stopped after epoch {self.done} of {self.epochs}{part}"


def stopped(folder: Path, config, metrics: dict | None = None) -> Stopped | None:
    """Whether the run in ``folder`` stopped before its configured epochs (interrupted, killed), and how
    far it got: from metrics.json's epochs when it has one, else from its checkpoint (the epoch it
    would resume at). None for a finished run, or a folder that is no run (an exported or bundled
    model has no train.log)."""
    from easyfirst.atomic import read_json
    from easyfirst.training.checkpoints import CHECKPOINT_FILE

    epochs = config.train.epochs
    if not (folder / "train.log").is_file():
        return None
    if metrics is None and (folder / "metrics.json").is_file():
        metrics = read_json(folder / "metrics.json")
    if metrics is not None:
        done = len(metrics.get("epochs", [])) or epochs
        return Stopped(done, epochs) if done < epochs else None
    if not (folder / CHECKPOINT_FILE).is_file():
        return Stopped(None, epochs)
    import torch

    try:
        state = torch.load(folder / CHECKPOINT_FILE, map_location="cpu", weights_only=True, mmap=True)
        return Stopped(int(state["epoch"]) - 1, epochs, bool(state["step"]))
    except Exception:  # noqa: BLE001 (an unreadable checkpoint: how far is unknown, not an error here)
        return Stopped(None, epochs)


def note_stopped(folder: Path, config) -> Stopped | None:
    """Say on stderr, in one line, that the run in ``folder`` stopped early (:func:`stopped`) and how to
    train the rest; the :class:`Stopped`, or None for a finished run."""
    early = stopped(folder, config)
    if early is not None:
        err.print(
            f"[yellow]note:[/] {folder} {early}: its model is the best of those epochs "
            f"(easyfirst train --resume {folder} trains the rest)",
            highlight=False,
        )
    return early
