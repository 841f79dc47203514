"""What a study found: a line of counts, a table of its best trials, and pictures in the study folder
(Optuna's matplotlib plots: the optimisation history, the dev score of every trial epoch by epoch with
the pruned ones cut short, the parameters' importances, and for two objectives the Pareto front)."""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

from rich.table import Table

from easyfirst.atomic import atomic_write
from easyfirst.tuning.study import require_optuna, show

BEST_SHOWN = 5


def counts(study) -> str:
    """``13 trials: 8 complete, 3 pruned, 1 failed, 1 interrupted (run again)``: a failed trial has an
    error (it counts towards ``--trials``); an interrupted one (Ctrl-C, its process killed) does not, it
    is queued again."""
    trials = study.get_trials(deepcopy=False)
    states = Counter(
        "interrupted" if t.state.name == "FAIL" and "error" not in t.user_attrs else t.state.name.lower()
        for t in trials
    )
    order = ("complete", "pruned", "fail", "interrupted", "running", "waiting")
    shown = {"fail": "failed", "interrupted": "interrupted (run again)"}
    parts = [f"{states[s]} {shown.get(s, s)}" for s in order if states[s]]
    return f"{len(trials)} trials: {', '.join(parts) or 'none yet'}"


def best_trials(study, shown: int = BEST_SHOWN) -> list:
    """The trials with the best dev scores, complete or pruned (one objective); the Pareto-optimal
    ones by dev score (two)."""
    if len(study.directions) > 1:
        front = [t for t in study.best_trials]
        return sorted(front, key=lambda t: -t.values[0])[:shown]
    scored = [t for t in study.get_trials(deepcopy=False) if "dev" in t.user_attrs]
    return sorted(scored, key=lambda t: -t.user_attrs["dev"])[:shown]


def best_table(study, label: str, width: int = 80) -> Table | None:
    """The best trials side by side, one column each: dev score, epochs, state, then every parameter;
    as many as fit in ``width`` columns (at least one, at most five)."""
    trials = best_trials(study)
    if not trials:
        return None
    names = sorted({name for t in trials for name in t.params})
    room = (width - 4 - max(len(n) for n in names + [f"dev {label}", "best epoch"])) // 11  # 8 + borders
    trials = trials[: max(1, room)]
    two = len(study.directions) > 1
    title = "Pareto-optimal trials (dev score and sharpness)" if two else "Best trials by dev score"
    table = Table(title=title, title_justify="left")
    table.add_column("trial")
    for t in trials:
        table.add_column(f"#{t.number}", justify="right")
    table.add_row(f"dev {label}", *(f"{100 * t.user_attrs['dev']:.2f}" for t in trials))
    if two:
        table.add_row("sharpness", *(f"{t.user_attrs['sharpness']:.3f}" for t in trials))
    table.add_row(
        "best epoch", *(f"{t.user_attrs['best_epoch']} of {t.user_attrs['epochs']}" for t in trials)
    )
    table.add_row("state", *(t.state.name.lower() for t in trials), end_section=True)
    for name in names:
        table.add_row(name, *(show(t.params[name]) if name in t.params else "-" for t in trials))
    return table


TITLES = {
    "history.png": "Optimisation history: each trial's dev {label}, and the best so far",
    "epochs.png": "Dev {label} epoch by epoch (a pruned trial stops early)",
    "importances.png": "What moved the dev {label}, over {complete} complete trials",
    "pareto.png": "Dev {label} against sharpness: the Pareto front",
}

# Optuna's legends, in the words of the titles
LEGEND = {
    "Objective Value": "a trial",
    "Best Value": "best so far",
    "Trial": "a trial",
    "Best Trial": "on the Pareto front",
}


def leave_out_far_trials(axes, scores: list[float]) -> int:
    """A diverged trial (30% dev beside trials at 94%) squashes the others into one line: the y axis then
    starts at the lower quartile of ``scores`` less 1.5 times its distance to the best (Tukey's fence),
    and a note counts the trials below it. Returns how many were left out."""
    ordered = sorted(scores)
    if len(ordered) < 4:
        return 0
    low, best = ordered[len(ordered) // 4], ordered[-1]
    if best <= low:
        return 0
    bottom = low - 1.5 * (best - low)
    below = sum(score < bottom for score in scores)
    if below:
        axes.set_ylim(bottom, best + 0.1 * (best - bottom))
        trials = "trial" if below == 1 else "trials"
        note = f"{below} {trials} below {bottom:.1%}, not shown"
        axes.annotate(note, xy=(0.01, 0.02), xycoords="axes fraction", fontsize=9)
    return below


def pictures(study, folder: Path, label: str) -> tuple[list[Path], list[str]]:
    """Write the study's pictures into ``folder``; returns those written and why any was not."""
    require_optuna()  # its warnings quieted
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator, PercentFormatter
    from optuna.visualization import matplotlib as plots

    two = len(study.directions) > 1
    score = {"target": lambda t: t.values[0], "target_name": f"dev {label}"} if two else {}
    complete = [t for t in study.get_trials(deepcopy=False) if t.state.name == "COMPLETE"]
    drawings = {"history.png": lambda: plots.plot_optimization_history(study, **score)}
    if not two:  # with two objectives no epoch is reported (no pruning)
        drawings["epochs.png"] = lambda: plots.plot_intermediate_values(study)
    # PedAnova (Optuna's default from 3.6) reads a target given as one to minimise
    negative = {"target": lambda t: -t.values[0], "target_name": f"dev {label}"} if two else {}
    drawings["importances.png"] = lambda: plots.plot_param_importances(study, **negative)
    if two:
        drawings["pareto.png"] = lambda: plots.plot_pareto_front(
            study, target_names=[f"dev {label}", "sharpness"]
        )
    written, skipped = [], []
    for file, draw in drawings.items():
        needed = {"importances.png": 3, "epochs.png": 0}.get(file, 1)  # epochs: a running trial's too
        if len(complete) < needed:
            trials = "trials" if needed > 1 else "trial"
            skipped.append(f"{file} (after {needed} complete {trials}; {len(complete)} so far)")
            continue
        try:
            with warnings.catch_warnings():  # the target negated on purpose, for PedAnova (above)
                warnings.filterwarnings("ignore", message="PedAnovaImportanceEvaluator computes")
                axes = draw()
        except (ValueError, RuntimeError, ZeroDivisionError) as error:
            skipped.append(f"{file} ({error})")
            continue
        figure = axes.figure
        figure.set_size_inches(8, 5)
        axes.set_title("", loc="left")  # Optuna's own title, where it puts it
        title = TITLES[file].format(label=label, complete=len(complete))
        axes.set_title(title.replace(", and the best so far", "") if two else title)
        if file in ("history.png", "epochs.png"):
            axes.set_ylabel(f"dev {label}")
            axes.yaxis.set_major_formatter(PercentFormatter(1.0))
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
            axes.set_xlabel("trial" if file == "history.png" else "epoch")
        if file == "history.png":
            leave_out_far_trials(axes, [t.values[0] for t in complete])
        if file == "pareto.png":
            axes.xaxis.set_major_formatter(PercentFormatter(1.0))
        if file == "importances.png":
            axes.set_xlabel("importance (a share: they add up to 1)")
            axes.set_ylabel("")
        if file in ("epochs.png", "importances.png") and axes.get_legend() is not None:
            axes.get_legend().remove()  # one entry per trial; the one target, named in the title
        elif axes.get_legend() is not None:
            for text in axes.get_legend().get_texts():
                text.set_text(LEGEND.get(text.get_text(), text.get_text()))
        figure.tight_layout()
        # atomically: a full disk leaves the last complete picture, and one line naming it (WriteFailed)
        atomic_write(folder / file, lambda out, figure=figure: figure.savefig(out, format="png", dpi=100))
        plt.close(figure)
        written.append(folder / file)
    return written, skipped
