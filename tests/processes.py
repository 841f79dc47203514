"""What a killed command leaves running, read from /proc (Linux): for tests/parallel/test_parent_death.py and
benchmarks/analyses/kill_test.py."""

from __future__ import annotations

import os
from pathlib import Path


def state(pid: int) -> str | None:
    """The process's state letter (R, S, Z, ...), None if there is no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet collected by its new parent, does not)."""
    return state(pid) not in (None, "Z", "X")


def children_of(pid: int) -> set[int]:
    """The living processes whose parent is ``pid``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
                found.add(int(entry.name))
    return found


def shared_memory_of(pid: int) -> list[str]:
    """The /dev/shm files that ``pid`` made (torch's and multiprocessing's name them after it) that are
    still there or still held open by a process."""
    prefixes = (f"torch_{pid}_", f"pym-{pid}-")
    left = {f"/dev/shm/{name}" for name in os.listdir("/dev/shm") if name.startswith(prefixes)}
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("/dev/shm/") and target[9:].startswith(prefixes):
            left.add(target.removesuffix(" (deleted)"))
    return sorted(left)
