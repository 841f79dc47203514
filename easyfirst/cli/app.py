"""The ``easyfirst`` Typer app, in a module of its own (as spaCy's ``cli/_util.py``): each verb's module
imports ``app`` from here and registers on it; ``easyfirst.cli`` imports the verbs and re-exports what
callers use. Nothing here imports a verb or ``easyfirst.cli`` itself, so no import goes round a loop.

Also here: how a refused command line or input is reported (``path:line: what is wrong`` on stderr,
exit status 2, no traceback; see easyfirst.errors), and :func:`main` and :func:`run` (the ``easyfirst``
command). How ``--help`` lays out its page is easyfirst.cli.help_page's: the app's group and every
verb's command are its classes (:class:`App`).
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import os
import signal
import sys
from typing import Annotated

import typer

from easyfirst import __version__
from easyfirst.atomic import INTERRUPTS, SIGNALS
from easyfirst.cli.help_page import Command, Group
from easyfirst.errors import InputError, WorkerFailed


class App(typer.Typer):
    """Typer's app whose commands are :class:`~easyfirst.cli.help_page.Command` unless one names its
    class: every verb registers with a plain ``@app.command()`` and gets easyfirst's --help page."""

    def command(self, name: str | None = None, *, cls: type[typer.core.TyperCommand] | None = None, **kwargs):
        return super().command(name, cls=cls or Command, **kwargs)


app = App(
    cls=Group,
    help="Neural easy-first sequence taggers (Martins & Kreutzer, 2017).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def _version(value: bool) -> None:
    if value:
        print(f"easyfirst {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool | None,
        typer.Option("--version", help="Print the version and exit.", callback=_version, is_eager=True),
    ] = None,
) -> None:
    """Neural easy-first sequence taggers (Martins & Kreutzer, 2017)."""


def unwrapped(text: str) -> str:
    """A docstring as --help should show it: its paragraphs kept, the line breaks inside each joined.

    Typer's rich help keeps a docstring's line breaks and then wraps the lines again to the terminal's
    width, which left stray short lines ("(pos" / "and ner models)") and broke a command's summary in
    the command list over several lines."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def unwrap_command_help() -> None:
    """Give every registered command its docstring unwrapped as its help."""
    for command in app.registered_commands:
        text = command.help or inspect.getdoc(command.callback)
        if text:
            command.help = unwrapped(text)


try:  # Typer >= 0.20 carries its own Click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover - older Typer, Click beside it
    from click.exceptions import ClickException


def usage_line(error: ClickException) -> str:
    """Click's refusal of a command line (an unknown flag, a word where a number goes, a missing
    argument) as one line, ``--flag: what is wrong``, like every other user mistake."""
    message = error.format_message()
    param = getattr(error, "param", None)
    if param is not None and param.opts and message.startswith("Invalid value for"):
        message = f"{param.opts[0]}: {message.split(': ', 1)[1]}"
    ctx = getattr(error, "ctx", None)
    return f"{message} (see {ctx.command_path} --help)" if ctx is not None else message


def report(line: str) -> None:
    if os.environ.get("RANK", "0") == "0":  # under torchrun every process finds it: process 0 says it
        from easyfirst.cli.common import err

        err.print(line, markup=False, highlight=False, soft_wrap=True)


def main() -> None:
    """Run the command line; exit with its status (SystemExit). An interrupt (Ctrl-C, SIGTERM) is
    reported as "interrupted" with status 130 whatever it broke on its way (a worker's pipe, a C++
    writer), never as a success; :func:`run` gives SIGTERM's 143."""
    try:
        code = app(prog_name="easyfirst", standalone_mode=False)
    except (KeyboardInterrupt, Exception) as error:  # noqa: BLE001 (re-raised below unless interrupted)
        code = 130 if isinstance(error, KeyboardInterrupt) or INTERRUPTS.received else refused(error)
    if code == 130 or INTERRUPTS.received is not None:  # Typer's answer to Ctrl-C is 130
        report("interrupted")
        code = 130
    sys.exit(code if isinstance(code, int) else 0)


def refused(error: Exception) -> int:
    """A command line or input that was refused, reported in one line; its exit status. Any other
    error is raised again (a bug: its traceback)."""
    if isinstance(error, ClickException):
        if type(error).__name__ == "NoArgsIsHelpError":  # `easyfirst` alone: the help
            error.show()
        else:
            report(usage_line(error))
        return error.exit_code
    if isinstance(error, InputError):
        from easyfirst.data.datasets import unset_hint

        report(str(error) + unset_hint(error.path))
        return 2
    if isinstance(error, WorkerFailed):  # not the user's mistake, but nothing a traceback would explain
        report(f"{error}: killed, or out of memory?")
        return 1
    raise error


def run() -> None:
    """The ``easyfirst`` command (and ``python -m easyfirst``): :func:`main` with SIGINT and SIGTERM
    caught (easyfirst.atomic.Interrupts: exit status 130 or 143 and "interrupted" for either, at any
    moment), then Python's own exit: threads that are not daemons joined, the ``atexit`` functions run
    (worker processes ended, logging flushed), a profiler's report written (``python -m cProfile -m
    easyfirst``), the interpreter's teardown. The status is decided before it, so the two signals are
    ignored from then on (a second Ctrl-C does not cut the exit, and the teardown, where Python has put
    their default back, does not die of a late one); stdout and stderr are flushed first, so that a
    reader that left (``| head``) is an exit status of 1, not Python's complaint at the exit. Every file
    the commands write is closed before they return. :func:`main` alone, for callers in the same
    process, raises SystemExit the same way.

    Two things make that exit what it should be. :func:`_forget_keyboard_interrupt` keeps an interrupt
    that came inside a string ``exec`` or ``eval`` from turning the status into a death by SIGINT. And
    ``gc.freeze()``: the teardown's collections skip the objects alive at the exit (torch's modules),
    the main part of its cost (docs/studies/cores.md, "No teardown")."""
    if INTERRUPTS.previous is None:  # easyfirst.__main__ installs them before importing the CLI
        INTERRUPTS.install()
    try:
        try:
            INTERRUPTS.raising = True
            INTERRUPTS.check()  # one received while the CLI was imported
            main()
            code = 0
        finally:
            INTERRUPTS.raising = False
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        if not isinstance(done.code, int | None):
            print(done.code, file=sys.stderr)
    except KeyboardInterrupt:  # before the command began or after it ended
        code = None
    if INTERRUPTS.received is not None or code is None:
        if code != 130:  # not said by main (or by train, which says how to resume)
            report("interrupted")
        code = 128 + (INTERRUPTS.received or signal.SIGINT)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # a reader that left (`| head`), or a closed stream
            code = code or 1
            with contextlib.suppress(OSError, ValueError):  # nothing more reaches it: not at the exit either
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    _forget_keyboard_interrupt()
    gc.freeze()
    sys.exit(code)


def _forget_keyboard_interrupt() -> None:
    """Forget, for CPython, a KeyboardInterrupt that left a string ``exec`` or ``eval``, caught since.

    CPython notes such a one as unhandled (``run_eval_code_obj``, the path of a string's ``exec`` and
    ``eval``), even when a caller catches it later, and under ``python -m`` (``Py_RunMain``) it then
    ends the process by SIGINT after its exit, whatever the status (``exit_sigint``): -2 instead of
    130 or 143. An interrupt often lands in one, at the start: dataclasses write their methods with
    ``exec``, Typer evaluates the string annotations of the commands' options with ``eval``. Seen
    under load in tests/training/test_robustness.py (SIGINT, and SIGTERM too, 0.3–0.7 s into ``tag``):
    the process killed itself (``kill(getpid(), SIGINT)`` in a kernel trace) after saying
    "interrupted". Each string evaluation clears the note before it runs, so an empty one does; the
    ``easyfirst`` script, run as a file, never checks it. Every KeyboardInterrupt was handled by
    :func:`run` when this is called (and signals are ignored), so no real one is forgotten."""
    exec("pass", {})
