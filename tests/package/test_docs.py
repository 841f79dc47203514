"""The documentation: README.md as a front page, every relative link and #anchor resolving, docs/cli.md
current with the app, and the version that `easyfirst --version` prints named by CHANGELOG.md."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        ROOT / "data" / "README.md",
        ROOT / "benchmarks" / "README.md",
    ]
    + list((ROOT / "docs").rglob("*.md"))
    + list((ROOT / "easyfirst" / "resources").glob("*/README.md"))
)
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def prose(text: str) -> str:
    """The text without fenced code, HTML comments and inline code: what a reader sees as links."""
    text = COMMENT.sub("", FENCE.sub("", text))
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found, seen = set(), {}
    for match in HEADING.finditer(FENCE.sub("", page.read_text(encoding="utf-8"))):
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(prose(page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...: not checked here
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading with that anchor in {linked.name}")
    return broken


def test_the_link_checker_finds_what_is_broken(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## Gaps and source words (WMT18–20)\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Title: `code` (issue #15)\n\n[ok](other.md) [ok](other.md#gaps-and-source-words-wmt1820) "
        "[ok](#title-code-issue-15) [web](https://example.org/x)\n[missing](nowhere.md) "
        "[bad anchor](other.md#nothing)\n\n```\n[in code](ignored.md)\n```\n<!-- [hidden](later.md) -->\n"
    )
    assert broken_links(page) == [
        "nowhere.md: no such file",
        "other.md#nothing: no heading with that anchor in other.md",
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    assert broken_links(page) == []


def test_readme_is_a_front_page():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    assert len(re.findall(r"^\|[-:| ]+\|$", text, re.M)) <= 4  # tables: one header rule each
    # "how do I" for each of these is one click away, on a page that starts with how (a command)
    for name in ("serve", "training", "ner", "qe", "api", "tagging"):
        assert f"](docs/{name}.md)" in text, name
        head = (ROOT / "docs" / f"{name}.md").read_text(encoding="utf-8").splitlines()[:15]
        assert any(line.startswith("```") for line in head), f"docs/{name}.md does not start with how"
    for name in ("studies/results", "studies/speed", "README"):
        assert (ROOT / "docs" / f"{name}.md").is_file(), name


def test_cli_reference_is_current():
    """docs/cli.md is what docs/make_cli_reference.py writes from today's app (run it after changing
    a command, an option or a help string)."""
    spec = importlib.util.spec_from_file_location(
        "make_cli_reference", ROOT / "docs" / "make_cli_reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = module.render()
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == page, (
        "docs/cli.md is out of date: run python docs/make_cli_reference.py"
    )
    for name in ("train", "tag", "evaluate", "plot", "analyze", "export", "data"):
        assert f"\n## easyfirst {name}\n" in page


def test_the_backend_table_is_current():
    """docs/architecture.md's table of what each backend supports is what docs/make_backend_table.py
    makes from today's declarations (run it after a backend declares another setting or value)."""
    spec = importlib.util.spec_from_file_location(
        "make_backend_table", ROOT / "docs" / "make_backend_table.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert module.replaced(page) == page, (
        "docs/architecture.md is out of date: run python docs/make_backend_table.py"
    )
    assert "| decoder | `attention` |" in page and "| `numba` |" in page  # the table is there


def test_version_is_the_changelogs_latest():
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", changelog, re.M)
    assert versions, "CHANGELOG.md names no version"
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.decode().strip() == f"easyfirst {versions[0]}"


def test_the_bundled_model_has_its_card_in_the_package():
    card = ROOT / "easyfirst" / "resources" / "en_ewt_upos" / "README.md"
    text = card.read_text(encoding="utf-8")
    for needed in ("CC BY-SA 4.0", "easyfirst train", "## Known errors", "## Intended use"):
        assert needed in text, needed
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"**/*.md"' in pyproject  # package-data ships it with the weights


def test_the_quickstart_writes_only_under_runs():
    """A new user following README's Quickstart in a fresh clone left tagged.conllu, notes.txt,
    raindrop.png, … in the repository root: every file it writes goes under runs/ (in .gitignore),
    which its first command makes."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Quickstart\n\n```bash\n", 1)[1].split("\n```", 1)[0]
    commands = [line.split("#", 1)[0] for line in block.replace("\\\n", " ").splitlines()]
    commands = [c.strip() for c in commands if c.strip()]
    assert commands[0] == "mkdir -p runs"
    written = [m[1] for c in commands for m in re.finditer(r"(?:^|\s)(?:-o|--output|>)\s+(\S+)", c)]
    assert len(written) >= 8, written
    assert [w for w in written if not w.startswith("runs/")] == []
    assert "runs/" in (ROOT / ".gitignore").read_text().splitlines()


def test_benchmarks_readme_names_every_script():
    """benchmarks/README.md is the index of the studies: a script missing from it is one no reader finds."""
    index = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    scripts = [p for p in (ROOT / "benchmarks").rglob("*.py") if p.name != "__init__.py"]
    assert len(scripts) > 30
    assert [str(p.relative_to(ROOT)) for p in scripts if f"`{p.name}`" not in index] == []
