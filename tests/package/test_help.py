"""--help as a user reads it at 80 columns: one line per verb in the command list, and a command's
description wrapped by the terminal only (no line breaks left over from the docstring)."""

from __future__ import annotations

import re

import pytest

from conftest import run_cli

VERBS = ("train", "tune", "tag", "evaluate", "plot", "analyze", "export", "data", "serve")


def panel_lines(text: str, title: str) -> list[str]:
    """The inner lines of the rich panel named ``title``, without the box characters."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.startswith("╭") and f" {title} " in line:
            inside = True
        elif inside and line.startswith("╰"):
            break
        elif inside:
            lines.append(line.strip("│ ").rstrip())
    return lines


def test_the_command_list_has_one_line_per_verb_at_80_columns():
    result = run_cli("--help", env={"COLUMNS": "80"})
    assert result.returncode == 0
    lines = panel_lines(result.stdout.decode(), "Commands")
    assert [line.split()[0] for line in lines] == list(VERBS)


def description(text: str) -> list[str]:
    """The lines between the usage line and the first panel: the command's help, as wrapped."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "Usage:" in line) + 1
    end = next(i for i, line in enumerate(lines) if line.startswith("╭"))
    return [line.strip() for line in lines[start:end]]


@pytest.mark.parametrize("verb", VERBS)
def test_a_commands_help_breaks_lines_only_where_the_terminal_ends(verb):
    """Each line of a paragraph but its last is filled to near the width: a line left short means a
    line break from the docstring ('(pos' / 'and ner models)' in `tag --help` before the fix)."""
    result = run_cli(verb, "--help", env={"COLUMNS": "80"})
    assert result.returncode == 0
    paragraphs = re.split(r"\n\s*\n", "\n".join(description(result.stdout.decode())).strip())
    for paragraph in paragraphs:
        lines = paragraph.splitlines()
        for line, following in zip(lines[:-1], lines[1:], strict=True):
            # rich wraps at the last space that fits: the next line's first word did not fit on this one
            assert len(line) + 1 + len(following.split()[0]) > 78, f"{verb}: {line!r} broken early"


def option_names(verb: str) -> list[str]:
    """Every name of every option declared on the verb's click command (``--crf`` and ``--no-crf``)."""
    import typer

    from easyfirst.cli import app

    command = typer.main.get_command(app).commands[verb]
    return [
        name
        for param in command.params
        if param.param_type_name == "option"
        for name in (*param.opts, *param.secondary_opts)
    ]


@pytest.mark.parametrize("verb", VERBS)
def test_every_option_name_is_whole_at_80_columns(verb):
    """A name is what a user copies: Typer's table cut long ones (`--max-train-leng…`, 17 cuts in
    `train --help` before the fix); each must appear as a word of its own, and nothing is cut."""
    result = run_cli(verb, "--help", env={"COLUMNS": "80"})
    assert result.returncode == 0
    text = result.stdout.decode()
    assert max(len(line) for line in text.splitlines()) <= 80
    names = option_names(verb)
    assert "--help" in text
    missing = [n for n in names if not re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text)]
    assert missing == [], f"{verb} --help at 80 columns lacks {missing}"
    assert "…" not in text


TYPE_NAMES = re.compile(r"<(?:str|int|float|bool|path|Path|list\[[^\]]*\]|dict[^>]*)>|\{\w+\}|\blist\[")


@pytest.mark.parametrize("verb", VERBS)
def test_no_python_type_name_is_shown_as_a_placeholder(verb):
    """A value is named in words (FILE, NAME|PATH, TAG=W, N): Typer showed `<list[str]>`, `<Path>`,
    `<str>`, and arguments as `{gold}` in the usage line."""
    result = run_cli(verb, "--help", env={"COLUMNS": "80"})
    assert result.returncode == 0
    found = TYPE_NAMES.findall(result.stdout.decode())
    assert found == [], f"{verb} --help shows {found}"


def option_rows(text: str) -> dict[str, str]:
    """Each option of a --help's panels → the words of its row (its value and help), joined."""
    rows: dict[str, list[str]] = {}
    name = None
    for line in text.splitlines():
        if not line.startswith("│"):
            name = None
            continue
        inner = line.strip("│").rstrip()
        start = re.match(r"\s{1,3}(--[\w-]+)", inner)
        if start:
            name = start.group(1)
            rows[name] = []
        if name is not None:
            rows[name].append(inner)
    return {name: " ".join(" ".join(lines).split()) for name, lines in rows.items()}


@pytest.mark.parametrize("verb", VERBS)
def test_every_choice_of_an_option_is_shown_whole_at_80_columns(verb):
    """An option whose values come from a registry shows each of them as a whole word in its row:
    `<nef-f|nef-s|bils` / `tm>` was cut inside a word by the value column."""
    import typer

    from easyfirst.cli import app
    from easyfirst.cli.options import LAZY_CHOICES

    result = run_cli(verb, "--help", env={"COLUMNS": "80"})
    assert result.returncode == 0
    rows = option_rows(result.stdout.decode())
    command = typer.main.get_command(app).commands[verb]
    checked = 0
    for param in command.params:
        if param.name not in LAZY_CHOICES:
            continue
        row = rows[param.opts[0]]
        for choice in LAZY_CHOICES[param.name]():
            assert re.search(rf"(?<![\w-]){re.escape(choice)}(?![\w-])", row), f"{param.opts[0]}: {choice}"
            checked += 1
    assert checked > 0 or verb not in ("train", "tag")


def test_train_help_has_a_panel_per_config_section_and_one_for_qe():
    """Each flag of a config key is in its section's panel (QE's own flags, whose help begins "QE:", in
    the QE panel), so that a flag added to the table lands in its panel."""
    from easyfirst.cli.flags import FLAGS
    from easyfirst.cli.options import SECTION_PANELS

    text = run_cli("train", "--help", env={"COLUMNS": "80"}).stdout.decode()
    titles = [line.split("─ ")[1].split(" ─")[0] for line in text.splitlines() if line.startswith("╭─ ")]
    assert titles == ["Options", "Data", "Model", "Loss", "Training", "QE", "Output"]
    for flag in FLAGS:
        panel = "QE" if flag.help.startswith("QE:") else SECTION_PANELS[flag.section]
        names = [line.split()[0] for line in panel_lines(text, panel) if line.strip()]
        assert flag.name in names, f"{flag.name} not in the {panel} panel"


def test_every_command_draws_easyfirst_s_help_page():
    """The app's group and every verb are easyfirst.cli.help_page's classes (a verb registered with
    another ``cls`` would get Typer's page: `<int>`, cut names)."""
    import typer

    from easyfirst.cli import app
    from easyfirst.cli.help_page import Command, Group

    group = typer.main.get_command(app)
    assert isinstance(group, Group)
    assert sorted(group.commands) == sorted(VERBS)
    assert all(isinstance(command, Command) for command in group.commands.values())


def test_another_typer_app_in_the_process_keeps_typer_s_own_help():
    """easyfirst changes no Typer class: a script that imports easyfirst and has a Typer app of its own
    gets Typer's --help (`<int>`, `{name}`), where the old patches of Typer's classes gave it ours."""
    import typer
    from typer.testing import CliRunner

    import easyfirst.cli  # noqa: F401

    other = typer.Typer()

    @other.command()
    def greet(name: str, times: int = 1) -> None:
        """Greet someone."""

    result = CliRunner().invoke(other, ["--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert "{name}" in result.output and "<int>" in result.output, result.output
