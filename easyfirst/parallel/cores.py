"""The cores this process may run on, how many processes tag a call on them (easyfirst.tagging.pool), and
the processor's name that a run records beside its timings; free of torch, so that a command can ask
before importing it."""

from __future__ import annotations

import os
import platform


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. under ``taskset``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def processor() -> str:
    """The processor's model name, as Linux's /proc/cpuinfo gives it (``platform.processor()`` or the
    architecture elsewhere): what seconds measured on this machine were measured on."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


MAX_TAGGING_PROCESSES = 8  # beyond this, a tagging call's batches are too few to keep the processes busy


def tagging_processes(requested: int | None = None) -> int:
    """How many processes tag a large call on the CPU (easyfirst.tagging.pool): ``requested``, else one
    per core, at most :data:`MAX_TAGGING_PROCESSES`."""
    return requested if requested is not None else min(available_cores(), MAX_TAGGING_PROCESSES)


MIN_WORDS = 2000  # a call with fewer words is tagged in one process (a pool costs a fork)


def pooled(words: int, batches: int) -> bool:
    """Whether a call of ``words`` words in ``batches`` batches is shared among a pool's processes."""
    return words >= MIN_WORDS and batches > 1
