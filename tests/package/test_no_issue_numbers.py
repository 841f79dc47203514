"""What a user reads never cites an issue number, which means nothing outside the tracker: no docstring,
message or help text in the package, no model card, and no ``--help`` page says "issue #45" or "(#45)";
the reason is written out instead. Code comments, for the maintainers, may still name one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conftest import run_cli

PACKAGE = Path(__file__).resolve().parents[2] / "easyfirst"
CITES = re.compile(r"\bissues? ?#?\d+|\(#\d+[),;]|#\d+'s\b", re.IGNORECASE)


def cited(text: str) -> list[str]:
    return [m.group(0) for m in CITES.finditer(text)]


def test_the_pattern_finds_what_it_must_and_passes_the_rest():
    found = ["issue #45", "Issue 45", "issues #15", "(#46)", "(#44,", "#45's"]
    assert all(cited(f"said before {text} here") for text in found)
    for text in ("#333333", "colour #fff", "tag #1 of 3", "step 45", "CSS #10a", "U.S. issue"):
        assert not cited(text), text


def strings(path: Path) -> list[tuple[int, str]]:
    """Every string constant in a module (its docstrings, messages, help texts, f-string parts)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(node.lineno, node.value) for node in ast.walk(tree) if isinstance(node, ast.Constant)
            and isinstance(node.value, str)]  # fmt: skip


def test_no_string_in_the_package_cites_an_issue():
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {hit}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, text in strings(path)
        for hit in cited(text)
    ]
    assert not found, "\n".join(found)


def test_no_shipped_page_or_script_cites_an_issue():
    pages = [p for p in PACKAGE.rglob("*") if p.suffix in {".md", ".js", ".css", ".html"}]
    assert pages, "the model cards and the web component's files are there"
    found = [f"{p.relative_to(PACKAGE.parent)}: {hit}" for p in pages for hit in cited(p.read_text("utf-8"))]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "verb", ["train", "tune", "tag", "evaluate", "plot", "analyze", "export", "data", "serve"]
)
def test_no_help_page_cites_an_issue(verb):
    result = run_cli(verb, "--help", env={"COLUMNS": "80"})
    assert result.returncode == 0
    assert not cited(result.stdout.decode()), verb
