"""``easyfirst ARGS`` run in the test's process, as the command line runs it (easyfirst.cli.main: a
refusal is one line on stderr and an exit status): :func:`easyfirst` for the tests of one verb's options,
:func:`completed` for conftest.run_cli. A process of its own costs about 3 s of CPU, 2.3–2.5 s of it
importing torch, which the test's process has imported once."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import random
import signal
import subprocess
import sys
import traceback
import warnings
from pathlib import Path

_forks = {"running": False, "count": 0}  # this process's forks while a command runs in it


def _count_fork() -> None:
    if _forks["running"]:
        _forks["count"] += 1


os.register_at_fork(before=_count_fork)


def easyfirst(*args) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``easyfirst ARGS``."""
    done = completed(args)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def completed(
    args, input: bytes | None = None, cwd: Path | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    """``easyfirst ARGS`` run here as ``python -m easyfirst ARGS`` runs in a process of its own, as a
    CompletedProcess whose stdout and stderr are bytes: ``input`` its stdin (empty if None, not the
    test's), ``cwd`` its working folder, ``env`` set in os.environ while it runs. What a command may
    change for the rest of the process is put back after it (:func:`_kept`).

    A command that forks (a tagging pool, Hogwild's workers, the reader of ``tag FILE.conllu`` on two
    cores or more) fails the test: its children would be forks of pytest's worker, threads and all,
    and what a fork leaves behind is the concern of the tests that run it in a process of its own
    (conftest.run_cli's ``process=True``)."""
    from easyfirst.cli import main

    stdin = io.TextIOWrapper(io.BufferedReader(io.BytesIO(input or b"")), encoding="utf-8")
    # as Python makes them for a pipe: text over a binary .buffer (`tag` writes the tags to it)
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True)
    argv = ["easyfirst", *map(str, args)]
    forks = _forks["count"]
    with _kept(), _environment(env, cwd), _streams(stdin, stdout, stderr):
        sys.argv = argv
        try:
            main()
            code = 0
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
        except Exception:  # a bug: its traceback and status 1, as Python ends a process with it
            traceback.print_exc()
            code = 1
    assert _forks["count"] == forks, f"{' '.join(argv)} forks: run it in a process (process=True)"
    return subprocess.CompletedProcess(argv, code, stdout.buffer.getvalue(), stderr.buffer.getvalue())


@contextlib.contextmanager
def _streams(stdin, stdout, stderr):
    streams = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams


@contextlib.contextmanager
def _environment(env: dict | None, cwd: Path | None):
    """os.environ with ``env`` and the working folder ``cwd``, both as they were afterwards (whatever
    the command set)."""
    environ, here = dict(os.environ), os.getcwd()
    os.environ.update({key: str(value) for key, value in (env or {}).items()})
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(environ)


@contextlib.contextmanager
def _kept():
    """Put back what a command changes for its whole process, which a process of its own drops at its
    exit: the signal handlers (easyfirst.atomic), torch's threads (training sets them), the random
    generators (training seeds them), sys.argv, the unraisable hook, the warning filters (tune adds
    some), the root logger's handlers and level (optuna's, lightning's)."""
    import torch

    handlers = {
        number: signal.getsignal(number)
        for number in signal.valid_signals()
        if number not in (signal.SIGKILL, signal.SIGSTOP) and signal.getsignal(number) is not None
    }
    threads, interop = torch.get_num_threads(), torch.get_num_interop_threads()
    rng, python_rng = torch.get_rng_state(), random.getstate()
    argv, hook = sys.argv, sys.unraisablehook
    root = logging.getLogger()
    logged = root.handlers[:], root.level
    _forks["running"] = True
    try:
        with warnings.catch_warnings():
            yield
    finally:
        _forks["running"] = False
        for number, handler in handlers.items():
            if signal.getsignal(number) is not handler:
                signal.signal(number, handler)
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        assert torch.get_num_interop_threads() == interop, "set once per process: run it with process=True"
        torch.set_rng_state(rng)
        random.setstate(python_rng)
        sys.argv, sys.unraisablehook = argv, hook
        root.handlers[:], root.level = logged
