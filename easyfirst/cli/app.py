"""The ``easyfirst`` Typer app, in a module of its own (as spaCy's ``cli/_util.py``): each verb's module
imports ``app`` from here and registers on it; ``easyfirst.cli`` imports the verbs and re-exports what
callers use. Nothing here imports a verb or ``easyfirst.cli`` itself, so no import goes round a loop.

Also here: how a refused command line or input is reported (``path:line: what is wrong`` on stderr,
exit status 2, no traceback; see easyfirst.errors), :func:`main` and :func:`run` (the ``easyfirst``
command), and how ``--help`` lays out its panels.
"""

from __future__ import annotations

import atexit
import inspect
import os
import signal
import sys
import threading
import typing
from pathlib import PurePath
from typing import Annotated

import typer

from easyfirst import __version__
from easyfirst.atomic import INTERRUPTS
from easyfirst.errors import InputError, WorkerFailed

app = typer.Typer(
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


# a value's placeholder by its type, where an option names none: words, not Python's type names
PLACEHOLDERS = {int: "N", float: "NUMBER", str: "TEXT"}
VALUE_WIDTH = 17  # the value column of an options panel (_options_panel): wider lists go to the help


def _display_type_of_values(self, ctx):
    """The value an option takes, as --help shows it: nothing for a flag (``--json``, not ``--json
    <bool>``); its choices where they fit the value column whole (``upos|xpos``), else a word for them
    (``NAME``: :func:`_help_with_choices` lists them in the help); its metavar; else a word for its
    type (:data:`PLACEHOLDERS`: ``N``, ``PATH``), never Typer's ``<int>`` or ``<list[str]>``."""
    from easyfirst.cli.options import LAZY_CHOICES

    if self.is_flag:
        return None
    if self.name in LAZY_CHOICES:
        listed = "|".join(LAZY_CHOICES[self.name]())
        return listed if len(listed) <= VALUE_WIDTH else self.metavar or "NAME"
    if self.metavar:
        return self.metavar
    described = self.type_descriptor
    kind = typing.get_args(described.annotation)[0] if described.is_list else described.annotation
    kinds = [k for k in typing.get_args(kind) or (kind,) if k is not type(None)]  # Path | None: Path
    if described.is_path or any(isinstance(k, type) and issubclass(k, PurePath) for k in kinds):
        return "PATH"
    return PLACEHOLDERS.get(kinds[0] if kinds else kind, "VALUE")


def _argument_name(param) -> str:
    """An argument as --help names it: its metavar, else its name in capitals (``FILE``, ``RUN``)."""
    return param.metavar or param.name.upper()


def _usage_name(self) -> str:
    """An argument in the usage line, in brackets when optional (``FILE``, ``[FILE]...``; Typer wrote
    ``{gold}``)."""
    name = _argument_name(self)
    return (name if self.required else f"[{name}]") + ("..." if self.nargs != 1 else "")


def _help_with_choices(param) -> str:
    """The help of an option whose values come from a registry, listing them (``one of a | b | c``, so
    that a line breaks beside a ``|``, never inside a name) unless the value column or the help shows
    them all already; before its ``[default: …]``."""
    import re

    from easyfirst.cli.options import LAZY_CHOICES

    text = param.help or ""
    names = LAZY_CHOICES.get(param.name, lambda: [])()
    if not names or len("|".join(names)) <= VALUE_WIDTH:
        return text
    if all(re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) for name in names):
        return text
    head, mark, default = text.partition(" \\[default")
    return f"{head.rstrip('. ')}: one of {' | '.join(names)}.{mark}{default}"


typer.core.TyperOption.display_type = _display_type_of_values
typer.core.TyperOption.display_type_rich = lambda self, ctx: _display_type_of_values(self, ctx)
typer.core.TyperArgument._usage_display_name = _usage_name


def _options_panel(*, name, params, ctx, markup_mode, console) -> None:
    """Typer's panel of options, with every option name whole at any terminal width: a name is what a
    user copies, and Typer's table cut long ones to ``--max-train-leng…`` at 80 columns. The names
    take one column that never wraps, a negative flag (``--no-crf``) on the line below its option; the
    value and the help share what is left and fold there."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text
    from typer import rich_utils

    table = Table(show_header=False, expand=True, box=None, padding=(0, 1))
    required = any(param.required for param in params)
    if required:
        table.add_column(no_wrap=True)  # the required mark
    table.add_column(no_wrap=True)  # the names
    table.add_column(no_wrap=True)  # short names
    table.add_column(overflow="fold", max_width=17)  # the value
    table.add_column(overflow="fold", ratio=1)  # the help
    for param in params:
        if isinstance(param, typer.core.TyperArgument):
            long, short = [], [_argument_name(param) + ("..." if param.nargs != 1 else "")]
        else:
            long = [o for o in param.opts if o.startswith("--")]
            short = [o for o in param.opts if not o.startswith("--")]
        names = rich_utils.highlighter(Text(",".join(long)))
        negative = [o for o in param.secondary_opts if o.startswith("--")]
        if negative:
            names.append("\n")
            names.append_text(rich_utils.negative_highlighter(Text(",".join(negative))))
        short += [o for o in param.secondary_opts if not o.startswith("--")]
        is_option = isinstance(param, typer.core.TyperOption)
        value = Text(
            (param.display_type_rich(ctx=ctx) if is_option else None) or "", style=rich_utils.STYLE_TYPES
        )
        if param._get_number_range_help_str():
            value.append(rich_utils.RANGE_STRING.format(param._get_number_range_help_str()))
        if is_option:
            param.help = _help_with_choices(param)
        shown = rich_utils._get_parameter_help(param=param, ctx=ctx, markup_mode=markup_mode)
        for text in shown.renderables:  # a long word (a flag named in the help) folds, not cut
            if isinstance(text, Text):
                text.overflow = "fold"
        mark = Text(rich_utils.REQUIRED_SHORT_STRING, style=rich_utils.STYLE_REQUIRED_SHORT)
        table.add_row(
            *([mark if param.required else ""] if required else []),
            names,
            rich_utils.highlighter(Text(",".join(short))),
            rich_utils.types_highlighter(value),
            shown,
        )
    if params:
        style = rich_utils.STYLE_OPTIONS_PANEL_BORDER
        console.print(
            Panel(table, border_style=style, title=name, title_align=rich_utils.ALIGN_OPTIONS_PANEL)
        )


def _with_whole_names(format_help):
    """``format_help`` of Typer's commands with :func:`_options_panel` in place (typer.rich_utils is
    imported on the first --help only: 30 ms that no other command pays)."""

    def format_help_with_whole_names(self, ctx, formatter):
        from typer import rich_utils

        rich_utils._print_options_panel = _options_panel
        return format_help(self, ctx, formatter)

    return format_help_with_whole_names


for _command_class in (typer.core.TyperCommand, typer.core.TyperGroup):
    _command_class.format_help = _with_whole_names(_command_class.format_help)


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
