"""``easyfirst ARGS`` run in the test's process, as the command line runs it (easyfirst.cli.main: a
refusal is one line on stderr and an exit status), for the tests of one verb's options."""

from __future__ import annotations

import contextlib
import io
import sys


def easyfirst(*args) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``easyfirst ARGS``."""
    from easyfirst.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    argv, sys.argv = sys.argv, ["easyfirst", *map(str, args)]
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
            main()
        code = 0
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else 1
    finally:
        sys.argv = argv
    return code, stdout.getvalue(), stderr.getvalue()
