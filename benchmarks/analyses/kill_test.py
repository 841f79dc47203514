"""Kill `easyfirst tag` (many files), `easyfirst train --workers 2` and `easyfirst serve --workers 2` with
SIGKILL at random moments and count what they leave behind (issue #47): processes still running, /dev/shm segments, and *.tmp files in
the output folder, after the kill and again after a rerun of the same command to its end.

    python benchmarks/analyses/kill_test.py --runs 5 --json benchmarks/results/kill-test-cpu-2core.json

Reads UD English EWT through EASYFIRST_DATA. `tag`: ``--copies`` copies of the dev file (2,001 sentences
each) tagged into a fresh folder; the rerun is the same command, which tags what is missing. `train`: the
POS default (one sentence per update) with ``--workers 2`` for one epoch on the first 1,500 training
sentences (dev: the first 300 dev sentences); the rerun is ``easyfirst train --resume RUN`` (a run
stopped before its first checkpoint is trained again from the start), or the first command if no run
had begun. `serve`: the bundled en-upos model, copied into a folder of the trial's own (whose name marks
its processes), on a free loopback port; the rerun serves it again until ``/health`` answers, then
stops it with SIGTERM (exit 0 expected). Each is killed at a moment drawn uniformly from ``--after`` seconds after it has started its
children (tag: its reader and, with two cores, a tagging process; train: the second Hogwild worker;
serve: its two workers; at
most 120 s waited for them), since a kill during the start of Python and torch, before any child,
tells nothing.

Only the parent is killed (its process id alone, never its group), as ``kill -9 PID`` does: whether its
children end is what is measured. A process counts as left if it still runs ``--grace`` seconds after
the kill and its command line names the run's own output folder; a /dev/shm segment if a file named
after the parent (``torch_PID_*``, ``pym-PID-*``) is still there or still held open by a process.
Whatever is left is killed by this script afterwards (counted first), and the scratch folder removed.
Everything runs one after the other; seconds are wall-clock on whatever else shares the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from processes import alive, shared_memory_of  # noqa: E402

EASYFIRST = [sys.executable, "-m", "easyfirst"]


def ewt(split: str) -> Path:
    root = Path(os.environ.get("EASYFIRST_DATA", "/work/shared/data"))
    return root / "ud" / "UD_English-EWT" / f"en_ewt-ud-{split}.conllu"


def first_sentences(source: Path, count: int, target: Path) -> Path:
    blocks = source.read_text(encoding="utf-8").split("\n\n")
    target.write_text("\n\n".join(blocks[:count]).strip("\n") + "\n\n", encoding="utf-8")
    return target


def processes_naming(marker: str) -> list[int]:
    """The living processes whose command line contains ``marker`` (a run's own folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmdline and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.tmp")) if folder.is_dir() else []


def trial(kind: str, command: list[str], rerun, folder: Path, after: float, args, children: int) -> dict:
    """One kill: start ``command``, SIGKILL it ``after`` seconds after its ``children`` have appeared,
    count what is left, rerun."""
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while process.poll() is None and time.monotonic() - started < 120:
        if len(processes_naming(str(folder))) >= 1 + children:
            break
        time.sleep(0.05)
    appeared = time.monotonic() - started
    time.sleep(after)
    finished_first = process.poll() is not None
    running = processes_naming(str(folder))
    process.send_signal(signal.SIGKILL)
    process.wait()
    time.sleep(args.grace)
    left = [pid for pid in processes_naming(str(folder)) if pid != process.pid]
    shm = shared_memory_of(process.pid)
    tmp_after_kill = temporaries(folder)
    for pid in left:  # counted: now ended, so that the next trial starts clean
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    again = subprocess.run(rerun(), capture_output=True, timeout=args.rerun_limit)
    return {
        "kind": kind,
        "children_after_s": round(appeared, 2),
        "killed_after_s": round(appeared + after, 2),
        "finished_before_kill": finished_first,
        "processes_at_kill": len(running),
        "processes_left": len(left),
        "shm_left": len(shm),
        "tmp_after_kill": len(tmp_after_kill),
        "tmp_after_rerun": len(temporaries(folder)),
        "rerun_exit": again.returncode,
        "rerun_last_line": (again.stderr.decode(errors="replace").strip().splitlines() or [""])[-1][:160],
        "seconds": round(time.monotonic() - started, 1),
    }


def tag_trial(scratch: Path, k: int, copies: Path, after: float, args) -> dict:
    out = scratch / f"tag-{k}.out"
    command = [*EASYFIRST, "tag", *map(str, sorted(copies.iterdir())), "-o", str(out)]
    return trial("tag", command, lambda: command, out, after, args, min(2, len(os.sched_getaffinity(0))))


def train_trial(scratch: Path, k: int, train: Path, dev: Path, after: float, args) -> dict:
    run = scratch / f"train-{k}.run"
    command = [*EASYFIRST, "train", "--task", "pos", "--workers", "2", "--epochs", "1"]
    command += ["--train", str(train), "--dev", str(dev), "--output", str(run)]

    def rerun() -> list[str]:
        return [*EASYFIRST, "train", "--resume", str(run)] if (run / "config.json").is_file() else command

    return trial("train", command, rerun, run, after, args, 1)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve_again(command: list[str], limit: float) -> list[str]:
    """A command that serves ``command``'s model until ``/health`` answers, then sends SIGTERM and exits
    with the server's status (the rerun of a serve trial)."""
    script = (
        "import signal, subprocess, sys, time, urllib.request\n"
        f"command, port, limit = {command!r}, {command[command.index('--port') + 1]!r}, {limit!r}\n"
        "server = subprocess.Popen(command)\n"
        "started = time.monotonic()\n"
        "while time.monotonic() - started < limit and server.poll() is None:\n"
        "    try:\n"
        "        urllib.request.urlopen(f'http://127.0.0.1:{port}/health', timeout=1).read()\n"
        "        break\n"
        "    except OSError:\n"
        "        time.sleep(0.2)\n"
        "server.send_signal(signal.SIGTERM)\n"
        "sys.exit(server.wait())\n"
    )
    return [sys.executable, "-c", script]


def serve_trial(scratch: Path, k: int, after: float, args) -> dict:
    from easyfirst.resources import model_folder

    model = scratch / f"serve-{k}.model"
    shutil.copytree(model_folder("en-upos"), model)
    command = [*EASYFIRST, "serve", "-m", str(model), "--workers", "2", "--port", str(free_port())]
    command += ["--host", "127.0.0.1"]
    return trial("serve", command, lambda: serve_again(command, 120.0), model, after, args, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="kills of each command")
    parser.add_argument("--kinds", default="tag,train,serve", help="which commands: tag, train, serve")
    parser.add_argument("--copies", type=int, default=30, help="copies of EWT dev that tag is given")
    parser.add_argument("--after", type=float, nargs=2, default=(0.0, 6.0), metavar=("LOW", "HIGH"))
    parser.add_argument("--grace", type=float, default=2.0, help="seconds between the kill and the count")
    parser.add_argument("--rerun-limit", type=float, default=600.0, help="seconds a rerun may take")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the rows and totals here")
    args = parser.parse_args()
    draw = random.Random(args.seed)
    scratch = Path(tempfile.mkdtemp(prefix="easyfirst-kill-test-"))
    rows = []
    try:
        copies = scratch / "copies"
        copies.mkdir()
        for k in range(args.copies):
            shutil.copyfile(ewt("dev"), copies / f"dev{k:02d}.conllu")
        train = first_sentences(ewt("train"), 1500, scratch / "train1500.conllu")
        dev = first_sentences(ewt("dev"), 300, scratch / "dev300.conllu")
        for k in range(args.runs):
            if "tag" in args.kinds:
                rows.append(tag_trial(scratch, k, copies, draw.uniform(*args.after), args))
                print(json.dumps(rows[-1]), flush=True)
            if "train" in args.kinds:
                rows.append(train_trial(scratch, k, train, dev, draw.uniform(*args.after), args))
                print(json.dumps(rows[-1]), flush=True)
            if "serve" in args.kinds:
                rows.append(serve_trial(scratch, k, draw.uniform(*args.after), args))
                print(json.dumps(rows[-1]), flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    totals = {}
    for kind in ("tag", "train", "serve"):
        mine = [row for row in rows if row["kind"] == kind]
        if mine:
            keys = ("processes_left", "shm_left", "tmp_after_kill", "tmp_after_rerun")
            totals[kind] = {"kills": len(mine), **{key: sum(row[key] for row in mine) for key in keys}}
            totals[kind]["reruns_failed"] = sum(row["rerun_exit"] != 0 for row in mine)
            totals[kind]["max_tmp_after_one_kill"] = max(row["tmp_after_kill"] for row in mine)
            print(f"{kind}: {json.dumps(totals[kind])}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        machine = {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        }
        settings = {k: v for k, v in vars(args).items() if k != "json"}
        report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine}
        args.json.write_text(
            json.dumps({**report, "settings": settings, "totals": totals, "rows": rows}, indent=2)
        )


if __name__ == "__main__":
    main()
