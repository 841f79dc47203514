"""How ``easyfirst --help`` and ``easyfirst VERB --help`` lay out their page, through Typer's own
extension points: the app's group is :class:`Group` (``typer.Typer(cls=Group)``) and every verb's
command a :class:`Command` (the default of ``app.command()``, easyfirst.cli.app.App); both override
Click's public ``collect_usage_pieces`` and ``format_help``. Nothing in Typer or Click is replaced.

Why not Typer's page: its options table cut long names at 80 columns (``--max-train-leng…``), named a
value by its Python type (``<int>``, ``<list[str]>``), an argument ``{gold}`` in the usage line, and cut
a registry's choices inside a name. The page here is drawn with rich's Table and Panel in Typer's look
(the styles and highlighters that ``typer.rich_utils`` names publicly); rich and typer.rich_utils are
imported on --help only (30 ms that no other command pays).
"""

from __future__ import annotations

import inspect
import re
import typing
from pathlib import PurePath

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

# a value's placeholder by its type, where an option names none: words, not Python's type names
PLACEHOLDERS = {int: "N", float: "NUMBER", str: "TEXT"}
VALUE_WIDTH = 17  # the value column of an options panel (_options_panel): wider lists go to the help


def shown_value(param: TyperOption) -> str | None:
    """The value an option takes, as --help shows it: nothing for a flag (``--json``, not ``--json
    <bool>``); its choices where they fit the value column whole (``upos|xpos``), else a word for them
    (``NAME``: :func:`help_with_choices` lists them in the help); its metavar; else a word for its
    type (:data:`PLACEHOLDERS`: ``N``, ``PATH``), never Typer's ``<int>`` or ``<list[str]>``."""
    from easyfirst.cli.options import LAZY_CHOICES

    if param.is_flag:
        return None
    if param.name in LAZY_CHOICES:
        listed = "|".join(LAZY_CHOICES[param.name]())
        return listed if len(listed) <= VALUE_WIDTH else param.metavar or "NAME"
    if param.metavar:
        return param.metavar
    described = param.type_descriptor
    kind = typing.get_args(described.annotation)[0] if described.is_list else described.annotation
    kinds = [k for k in typing.get_args(kind) or (kind,) if k is not type(None)]  # Path | None: Path
    if described.is_path or any(isinstance(k, type) and issubclass(k, PurePath) for k in kinds):
        return "PATH"
    return PLACEHOLDERS.get(kinds[0] if kinds else kind, "VALUE")


def argument_name(param: TyperArgument) -> str:
    """An argument as --help names it: its metavar, else its name in capitals (``FILE``, ``RUN``)."""
    return param.metavar or param.name.upper()


def usage_pieces(command: TyperCommand | TyperGroup, ctx: typer.Context) -> list[str]:
    """``[OPTIONS]`` and the arguments of a usage line, an argument in brackets when optional (``FILE``,
    ``[FILE]...``; Typer wrote ``{gold}``)."""
    pieces = [command.options_metavar] if command.options_metavar else []
    for param in command.get_params(ctx):
        if isinstance(param, TyperArgument):
            name = argument_name(param)
            pieces.append((name if param.required else f"[{name}]") + ("..." if param.nargs != 1 else ""))
        else:
            pieces.extend(param.get_usage_pieces(ctx))
    return pieces


def help_with_choices(param: TyperOption) -> str:
    """The help of an option whose values come from a registry, listing them (``one of a | b | c``, so
    that a line breaks beside a ``|``, never inside a name) unless the value column or the help shows
    them all already; before its ``[default: …]``."""
    from easyfirst.cli.options import LAZY_CHOICES

    text = param.help or ""
    names = LAZY_CHOICES.get(param.name, lambda: [])()
    if not names or len("|".join(names)) <= VALUE_WIDTH:
        return text
    if all(re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) for name in names):
        return text
    head, mark, default = text.partition(" \\[default")
    return f"{head.rstrip('. ')}: one of {' | '.join(names)}.{mark}{default}"


def default_text(param: TyperOption | TyperArgument, ctx: typer.Context) -> str:
    """A parameter's default as its ``[default: …]`` shows it (Typer's rule): a boolean flag's by its
    name (``crf``, ``no-crf``), a list's items joined; nothing for None, an empty list or a plain flag
    that is off."""
    if isinstance(param.show_default, str):
        return f"({param.show_default})"
    value = param.get_default(ctx, call=False)
    if value is None or not (param.show_default or ctx.show_default):
        return ""
    if isinstance(value, list | tuple):
        parts = [str(item) for item in value]
        return ", ".join(parts) if any(parts) else ""
    if isinstance(param, TyperOption) and param.is_bool_flag:
        if param.secondary_opts:
            return (param.opts if param.default else param.secondary_opts)[0].lstrip("-")
        return str(value) if value else ""
    return str(value)


def _parameter_help(param, ctx, rich_utils):
    """The help column of a parameter's row: its help (rich markup; a registry's choices listed), then
    ``[default: …]`` and ``[required]``, each beside the last where it fits; a long word (a flag named
    in the help) folds, never cut."""
    from rich.columns import Columns
    from rich.text import Text

    text = help_with_choices(param) if isinstance(param, TyperOption) else param.help or ""
    text = "\n".join(paragraph.replace("\n", " ").strip() for paragraph in text.split("\n\n")).strip()
    items = []
    if text:
        shown = Text.from_markup(text, style=rich_utils.STYLE_OPTION_HELP, overflow="fold")
        items.append(rich_utils.highlighter(shown))
    default = default_text(param, ctx)
    if default:
        items.append(Text(f"[default: {default}]", style=rich_utils.STYLE_OPTION_DEFAULT, overflow="fold"))
    if param.required:
        items.append(Text("[required]", style=rich_utils.STYLE_REQUIRED_LONG, overflow="fold"))
    return Columns(items)


def _options_panel(title, params, ctx, console, rich_utils) -> None:
    """A panel of options (or arguments), with every option name whole at any terminal width: a name is
    what a user copies, and Typer's table cut long ones to ``--max-train-leng…`` at 80 columns. The
    names take one column that never wraps, a negative flag (``--no-crf``) on the line below its
    option; the value and the help share what is left and fold there."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    table = Table(show_header=False, expand=True, box=None, padding=(0, 1))
    required = any(param.required for param in params)
    if required:
        table.add_column(no_wrap=True)  # the required mark
    table.add_column(no_wrap=True)  # the names
    table.add_column(no_wrap=True)  # short names
    table.add_column(overflow="fold", max_width=VALUE_WIDTH)  # the value
    table.add_column(overflow="fold", ratio=1)  # the help
    for param in params:
        is_option = isinstance(param, TyperOption)
        if is_option:
            long = [o for o in param.opts if o.startswith("--")]
            short = [o for o in param.opts if not o.startswith("--")]
        else:
            long, short = [], [argument_name(param) + ("..." if param.nargs != 1 else "")]
        names = rich_utils.highlighter(Text(",".join(long)))
        negative = [o for o in param.secondary_opts if o.startswith("--")]
        if negative:
            names.append("\n")
            names.append_text(rich_utils.negative_highlighter(Text(",".join(negative))))
        short += [o for o in param.secondary_opts if not o.startswith("--")]
        value = Text((shown_value(param) if is_option else None) or "", style=rich_utils.STYLE_TYPES)
        mark = Text(rich_utils.REQUIRED_SHORT_STRING, style=rich_utils.STYLE_REQUIRED_SHORT)
        table.add_row(
            *([mark if param.required else ""] if required else []),
            names,
            rich_utils.highlighter(Text(",".join(short))),
            rich_utils.types_highlighter(value),
            _parameter_help(param, ctx, rich_utils),
        )
    if params:
        style = rich_utils.STYLE_OPTIONS_PANEL_BORDER
        console.print(
            Panel(table, border_style=style, title=title, title_align=rich_utils.ALIGN_OPTIONS_PANEL)
        )


def _commands_panel(group: TyperGroup, ctx: typer.Context, console, rich_utils) -> None:
    """The panel of a group's commands: each name, and the first paragraph of its help."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    commands = [group.get_command(ctx, name) for name in group.list_commands(ctx)]
    commands = [command for command in commands if command is not None and not command.hidden]
    if not commands:
        return
    table = Table(show_header=False, expand=True, box=None, pad_edge=False, padding=(0, 1))
    width = max(len(command.name or "") for command in commands)
    table.add_column(style=rich_utils.STYLE_COMMANDS_TABLE_FIRST_COLUMN, no_wrap=True, width=width)
    table.add_column("Description", justify="left", no_wrap=False, ratio=10)
    for command in commands:
        summary = inspect.cleandoc(command.short_help or command.help or "").split("\n\n")[0].strip()
        table.add_row(Text(command.name or ""), rich_utils.highlighter(Text.from_markup(summary)))
    style = rich_utils.STYLE_COMMANDS_PANEL_BORDER
    console.print(
        Panel(table, border_style=style, title="Commands", title_align=rich_utils.ALIGN_COMMANDS_PANEL)
    )


def _description(command, rich_utils):
    """A command's help below its usage line: its first paragraph, then the others dimmed."""
    from rich.console import Group
    from rich.text import Text

    first, *others = inspect.cleandoc(command.help).partition("\f")[0].split("\n\n")
    lines = [rich_utils.highlighter(Text.from_markup(first.replace("\n", " ").strip()))]
    if others:
        style = rich_utils.STYLE_HELPTEXT
        lines += [Text(""), rich_utils.highlighter(Text.from_markup("\n\n".join(others), style=style))]
    return Group(*lines)


def print_help(command: TyperCommand | TyperGroup, ctx: typer.Context) -> None:
    """The whole --help page, on stdout: the usage line, the description, the panels of arguments and
    options (train's: one per config section, by their ``rich_help_panel``), a group's commands."""
    from rich.align import Align
    from rich.console import Console
    from rich.padding import Padding
    from rich.theme import Theme
    from typer import rich_utils

    styles = {
        "option": rich_utils.STYLE_OPTION,
        "switch": rich_utils.STYLE_SWITCH,
        "negative_option": rich_utils.STYLE_NEGATIVE_OPTION,
        "negative_switch": rich_utils.STYLE_NEGATIVE_SWITCH,
        "types": rich_utils.STYLE_TYPES,
        "types_sep": rich_utils.STYLE_TYPES_SEPARATOR,
        "usage": rich_utils.STYLE_USAGE,
    }
    console = Console(
        theme=Theme(styles),
        highlighter=rich_utils.highlighter,
        color_system=rich_utils.COLOR_SYSTEM,
        force_terminal=rich_utils.FORCE_TERMINAL,  # Typer's: colours under FORCE_COLOR, GITHUB_ACTIONS
        width=rich_utils.MAX_WIDTH,  # TERMINAL_WIDTH, else the terminal's
    )
    console.print(
        Padding(rich_utils.highlighter(command.get_usage(ctx)), 1), style=rich_utils.STYLE_USAGE_COMMAND
    )
    if command.help:
        console.print(Padding(Align(_description(command, rich_utils), pad=False), (0, 1, 1, 1)))
    params = [param for param in command.get_params(ctx) if not getattr(param, "hidden", False)]
    for kind, first in ((TyperArgument, "Arguments"), (TyperOption, "Options")):
        panels: dict[str, list] = {first: []}  # the first panel, then the others in their order
        for param in params:
            if isinstance(param, kind):
                panels.setdefault(param.rich_help_panel or first, []).append(param)
        for title, members in panels.items():
            _options_panel(title, members, ctx, console, rich_utils)
    if isinstance(command, TyperGroup):
        _commands_panel(command, ctx, console, rich_utils)


def format_plain_options(command: TyperCommand | TyperGroup, ctx: typer.Context, formatter) -> None:
    """The arguments and options of Click's plain page (under ``TYPER_USE_RICH=0``), an option's value
    named as on the rich page (``--batch-size N``)."""
    records: dict[str, list[tuple[str, str]]] = {"argument": [], "option": []}
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is not None and isinstance(param, TyperOption) and not (param.is_flag or param.count):
            names = sorted(param.opts, key=lambda name: len(name) - len(name.lstrip("-")))  # -m, --model
            record = (f"{', '.join(names)} {shown_value(param)}", record[1])
        if record is not None:
            records[param.param_type_name].append(record)
    for title, rows in (("Arguments", records["argument"]), ("Options", records["option"])):
        if rows:
            with formatter.section(title):
                formatter.write_dl(rows)


class _HelpPage:
    """What a verb and the group draw alike: easyfirst's --help page, Click's plain one under
    ``TYPER_USE_RICH=0`` with easyfirst's placeholders (mixed in before Typer's class)."""

    def format_help(self, ctx: typer.Context, formatter) -> None:
        if self.rich_markup_mode is None:  # TYPER_USE_RICH=0: Click's plain page
            return super().format_help(ctx, formatter)
        print_help(self, ctx)

    def format_options(self, ctx: typer.Context, formatter) -> None:
        format_plain_options(self, ctx, formatter)


class Command(_HelpPage, TyperCommand):
    """A verb (``easyfirst train``): Typer's command with easyfirst's --help page."""

    def collect_usage_pieces(self, ctx: typer.Context) -> list[str]:
        return usage_pieces(self, ctx)


class Group(_HelpPage, TyperGroup):
    """The ``easyfirst`` command itself: Typer's group with easyfirst's --help page."""

    def collect_usage_pieces(self, ctx: typer.Context) -> list[str]:
        return [*usage_pieces(self, ctx), self.subcommand_metavar]

    def format_options(self, ctx: typer.Context, formatter) -> None:
        super().format_options(ctx, formatter)
        self.format_commands(ctx, formatter)
