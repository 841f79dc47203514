"""Keep an `easyfirst tune` study across sessions: a consistent copy of its Optuna storage (study.db, by
SQLite's backup API, safe while trials run) and its settings (study.json) under
benchmarks/results/tune/STUDY/, to commit as trials finish; `--restore` puts them back in runs/STUDY so
that `easyfirst tune runs/STUDY` goes on (a trial that was running when the copy was made is marked
failed three minutes after its last heartbeat and run again with the same values).

    python benchmarks/paper/tune_keep.py runs/tune-ner-nef              # runs/… → benchmarks/results/tune/…
    python benchmarks/paper/tune_keep.py runs/tune-ner-nef --restore    # benchmarks/results/tune/… → runs/…

The trials' run folders (their models) are not kept: the storage holds every trial's values, epoch
scores and attributes, which is what the study, its report and --retrain-best read.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
from pathlib import Path

KEPT = Path(__file__).resolve().parents[1] / "results" / "tune"


def copy_study(source: Path, target: Path) -> None:
    if not (source / "study.db").is_file() or not (source / "study.json").is_file():
        sys.exit(f"{source}: no study here (study.db and study.json)")
    target.mkdir(parents=True, exist_ok=True)
    partial = target / "study.db.partial"
    with sqlite3.connect(source / "study.db") as src, sqlite3.connect(partial) as dst:
        src.backup(dst)
    dst.close()
    partial.replace(target / "study.db")
    shutil.copyfile(source / "study.json", target / "study.json")
    print(f"{source} → {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("study", type=Path, help="the study's folder (runs/NAME)")
    parser.add_argument("--restore", action="store_true", help="copy the kept study back into STUDY")
    args = parser.parse_args()
    kept = KEPT / args.study.resolve().name
    if args.restore:
        if (args.study / "study.db").exists():
            sys.exit(f"{args.study}: a study is there already; nothing restored")
        copy_study(kept, args.study)
    else:
        copy_study(args.study, kept)


if __name__ == "__main__":
    main()
