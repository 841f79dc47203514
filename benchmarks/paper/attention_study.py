"""Which training choices make the decoder's attention easy-first (sharp) on UD English EWT, and the
paper's Table 1 English rows at its budget in the paper's own training regime (issue #15).

    python benchmarks/paper/attention_study.py --rows ref-csoftmax ref-sparsemax      # trains, resumably
    python benchmarks/paper/attention_study.py --list                                 # the rows and their flags
    python benchmarks/paper/attention_study.py --report                               # Markdown from the JSON

Each row is one `easyfirst train --task pos` run into runs/attention-study/ROW (`--runs` to change),
one torch thread, the data set of the pos task (EWT through EASYFIRST_DATA). A row whose folder has a
checkpoint but no metrics.json, or one with fewer epochs than the row's, is continued with `easyfirst
train --resume FOLDER --epochs E` (a study spans sessions); a finished row is not trained again. After
training, `easyfirst analyze` on EWT dev gives the attention statistics, and the row's result (metrics.json's scores and per-epoch history, the sharpness summary,
the first focus by tag) goes to benchmarks/results/attention-study/ROW.json, from which `--report`
rebuilds the tables without the run folders.

The rows are defined in study_rows.py (and contextual_rows.py, which it includes). "ref" rows use
configs/pos-reference.toml (the paper's code: one sentence per update, the loss summed
over its words, Adagrad lr 0.1, clipping at 5 per update, file order); "b16" rows 16 sentences per
update, the mean loss, shuffled, lr 0.1 (the POS defaults until the study made the paper's regime at
lr 0.05 the default). Each row spells its regime
and attention temperature out, so that it keeps its meaning if the defaults change; everything else is
the POS defaults (configs/pos.toml).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from pos_table import cell, train_command
from study_rows import NER_ROWS, ROOT, ROWS

from easyfirst.atomic import die_with_parent

RESULTS = ROOT / "benchmarks" / "results" / "attention-study"
DEV_FILES = {
    "pos": "ud/UD_English-EWT/en_ewt-ud-dev.conllu",
    "ner": "ner/conll2003/eng.testa",
    "qe": "qe/wmt19-en-de/dev",  # a QE prefix (.src, .mt, .src-mt.alignments, .tags)
}
# the dev score each task's rows are chosen and reported by (QE: MT words and gaps, WMT19's score)
SCORES = {"pos": "accuracy", "ner": "f1", "qe": "target_f1_mult"}


def task_of_result(result: dict) -> str:
    """The task of a kept result (results kept before the field was written: told by their score)."""
    return result.get("task") or next(t for t, score in SCORES.items() if f"dev_{score}" in result)


def bad_share_by_chance(prefix: Path) -> float:
    """How often a word drawn uniformly from each sentence is BAD, averaged over the sentences of a QE
    set's gold ``.tags`` (word tags only: every other tag of a 2N+1 line)."""
    shares = []
    for line in Path(f"{prefix}.tags").read_text(encoding="utf-8").splitlines():
        tags = line.split()
        words = tags[1::2] if len(tags) % 2 == 1 and len(tags) > 1 else tags
        shares.append(sum(tag == "BAD" for tag in words) / len(words))
    return statistics.mean(shares)


def task_of(name: str) -> str:
    return "ner" if name in NER_ROWS else "pos"


def dev_file(task: str = "pos") -> Path:
    root = Path(os.environ.get("EASYFIRST_DATA", ROOT.parent / "shared" / "data"))
    return root / DEV_FILES[task]


def easyfirst(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "easyfirst", *arguments]


def train_row(name: str, runs: Path, seed: int) -> Path:
    """Train (or continue) one row; returns its run folder."""
    _, flags, epochs = ROWS[name]
    folder = runs / (name if seed == 1 else f"{name}-seed{seed}")
    metrics = folder / "metrics.json"
    if metrics.exists() and len(json.loads(metrics.read_text())["epochs"]) >= epochs:
        return folder
    if (folder / "checkpoint.pt").exists():  # interrupted, or finished with fewer epochs than the row's
        command = easyfirst("train", "--resume", str(folder), "--epochs", str(epochs))
    else:
        # pos_table's training command, with a checkpoint every 2,000 updates so that little is lost
        command = train_command(
            [*flags, "--checkpoint-every", "2000"], epochs, seed, runs, task=task_of(name), output=folder
        )
    print(f"{time.strftime('%H:%M:%S')} {name}: {' '.join(command[2:])}", file=sys.stderr, flush=True)
    # the training ends with this script (SIGTERM: it keeps its checkpoint), also when this one is killed
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, preexec_fn=stop_with_this_process)
    return folder


def stop_with_this_process() -> None:
    die_with_parent(signal.SIGTERM)


def save_row(
    name: str,
    folder: Path,
    seed: int,
    varies: str | None = None,
    task: str | None = None,
    dev: Path | None = None,
) -> dict:
    """Analyse the trained row on its task's dev set (or ``dev``) and keep its result as JSON; ``varies``
    and ``task`` for a run kept with --keep, which is no row of ROWS."""
    config = json.loads((folder / "config.json").read_text())
    task, stats = task or task_of(name), {}
    if config["model"]["model"] != "bilstm":  # the BiLSTM has no attention to analyse
        analysis = subprocess.run(
            easyfirst("analyze", str(dev or dev_file(task)), "--model", str(folder), "--json"),
            check=True,
            capture_output=True,
            text=True,
        )
        stats = json.loads(analysis.stdout)
    metrics = json.loads((folder / "metrics.json").read_text())
    result = {
        "row": name,
        "task": task,
        "varies": varies or ROWS[name][0],
        "data": config["data"].get("train"),  # None: the task's default data set
        "seed": seed,
        "train": config["train"],
        "model": {
            k: config["model"][k] for k in ("model", "attention", "attention_temperature", "sketch_steps")
        },
        f"dev_{SCORES[task]}": metrics["dev"][SCORES[task]],
        f"test_{SCORES[task]}": metrics.get("test", {}).get(SCORES[task]),
        "best_epoch": metrics["best_epoch"],
        "epochs": metrics["epochs"],
        "seconds_per_epoch": metrics["seconds_per_epoch"],
        "processor": metrics.get("processor"),  # None: trained before run folders recorded it
        "sharpness": stats.get("sharpness"),
        "first_focus": stats.get("first_focus"),
    }
    if task == "ner":
        result["entities"] = stats.get("entities")  # where the first focus goes against the entities
    if task == "qe":  # Figure 4: does the first focus go to BAD words more often than chance?
        result["first_focus_bad_by_chance"] = bad_share_by_chance(dev or dev_file(task))
    RESULTS.mkdir(parents=True, exist_ok=True)
    target = RESULTS / (f"{name}.json" if seed == 1 else f"{name}-seed{seed}.json")
    target.write_text(json.dumps(result, indent=1) + "\n")
    return result


def sharpness_cells(results: list[dict]) -> str:
    sharp = [r["sharpness"] or {} for r in results]
    return (
        f"{cell([s.get('max_weight_first_half') for s in sharp], 1, 3)} | "
        f"{cell([s.get('share_focused_first_half') for s in sharp], unit=' %')} | "
        f"{cell([s.get('normalized_entropy_first_half') for s in sharp], 1, 3)}"
    )


def report() -> None:
    """The Markdown tables from benchmarks/results/attention-study/*.json: POS, NER, then QE; the rows of
    ROWS in their order, then the runs kept with --keep, by name."""
    found: dict[str, list[dict]] = {}
    for path in sorted(RESULTS.glob("*.json")):
        result = json.loads(path.read_text())
        found.setdefault(result["row"], []).append(result)
    order = [name for name in ROWS if name in found] + sorted(set(found) - set(ROWS))
    rows = {name: sorted(found[name], key=lambda r: r["seed"]) for name in order}
    tables = []
    for task, (columns, cells) in TABLES.items():
        mine = {name: results for name, results in rows.items() if task_of_result(results[0]) == task}
        if mine:
            tables.append(table(mine, columns, cells))
    print("\n\n".join(tables))


def table(rows: dict[str, list[dict]], columns: list[str], cells) -> str:
    """One task's table: per row its name, what it varies, epochs and seeds, then ``cells(results)`` under
    ``columns``, then the mean seconds per epoch (and the processor, where the runs recorded one)."""
    head = ["row", "varies", "epochs", "seeds", *columns, "s/epoch"]
    lines = [f"| {' | '.join(head)} |", "|---|---|" + "---:|" * (len(head) - 2)]
    for name, results in rows.items():
        lead = [name, results[0]["varies"], str(len(results[0]["epochs"])), str(len(results))]
        seconds = f"{statistics.mean(r['seconds_per_epoch'] for r in results):.0f}"
        processors = {r.get("processor") for r in results} - {None}  # None: run before it was recorded
        if processors:
            seconds += f" ({processors.pop()})" if len(processors) == 1 else " (several processors)"
        lines.append(f"| {' | '.join([*lead, *cells(results), seconds])} |")
    return "\n".join(lines)


def best_epochs(results: list[dict]) -> str:
    return ", ".join(str(r["best_epoch"]) for r in results)


SHARPNESS = ["largest α, first half", "steps with one word ≥ 0.5", "normalised entropy"]


def pos_cells(results: list[dict]) -> list[str]:
    verb = [r["first_focus"].get("VERB", 0) if r["first_focus"] else None for r in results]
    return [
        cell([r["dev_accuracy"] for r in results]),
        cell([r["test_accuracy"] for r in results]),
        best_epochs(results),
        sharpness_cells(results),
        cell(verb, unit=" %"),
    ]


def ner_cells(results: list[dict]) -> list[str]:
    entities = [r["entities"] or {} for r in results]
    return [
        cell([r["dev_f1"] for r in results]),
        cell([r["test_f1"] for r in results]),
        best_epochs(results),
        sharpness_cells(results),
        cell([e.get("share_on_entity") for e in entities], unit=" %"),
        cell([e.get("share_before_first_entity") for e in entities], unit=" %"),
        cell([e.get("focus_position") for e in entities], 1, 3),
        cell([e.get("first_entity_position") for e in entities], 1, 3),
    ]


def qe_cells(results: list[dict]) -> list[str]:
    """WMT19 QE: the target F1-MULT and where the first step goes (Figure 4: BAD words first?)."""
    return [
        cell([r["dev_target_f1_mult"] for r in results]),
        best_epochs(results),
        sharpness_cells(results),
        cell([(r["first_focus"] or {}).get("BAD", 0) for r in results], unit=" %"),
        cell([r["first_focus_bad_by_chance"] for r in results], unit=" %"),
    ]


# task → the columns of its table after row, varies, epochs and seeds, and the cells under them
TABLES = {
    "pos": (["dev acc", "test acc", "best epoch", *SHARPNESS, "first focus VERB"], pos_cells),
    "ner": (
        ["dev F1", "test F1", "best epoch", *SHARPNESS, "first focus on an entity word"]
        + ["before the first entity", "first focus at", "first entity at"],
        ner_cells,
    ),
    "qe": (
        ["dev target F1-MULT", "best epoch", *SHARPNESS, "first focus on a BAD word", "by chance"],
        qe_cells,
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", nargs="+", choices=list(ROWS), default=[])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1])
    parser.add_argument("--runs", type=Path, default=Path("runs/attention-study"))
    parser.add_argument("--list", action="store_true", help="print the rows and their flags")
    parser.add_argument("--report", action="store_true", help="print the tables from the kept results")
    parser.add_argument("--keep", type=Path, metavar="RUN", help="keep a run trained outside the rows")
    parser.add_argument(
        "--name", help="--keep: the row name to keep it under (ROW.json, ROW-seedK.json for seed K)"
    )
    parser.add_argument("--varies", help="--keep: what the run is, in a few words")
    parser.add_argument("--task", choices=sorted(SCORES), default="pos", help="--keep: the run's task")
    parser.add_argument("--dev", type=Path, help="--keep: the dev file to analyse (default: the task's)")
    args = parser.parse_args()
    if args.keep:
        seed = json.loads((args.keep / "config.json").read_text())["train"]["seed"]
        save_row(
            args.name or args.keep.name, args.keep, seed, args.varies or args.keep.name, args.task, args.dev
        )
    if args.list:
        for name, (varies, flags, epochs) in ROWS.items():
            print(f"{name}: {varies}; {epochs} epochs; {' '.join(flags)}")
    for name in args.rows:
        for seed in args.seeds:
            folder = train_row(name, args.runs, seed)
            save_row(name, folder, seed)
            print(f"{time.strftime('%H:%M:%S')} {name} seed {seed}: done", file=sys.stderr, flush=True)
    if args.report:
        report()


if __name__ == "__main__":
    main()
