"""``easyfirst tune``: hyperparameter search with Optuna (easyfirst.tuning), every trial a training run.

The study's settings (the base config made as ``easyfirst train`` makes it, the search space, the pruner,
the objectives, the storage) are those of its first call, kept in ``STUDY/study.json``: a later call on
the same folder gives none of them, or the same.
"""

from __future__ import annotations

import inspect
import shutil
from pathlib import Path
from typing import Annotated

import typer

from easyfirst.cli.app import app
from easyfirst.cli.common import check_device, check_option, err, given_path
from easyfirst.cli.options import config_parameters
from easyfirst.cli.train import COMMON, _task_defaults, check_paths, configured
from easyfirst.errors import InputError
from easyfirst.fields import at_least, positive, read_toml

# the options that make the study's settings, besides the config flags below (saved in study.json)
SETTINGS = ("task", "config", "assignments", "space", "pruner", "objectives", "storage")
# the config flags of `easyfirst train` that tune takes (the rest: --config or --set)
FLAGS = ("data__train", "data__dev", "data__test", "model__pretrained", "train__epochs", "train__seed")
HELP = {
    "data__test": "Test file: never read while searching, scored once per seed by --retrain-best "
    "(default: the task's data set's).",
}


def option(name: str, annotation, default=None) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


OWN = [
    inspect.Parameter(
        "study",
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        annotation=Annotated[
            Path,
            typer.Argument(
                parser=given_path,
                metavar="STUDY",
                help="The study's folder: made by the first call; easyfirst tune STUDY again goes on.",
            ),
        ],
    ),
    option(
        "space",
        Annotated[
            Path | None,
            typer.Option(
                parser=given_path,
                metavar="PATH",
                help="The search space, a TOML file of config keys with ranges or choices (see "
                "configs/tune/ner.toml); needed to start a study.",
            ),
        ],
    ),
    option(
        "trials",
        Annotated[
            int,
            typer.Option(
                metavar="N",
                help="Trials the study should have, counting those of earlier calls and of the other "
                "processes on it (complete, pruned or failed; an interrupted one runs again).",
            ),
        ],
        20,
    ),
    option(
        "timeout",
        Annotated[
            float | None,
            typer.Option(metavar="SECONDS", help="Start no trial after this long (a running one finishes)."),
        ],
    ),
    option(
        "pruner",
        Annotated[
            str | None,
            typer.Option(
                metavar="NAME",
                help="Stop unpromising trials on their epochs' dev scores: median (below the median of "
                "the earlier trials at that epoch, from epoch 3 and the 6th trial on), halving "
                "(successive halving) or none. \\[default: median]",
            ),
        ],
    ),
    option(
        "objectives",
        Annotated[
            str | None,
            typer.Option(
                metavar="NAMES",
                help="What is maximised: score (the task's dev score, of the best epoch), or "
                "score,sharpness (also the attention's sharpness on dev: a Pareto front, no pruning). "
                "\\[default: score]",
            ),
        ],
    ),
    option(
        "storage",
        Annotated[
            str | None,
            typer.Option(
                metavar="URL",
                help="Optuna's storage as an RDB URL, for processes on several machines (each with a "
                "study folder of the same name). \\[default: SQLite in STUDY/study.db]",
            ),
        ],
    ),
    option(
        "report",
        Annotated[bool, typer.Option("--report", help="Show the best trials and draw the pictures only.")],
        False,
    ),
    option(
        "retrain_best",
        Annotated[
            bool,
            typer.Option(
                "--retrain-best",
                help="Train the best trial's configuration at each of --seeds (and --epochs, if given), "
                "scoring test once per seed (STUDY/best/seed-K/), and write the scores and their mean "
                "± sd to --results.",
            ),
        ],
        False,
    ),
    option(
        "trial",
        Annotated[
            int | None,
            typer.Option(
                metavar="N",
                help="With --retrain-best: trial N's configuration instead of the best's (a complete "
                "trial, e.g. a cheaper one within the seeds' spread of the best).",
            ),
        ],
    ),
    option(
        "seeds",
        Annotated[str, typer.Option(metavar="SEEDS", help="Seeds of --retrain-best: 1-5, 1,3,7.")],
        "1-5",
    ),
    option(
        "results",
        Annotated[
            Path | None,
            typer.Option(
                parser=given_path,
                metavar="PATH",
                help="The JSON of --retrain-best (e.g. benchmarks/results/...). \\[default: STUDY/best/results.json]",
            ),
        ],
    ),
    option(
        "train__threads",
        Annotated[
            int | None,
            typer.Option(
                "--threads",
                metavar="N",
                help="CPU threads of each trial, and one process (Hogwild's --workers 1): so several "
                "easyfirst tune processes on one study share the cores without oversubscribing them, "
                "one per core. \\[default: 1]",
            ),
        ],
    ),
]


def tune(**given) -> None:
    """Search hyperparameters (Optuna): trials of train, scored on dev.

    A trial trains with values drawn from the search space (--space) and is scored by its best epoch's dev score; the test set is never read. Every trial is a run folder (STUDY/trials/NNNN). The study is kept in STUDY/study.db, so that an interrupted study goes on where it stopped and several easyfirst tune processes on one folder share its trials. At the end: a table of the best trials and pictures in STUDY (optimisation history, dev score by epoch, parameter importances).
    """
    from easyfirst.tuning import settings as kept
    from easyfirst.tuning.space import read_space

    folder: Path = given["study"]
    if given["report"] and given["retrain_best"]:
        raise InputError("--report and --retrain-best are two calls: give one of them")
    if given["trial"] is not None and not given["retrain_best"]:
        raise InputError("--trial chooses the trial that --retrain-best trains: give both")
    for name, flag in (("train__threads", "--threads"), ("trials", "--trials")):
        check_option(flag, given[name], at_least(1))
    check_option("--timeout", given["timeout"], positive())
    check_device(given["device"])
    before = kept.saved(folder)
    if before is None and (given["report"] or given["retrain_best"]):
        raise InputError("no study here: start one with --space", folder)
    command = {name: given[name] for name in (*SETTINGS, *FLAGS)}
    if given["retrain_best"]:  # --epochs is then retraining's, not a setting of the study
        command["train__epochs"] = None
    settings = kept.merged(command, before, folder)
    base = configured(settings)
    base.assign("train", "threads", given["train__threads"] or 1, ("--threads", None))
    if not base.given("train.workers"):
        base.assign("train", "workers", 1, ("--threads", None))
    base = base.resolved("command line").thawed()  # the values it implies, kept by every trial's copy
    check_paths(base)
    if given["space"] is None and before is None:
        raise InputError("a new study needs its search space: --space PATH (e.g. configs/tune/ner.toml)")
    text = read_toml(given["space"], "search space")[1] if given["space"] else before["space_text"]
    space = read_space(text, settings["space"], base)
    objectives = kept.objectives(settings["objectives"])
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        study = open_study(folder, settings, base, objectives, before, text)
    except InputError:  # a storage that cannot be opened: no study folder left behind
        if created:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    run_study(study, folder, base, space, objectives, given, settings["storage"])


def open_study(folder: Path, settings: dict, base, objectives: list[str], before, text: str):
    """The study in its storage, its settings recorded (a new study) or checked (one under way)."""
    from easyfirst.tuning import settings as kept
    from easyfirst.tuning import study as studies

    with studies.locked(folder):
        pruner = studies.make_pruner(settings["pruner"] if len(objectives) == 1 else "none")
        study = studies.open_study(folder, settings["storage"], ["maximize"] * len(objectives), pruner)
        for note in kept.record(folder, settings, base, text, before):
            err.print(note, highlight=False, markup=False)
    return study


def run_study(
    study, folder: Path, base, space, objectives: list[str], given: dict, storage: str | None
) -> None:
    """Report, retrain or search as asked; a search ends with the report. ``storage``: the study's
    (None: SQLite in the folder)."""
    from easyfirst.tasks import get_task
    from easyfirst.tuning import retrain
    from easyfirst.tuning import study as studies
    from easyfirst.tuning.liveness import searching

    label = get_task(base.data.task).scoring.selection(base)[1]
    if given["retrain_best"]:
        if given["train__epochs"] is not None:  # the trials' epochs unless given (the trials' early stop)
            base.assign("train", "epochs", given["train__epochs"], ("--epochs", None))
        results = given["results"] or folder / "best" / "results.json"
        seeds = retrain.parse_seeds(given["seeds"])
        paths = studies.split_paths(base)
        retrain.retrain_best(
            study, base, space, paths, folder, seeds, results, given["device"], err, given["trial"]
        )
        return
    if not given["report"]:
        search = studies.Search(
            study, folder, base, space, studies.split_paths(base), given["device"], objectives, err, label
        )
        local = storage is None or storage.startswith("sqlite")  # every process on this machine
        with searching(folder) as search.lock:  # held until the search ends: its trials' process lives
            with studies.locked(folder):  # one process closes a lost trial and queues it again
                closed, again = studies.retry_interrupted(study, folder, local)
            if closed:
                which = ", ".join(map(str, closed))
                err.print(f"closed as failed, their process gone: trial {which}", highlight=False)
            if again:
                err.print(
                    f"interrupted before, run again: trial {', '.join(map(str, again))}", highlight=False
                )
            search_until(search, folder, given["trials"], given["timeout"])
    show_report(study, folder, label)


def search_until(search, folder: Path, trials: int, timeout: float | None) -> None:
    from easyfirst.tuning.study import counted

    have = counted(search.study)
    if have >= trials:
        err.print(f"the study has {have} trials (--trials {trials}): none to run", highlight=False)
        return
    err.print(f"study {folder}: {have} trials so far, running until {trials}", highlight=False)
    err.print(f"searching {'; '.join(p.describe() for p in search.space.parameters)}", highlight=False)
    if search.space.unused:
        err.print(
            f"not searched (a BiLSTM has no sketch decoder): {', '.join(search.space.unused)}",
            highlight=False,
        )
    try:
        search.run(trials, timeout)
    except KeyboardInterrupt:  # Ctrl-C: say how to go on (a SystemExit, which Typer passes through)
        from easyfirst.cli.app import report

        report(f"interrupted; easyfirst tune {folder} goes on (the trials finished are kept)")
        raise SystemExit(130) from None


def show_report(study, folder: Path, label: str) -> None:
    from easyfirst.tuning.report import best_table, counts, pictures

    err.print(counts(study), highlight=False)
    table = best_table(study, label, err.width)
    if table is not None:
        err.print(table)
    written, skipped = pictures(study, folder, label)
    if written:
        err.print(f"pictures: {', '.join(map(str, written))}", highlight=False)
    if skipped:
        err.print(f"not drawn: {'; '.join(skipped)}", highlight=False)


def _register() -> None:
    parameters = list(OWN)
    parameters += [p for p in COMMON if p.name in ("task", "config", "device", "assignments")]
    for p in config_parameters(_task_defaults()):
        if p.name in FLAGS:
            if p.name in HELP:
                kind, spec = p.annotation.__origin__, p.annotation.__metadata__[0]
                spec.help = HELP[p.name]
                p = p.replace(annotation=Annotated[kind, spec])
            parameters.append(p)
    tune.__signature__ = inspect.Signature(parameters)
    app.command()(tune)


_register()
