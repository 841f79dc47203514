"""``easyfirst tune STUDY --retrain-best``: the best trial's configuration trained again at several seeds,
each a normal run folder (``STUDY/best/seed-K/``) scored once on test, and one JSON with the scores of
every seed and their mean ± sd (the sample standard deviation)."""

from __future__ import annotations

import platform
import statistics
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console

from easyfirst.atomic import read_json, write_json
from easyfirst.config import Config
from easyfirst.errors import InputError
from easyfirst.tuning.space import Space

STATES = {"PRUNED": "was pruned", "FAIL": "failed", "RUNNING": "is running", "WAITING": "is waiting"}
RUN_FILE = "tune.json"  # in a seed's run folder: the trial, seed and epochs it trained (so it is kept)


def parse_seeds(text: str) -> list[int]:
    """``1-5`` → [1, 2, 3, 4, 5]; ``1,3,7`` and ``1-3,9`` too."""
    seeds: list[int] = []
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high) if dash else int(low)
        except ValueError:
            raise InputError(f"--seeds takes seeds as 1-5 or 1,3,7, not {text!r}") from None
        if first < 0 or last < first:
            raise InputError(f"--seeds: {part.strip()!r} is not a range of seeds (0 or more, low-high)")
        seeds += [s for s in range(first, last + 1) if s not in seeds]
    return seeds


def trial_to_retrain(study, number: int | None = None):
    """The complete trial with the best dev score (with two objectives: the best dev score of the
    Pareto front), or trial ``number`` if given (it must be complete: only then did it train its
    configuration to the end)."""
    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    if number is not None:
        chosen = next((t for t in trials if t.number == number), None)
        if chosen is None:
            which = f"trials 0–{len(trials) - 1}" if trials else "it has no trials yet"
            raise InputError(f"--trial {number}: the study has no such trial ({which})")
        if chosen.state.name != "COMPLETE":
            numbers = ", ".join(str(t.number) for t in complete) or "none yet"
            state = STATES.get(chosen.state.name, "is not complete")
            raise InputError(f"--trial {number}: that trial {state} (complete trials: {numbers})")
        return chosen
    if not complete:
        raise InputError("the study has no complete trial yet: run easyfirst tune on it first")
    front = study.best_trials if len(study.directions) > 1 else complete
    return max(front, key=lambda t: t.user_attrs["dev"])


def mean_sd(values: list[float]) -> dict:
    return {
        "mean": statistics.fmean(values),
        "sd": statistics.stdev(values) if len(values) > 1 else None,
        "n": len(values),
    }


def retrain_best(
    study,
    base: Config,
    space: Space,
    paths: dict,
    folder: Path,
    seeds: list[int],
    results: Path,
    device: str,
    console: Console,
    number: int | None = None,
) -> dict:
    """Train the best trial's configuration (or trial ``number``'s) at each seed into
    ``folder/best/seed-K`` (a seed already trained there for this trial is kept), score test once per
    seed, and write ``results``."""
    from easyfirst.training.loop import train

    trial = trial_to_retrain(study, number)
    rows = []
    for seed in seeds:
        cfg = base.thawed()
        space.apply(cfg, trial.params, f"trial {trial.number}")
        cfg.assign("train", "seed", seed, ("--seeds", None))
        cfg.data.train, cfg.data.dev, cfg.data.test = paths["train"], paths["dev"], paths["test"]
        cfg = cfg.resolved(f"trial {trial.number}")
        output = folder / "best" / f"seed-{seed}"
        done = output / RUN_FILE
        if done.is_file() and read_json(done) == {
            "trial": trial.number,
            "seed": seed,
            "epochs": cfg.train.epochs,
        }:
            metrics = read_json(output / "metrics.json")
            console.print(f"seed {seed}: trained before in {output}", highlight=False)
        else:
            console.print(
                f"seed {seed}: training trial {trial.number}'s configuration into {output}", highlight=False
            )
            done.unlink(missing_ok=True)
            metrics = train(cfg, output, device=device, console=Console(quiet=True))
            (output / "checkpoint.pt").unlink(missing_ok=True)
            write_json(done, {"trial": trial.number, "seed": seed, "epochs": cfg.train.epochs})
        metric = metrics["best_metric"]
        row = {
            "seed": seed,
            "dev": metrics["dev"][metric],
            "best_epoch": metrics["best_epoch"],
            "run": str(output),
        }
        row["test"] = metrics["test"][metric] if "test" in metrics else None
        console.print(
            f"seed {seed}: dev {100 * row['dev']:.2f}"
            + (f", test {100 * row['test']:.2f}" if row["test"] is not None else ", no test set")
            + f" (best epoch {row['best_epoch']})",
            highlight=False,
        )
        rows.append(row)
    summary = {
        "study": str(folder),
        "trial": trial.number,
        "params": trial.params,
        "task": base.data.task,
        "metric": metric,
        "seeds": rows,
        "dev": mean_sd([r["dev"] for r in rows]),
        "test": mean_sd([r["test"] for r in rows]) if all(r["test"] is not None for r in rows) else None,
        "config": {k: v for k, v in cfg.to_dict().items()},
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {platform.system()}, {device}",
    }
    summary["config"]["train"].pop("seed", None)
    results.parent.mkdir(parents=True, exist_ok=True)
    write_json(results, summary)
    dev, tested = summary["dev"], summary["test"]
    line = f"trial {trial.number} at {len(rows)} seeds: dev {pm(dev)}"
    console.print(
        line + (f", test {pm(tested)}" if tested else "") + f"; written to {results}", highlight=False
    )
    return summary


def pm(stats: dict) -> str:
    """``91.20 ± 0.35`` (percent)."""
    sd = "" if stats["sd"] is None else f" ± {100 * stats['sd']:.2f}"
    return f"{100 * stats['mean']:.2f}{sd}"
