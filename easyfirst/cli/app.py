"""The ``easyfirst`` Typer app, in a module of its own (as spaCy's ``cli/_util.py``): each verb's module
imports ``app`` from here and registers on it; ``easyfirst.cli`` imports the verbs and re-exports what
callers use. Nothing here imports a verb or ``easyfirst.cli`` itself, so no import goes round a loop.

Also here: how a refused command line or input is reported (``path:line: what is wrong`` on stderr,
exit status 2, no traceback; see easyfirst.errors), and :func:`main` and :func:`run` (the ``easyfirst``
command). How ``--help`` lays out its page is easyfirst.cli.help_page's: the app's group and every
verb's command are its classes (:class:`App`).
"""

from __future__ import annotations

import atexit
import inspect
import os
import signal
import sys
import threading
from typing import Annotated

import typer

from easyfirst import __version__
from easyfirst.atomic import INTERRUPTS
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
    moment), then an exit that skips the interpreter's teardown of its modules, which after importing
    torch takes about 0.3 s of every command (the start of ``easyfirst tag`` on one sentence: 1.4 s
    with it, 1.1 s without, on the 2-core machine of docs/cores.md). What Python's own exit would still
    do is done first, in its order, with interrupts held (a second Ctrl-C does not cut it): threads that
    are not daemons joined, the ``atexit`` functions run (worker processes ended, logging flushed),
    stdout and stderr flushed; every file the commands write is closed before they return. Under a
    profiler or tracer (``python -m cProfile -m easyfirst``), which writes what it found at the exit,
    Python's own exit. :func:`main` alone, for callers in the same process, keeps raising SystemExit."""
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
    if sys.getprofile() is not None or sys.gettrace() is not None:  # a profiler writes at the exit
        sys.exit(code)
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # a reader that left (`| head`), or a closed stream
            code = code or 1
    os._exit(code)
