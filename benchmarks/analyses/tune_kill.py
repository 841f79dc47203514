"""Kill `easyfirst tune` with SIGKILL at random moments, resume it each time, and count the study's trials
at the end: the goal is exactly ``--trials`` finished (complete, pruned, or failed with an error), none
left running or waiting, and each trial lost with its process run again with its values.

    python benchmarks/analyses/tune_kill.py --kills 10 --json benchmarks/results/tune-kill-cpu-2core-shared.json

The study: POS on the bundled sample (train and dev), a small space (hidden size, dropout, learning rate),
``--epochs 3 --pruner none --threads 1``, in a scratch folder. Each round starts ``easyfirst tune STUDY``
(the same command each time) and kills it (its process id alone, as ``kill -9 PID``) at a moment drawn
uniformly from 0 to ``--after`` seconds after it started: during Python's start, while the study is
opened, as a trial is made, during its epochs, or as it is told. A round whose study ends first is
counted as such. After the ``--kills`` rounds, the same command runs to its end. Seconds are
wall-clock on whatever else shares the machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def dies_with_this() -> None:
    """A child's ``preexec_fn``: the kernel ends it (SIGTERM, which a server answers by stopping) when
    this script's process dies."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG (linux/prctl.h)


SAMPLE = ROOT / "data" / "samples" / "en-sample.conllu"
SPACE = """\
[model]
hidden_dim = { low = 8, high = 24, step = 8 }
dropout = { low = 0.0, high = 0.5 }

[train]
lr = { low = 0.02, high = 0.2, log = true }
batch_size = 8
"""


def command(folder: Path, space: Path, trials: int) -> list[str]:
    return [
        *(sys.executable, "-m", "easyfirst", "tune", str(folder), "--space", str(space)),
        *("--task", "pos", "--train", str(SAMPLE), "--dev", str(SAMPLE), "--epochs", "3"),
        *("--trials", str(trials), "--pruner", "none", "--threads", "1"),
    ]


def census(folder: Path) -> dict:
    import optuna

    storage = f"sqlite:///{folder / 'study.db'}"
    trials = optuna.load_study(study_name=folder.name, storage=storage).get_trials()
    states = Counter(t.state.name for t in trials)
    lost = [t for t in trials if t.state.name == "FAIL" and "error" not in t.user_attrs]
    retried = {t.user_attrs["retry_of"]: t for t in trials if "retry_of" in t.user_attrs}
    return {
        "trials": len(trials),
        "states": dict(states),
        "finished": states["COMPLETE"] + states["PRUNED"] + states["FAIL"] - len(lost),
        "lost": len(lost),
        # run again with the values it had drawn (all, or none yet: a process killed as it drew them)
        "lost_run_again": sum(
            t.number in retried and t.params.items() <= retried[t.number].params.items() for t in lost
        ),
    }


def machine() -> str:
    import os

    import torch

    from easyfirst.parallel.cores import processor

    return f"{os.cpu_count()} cores, {processor()}, {platform.system()}, torch {torch.__version__}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--after", type=float, default=15.0, help="latest kill, seconds after a start")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--note", default="", help="kept in the JSON: e.g. the machine shared by other work")
    args = parser.parse_args()
    draw = random.Random(args.seed)
    scratch = Path(tempfile.mkdtemp(prefix="tune-kill-"))
    try:
        space, folder = scratch / "space.toml", scratch / "study"
        space.write_text(SPACE)
        cmd = command(folder, space, args.trials)
        rounds = []
        for number in range(args.kills):
            moment = draw.uniform(0, args.after)
            process = subprocess.Popen(
                cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=dies_with_this
            )
            try:
                process.wait(timeout=moment)
                ended = True
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGKILL)
                process.wait()
                ended = False
            found = census(folder) if (folder / "study.db").is_file() else None
            rounds.append(
                {"round": number, "kill_after_s": round(moment, 2), "ended_first": ended, "study": found}
            )
            print(f"round {number}: killed at {moment:.1f} s" + (" (ended first)" if ended else ""), found)
        start = time.perf_counter()
        final = subprocess.run(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=1800, preexec_fn=dies_with_this
        )
        seconds = time.perf_counter() - start
        end = census(folder)
        print("final run: exit", final.returncode, f"in {seconds:.0f} s;", end)
        met = (
            final.returncode == 0
            and end["finished"] == args.trials
            and end["states"].get("RUNNING", 0) == end["states"].get("WAITING", 0) == 0
            and end["lost_run_again"] == end["lost"]
        )
        print(
            "goal met" if met else "GOAL NOT MET", f"(finished {end['finished']} of --trials {args.trials})"
        )
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            result = {
                "command": " ".join(["easyfirst", *cmd[3:]])
                .replace(str(scratch), "SCRATCH")
                .replace(f"{ROOT}/", ""),
                "kills": args.kills,
                "after_s": args.after,
                "seed": args.seed,
                "rounds": rounds,
                "final": {"exit": final.returncode, "seconds": round(seconds, 1), **end},
                "goal_met": met,
                "machine": machine(),
                "note": args.note,
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            }
            args.json.write_text(json.dumps(result, indent=1) + "\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
