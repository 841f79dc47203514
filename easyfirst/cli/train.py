"""``easyfirst train``: the common flags, the flags of config keys (easyfirst.cli.flags), and ``--set``."""

from __future__ import annotations

import inspect
import shutil
import typing
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from easyfirst.cli.app import app
from easyfirst.cli.common import check_device, err, given_path
from easyfirst.cli.options import (
    LAZY_CHOICES,
    SECTION_PANELS,
    WITH_VECTORS,
    config_parameters,
    config_values,
    given_flags,
)
from easyfirst.config import Config
from easyfirst.errors import InputError, WriteFailed
from easyfirst.resources import CHECKPOINT_FILE, CONFIG_FILE, METRICS_FILE, MODEL_FILE
from easyfirst.tasks import DEFAULT_TASK, TASKS


def recipe_text(recipe: dict[str, dict[str, object]]) -> str:
    """A task's config changes as flags: ``--attention-temperature 0.25``."""
    return " ".join(
        f"--{key.replace('_', '-')} {value}" for values in recipe.values() for key, value in values.items()
    )


# may change on --resume
RESUMABLE = {
    "train__epochs": "--epochs",
    "train__threads": "--threads",
    "train__workers": "--workers",
    "train__checkpoint_minutes": "--checkpoint-minutes",
}
COMMON = [
    inspect.Parameter(
        "task",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[
            str | None,
            typer.Option(
                rich_help_panel="Data",
                help="; ".join(f"{t.name}: {t.help}" for t in TASKS.values())
                + ". Default: the config file's, else pos.",
            ),
        ],
    ),
    inspect.Parameter(
        "config",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[
            Path | None,
            typer.Option(
                parser=given_path, metavar="FILE", help="TOML config (see configs/); flags override it."
            ),
        ],
    ),
    inspect.Parameter(
        "output",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[
            Path | None,
            typer.Option(
                "--output",
                "-o",
                parser=given_path,
                metavar="FOLDER",
                rich_help_panel="Output",
                help="Run folder (default: runs/TASK-MODEL-TIME).",
            ),
        ],
    ),
    inspect.Parameter(
        "device",
        inspect.Parameter.KEYWORD_ONLY,
        default="cpu",
        annotation=Annotated[
            str, typer.Option(metavar="DEVICE", rich_help_panel="Training", help="cpu, cuda, cuda:1, ...")
        ],
    ),
    inspect.Parameter(
        "overwrite",
        inspect.Parameter.KEYWORD_ONLY,
        default=False,
        annotation=Annotated[
            bool,
            typer.Option(
                rich_help_panel="Output", help="Allow writing into a run folder that already holds a model."
            ),
        ],
    ),
    inspect.Parameter(
        "resume",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[
            Path | None,
            typer.Option(
                parser=given_path,
                metavar="FOLDER",
                rich_help_panel="Output",
                help="Continue the run in this folder from its checkpoint: an interrupted one, or a "
                "finished one with a larger --epochs.",
            ),
        ],
    ),
    inspect.Parameter(
        "easy_first",
        inspect.Parameter.KEYWORD_ONLY,
        default=False,
        annotation=Annotated[
            bool,
            typer.Option(
                "--easy-first",
                help="Train for sharper attention still, about one word per early step as in the paper's "
                "Figure 2, with the task's recipe from the attention study ("
                + "; ".join(
                    f"{t.name}: {recipe_text(t.easy_first)}{t.easy_first_note}"
                    for t in TASKS.values()
                    if t.easy_first
                )
                + "; docs/studies/attention.md). Applied after --config and --set, before the other flags.",
            ),
        ],
    ),
    inspect.Parameter(
        "assignments",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[
            list[str] | None,
            typer.Option(
                "--set",
                metavar="SECTION.KEY=VALUE",
                help="Set any config key (repeatable), e.g. --set model.hidden_dim=100; the value is read "
                "as TOML. Applied after the config file, before the flags.",
            ),
        ],
    ),
]


def _task_defaults() -> dict[str, Config]:
    """task → its default config, for the help's defaults, and "TASK with --pretrained" → the same
    with the task's defaults with vectors where it has some (NER's English recipe)."""
    found = {}
    for name, task in TASKS.items():
        found[name] = Config.for_task(name)
        if task.with_vectors:
            found[f"{name} {WITH_VECTORS}"] = vectors = Config.for_task(name)
            vectors.update(task.with_vectors, f"task {name} with vectors")
    return found


def train(**given) -> None:
    """Train a tagger; its best epoch goes to the run folder.

    The run folder gets the best dev epoch's model, metrics.json and train.log. Defaults are the task's (configs/pos.toml and qe.toml hold the same values; configs/ner.toml adds the English vectors). Under
    `torchrun --nproc_per_node K -m easyfirst train ...` it trains data-parallel on K processes.
    """
    resume: Path | None = given["resume"]
    if resume is not None:
        return resume_training(resume, given)
    cfg = configured(given).resolved("command line")
    check_paths(cfg)
    note_summed_batches(cfg, given_flags(given))
    note_other_optimizer(cfg)
    check_device(given["device"])
    output = run_folder(given["output"], cfg, given["overwrite"])
    created = not output.exists()
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"cannot create the run folder: {error.strerror}", output) from None
    try:
        run_training(cfg, output, given["device"])
    except InputError:
        # a data error found before training began: leave no run folder holding only its train.log
        if created and {p.name for p in output.iterdir()} <= {"train.log"}:
            shutil.rmtree(output, ignore_errors=True)
        raise


def configured(given: dict) -> Config:
    """The run's config from the command line, still writable: the task's defaults or ``--config``,
    then ``--set``, then ``--easy-first``'s recipe, then the flags (``.resolved()`` checks it and gives
    the run's read-only config). ``given`` holds the verb's parameters (the flags that are not given, or
    that the verb lacks, count as not given)."""
    task = given.get("task")
    if task is not None and task not in TASKS:
        raise InputError(f"--task must be one of {', '.join(TASKS)}, not {task!r}")
    config = given.get("config")
    cfg = Config.load(config, task) if config else Config.for_task(task or DEFAULT_TASK)
    for assignment in given.get("assignments") or []:
        cfg.set_dotted(assignment)
    if given.get("easy_first"):
        recipe = TASKS[cfg.data.task].easy_first
        if not recipe:
            raise InputError(f"--easy-first: no easy-first recipe has been measured for task {cfg.data.task}")
        cfg.update(recipe, "--easy-first")
    for section, key, value, flag in config_values(given):
        cfg.assign(section, key, value, (flag, None))
    return cfg


def check_paths(cfg: Config) -> None:
    """Fail before the run folder is made if a data file or the pretrained vectors given are missing, or
    the vectors disagree with the settings given."""
    from easyfirst.data.vectors import NAMED, open_vectors
    from easyfirst.tasks import get_task

    task = get_task(cfg.data.task)
    for split in ("train", "dev", "test"):
        if getattr(cfg.data, split) is not None:
            task.check_exists(getattr(cfg.data, split), split)  # the task's own words (QE: which file)
    for key, size in (("pretrained", "word_dim"), ("source_pretrained", "source_dim")):
        path = cfg.model.get(key)
        if path is None:
            continue
        if path not in NAMED and not Path(path).is_file():
            origin = cfg.origins.get(f"model.{key}", ("command line", None))
            raise InputError(
                f"model.{key} {path!r} not found (easyfirst data --vectors lists the named sets)", *origin
            )
        # a named set not installed, a file of the wrong kind, a size given that differs, the wrong task
        cfg.thawed().follow_vectors(open_vectors(path), size)


def note_summed_batches(cfg: Config, flags: list[str]) -> None:
    """``--batch-size K`` alone, where the task's default is the paper's regime (``--task pos``), keeps
    the summed loss and the file order: say so, since a batch size usually comes with both changed."""
    t = cfg.train
    regime = {"--reduction", "--shuffle/--no-shuffle"}
    if "--batch-size" in flags and not regime & set(flags) and t.batch_size > 1:
        if t.reduction == "sum" and not t.shuffle:
            err.print(
                f"[yellow]note:[/] {t.batch_size} sentences per update with the loss summed over them and "
                "the training file in order (the defaults of the paper's regime); add --reduction mean "
                "--shuffle --lr 0.1 for the batched regime of the paper's §5.1"
            )


def note_other_optimizer(cfg: Config) -> None:
    """An optimizer given that is not the task's takes none of its settings (Config.leave_other_optimizers):
    where no rate was given either, say which it trains at, since NER's is SGD's 0.015."""
    defaults, t = TASKS[cfg.data.task].defaults, cfg.train
    if cfg.other_optimizer(defaults) and not cfg.given("train.lr"):
        err.print(
            f"[yellow]note:[/] --optimizer {t.optimizer} takes none of the {cfg.data.task} task's "
            f"{defaults['train']['optimizer']} settings: it trains at lr {t.lr:g} (the default of any other "
            f"optimizer), without momentum or decay; give --lr for {t.optimizer}"
        )


def run_folder(output: Path | None, cfg: Config, overwrite: bool) -> Path:
    if output is None:
        from easyfirst.training.distributed import launched

        if launched():  # the processes would each name a folder by their own clock
            raise InputError("under torchrun, give the run folder with --output (all processes share it)")
        output = Path("runs") / f"{cfg.data.task}-{cfg.model.model}-{datetime.now():%Y%m%d-%H%M%S}"
    if overwrite:
        return output
    if (output / CHECKPOINT_FILE).is_file() and not (output / METRICS_FILE).is_file():
        raise InputError(
            f"holds an unfinished run: continue it with `easyfirst train --resume {output}`, or pass "
            "--overwrite to start it again",
            output,
        )
    if (output / MODEL_FILE).exists():
        if not stopped_before_first_checkpoint(output):
            raise InputError("already holds a model; choose another --output or pass --overwrite", output)
        err.print(
            f"{output}: the run there stopped before its first checkpoint; training it again from the start"
        )
    return output


def stopped_before_first_checkpoint(folder: Path) -> bool:
    """Whether ``folder`` holds a training run (config.json and train.log written) stopped before it wrote
    a checkpoint or finished: nothing of it is kept, so it can only be trained again from the start."""
    names = (CONFIG_FILE, "train.log", CHECKPOINT_FILE, METRICS_FILE)
    config, log, checkpoint, metrics = ((folder / name).is_file() for name in names)
    return config and log and not checkpoint and not metrics


def resume_training(folder: Path, given: dict) -> None:
    """Continue the run in ``folder``; only --epochs, --threads, --workers, --checkpoint-minutes and
    --device may change. A run stopped before its first checkpoint is trained again from the start."""
    from easyfirst.atomic import read_json

    fixed = [f"--{name}" for name in ("task", "config", "output") if given[name] is not None]
    fixed += ["--overwrite"] * bool(given["overwrite"]) + ["--set"] * bool(given["assignments"])
    fixed += ["--easy-first"] * bool(given["easy_first"])
    fixed += [flag for flag in given_flags(given) if flag not in RESUMABLE.values()]
    if fixed:
        raise InputError(
            f"--resume continues the run as it was configured: {', '.join(fixed)} cannot be "
            f"given with it (only {', '.join(RESUMABLE.values())} and --device can)"
        )
    if not folder.is_dir():
        raise InputError("run folder not found", folder)
    if (folder / "train.log").is_file() and not (folder / CONFIG_FILE).is_file():
        raise InputError(
            "nothing to resume: the run stopped before it began training (no config.json); run the "
            "command that started it again",
            folder,
        )
    cfg = Config.from_saved(read_json(folder / CONFIG_FILE), str(folder / CONFIG_FILE)).thawed()
    for key, flag in RESUMABLE.items():
        if given[key] is not None:
            cfg.assign("train", key.split("__")[1], given[key], (flag, None))
    cfg = cfg.resolved("command line")
    check_device(given["device"])
    again = stopped_before_first_checkpoint(folder)
    if again:
        err.print(
            f"{folder}: no checkpoint to resume from, the run stopped before its first one; training it "
            "again from the start, as its config.json says"
        )
    run_training(cfg, folder, given["device"], resume=not again)


def run_training(cfg: Config, output: Path, device: str, resume: bool = False) -> None:
    import time

    from easyfirst.training.loop import train as train_loop

    began = time.time()
    try:
        train_loop(cfg, output, device=device, console=err, resume=resume)
    except FloatingPointError as error:
        err.print(f"[red]training stopped:[/] {error} in {output}")
        raise typer.Exit(1) from None
    except WriteFailed as error:  # a full disk: one line, what is kept and how to go on once space is freed
        raise InputError(f"{error.message}; {after_write_failed(output, began)}", error.path) from None
    except KeyboardInterrupt:  # Ctrl-C: say how to go on (a SystemExit, which Typer passes through)
        from easyfirst.cli.app import report

        kept = what_is_kept(output, began)
        if kept is not None:
            report(kept)
            report(f"interrupted; continue from the last checkpoint with: easyfirst train --resume {output}")
        elif (output / CONFIG_FILE).is_file():
            report(
                f"interrupted before the first checkpoint in {output}: nothing is kept; start it again with: "
                f"easyfirst train --resume {output}"
            )
        else:
            report(
                f"interrupted before training began in {output}: nothing is kept; run the same command again"
            )
        raise SystemExit(130) from None


def after_write_failed(output: Path, began: float) -> str:
    """What a run that could not write a file (a full disk) keeps, and the command that continues it
    once there is space: its last checkpoint, or, before the first one, a folder without a model that
    ``--resume`` trains again from the start, or nothing (the run folder is removed by :func:`train`)."""
    kept = what_is_kept(output, began)
    if kept is not None:
        return f"{kept}; free some space, then continue with: easyfirst train --resume {output}"
    if (output / CONFIG_FILE).is_file():
        model = "its model.pt is kept" if (output / MODEL_FILE).is_file() else f"{output} holds no model yet"
        return (
            f"the run stopped before its first checkpoint ({model}); free some space, then train it again "
            f"from the start with: easyfirst train --resume {output}"
        )
    return "nothing is kept; free some space, then run the same command again"


def what_is_kept(output: Path, began: float) -> str | None:
    """What an interrupted run keeps: its last checkpoint (where it stands, how long ago it was
    written) and best model; what the interruption loses: the training since, by this command (which
    ``began`` then, a time.time(): a resumed run's checkpoint may be days old). None: no checkpoint."""
    import time

    import torch

    from easyfirst.training.reporting import duration

    path = output / CHECKPOINT_FILE
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        ago = time.time() - max(path.stat().st_mtime, began)
    except Exception:  # noqa: BLE001 (none, or unreadable: --resume says which)
        return None
    epoch, step, best = state["epoch"], state["step"], state["best"].get("epoch", 0)
    where = f"epoch {epoch}, update {step:,}" if step else f"the end of epoch {epoch - 1}"
    model = f" and the best model so far (epoch {best})" if best else ""
    return f"kept: the checkpoint at {where}{model}; lost: the {duration(ago)} of training since it"


def _panel(parameter: inspect.Parameter) -> str | None:
    return getattr(typing.get_args(parameter.annotation)[1], "rich_help_panel", None)


def _register() -> None:
    """``train`` with the flags of config keys (easyfirst.cli.flags.FLAGS), grouped for --help: the general options first,
    then a panel per config section (a task's own flags in a panel of their own, options.panel_of), the
    run folder's options last."""
    parameters = list(COMMON) + config_parameters(_task_defaults(), TASKS)
    order = [None, *SECTION_PANELS.values()]
    parameters.sort(
        key=lambda p: (_panel(p) == "Output", order.index(_panel(p)) if _panel(p) in order else 99)
    )
    train.__signature__ = inspect.Signature(parameters)
    LAZY_CHOICES["task"] = lambda: list(TASKS)
    app.command()(train)


_register()
