"""Write the table of what each backend supports into docs/architecture.md, from the declarations
themselves (easyfirst.backends: each backend's ``encoder_supports`` and ``decoder_supports``).

    python docs/make_backend_table.py            # rewrites the table between its two markers
    python docs/make_backend_table.py --check    # exit 1 if the page's table is out of date

tests/package/test_docs.py fails when the page's table differs from what this script writes, so a
backend that declares a new setting or value shows up on the page with the change that made it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from easyfirst.backends.chooser import BACKENDS, REFERENCE
from easyfirst.backends.declaration import ANY, DECODER_SETTINGS, ENCODER_SETTINGS, AtMost

PAGE = Path(__file__).with_name("architecture.md")
BEGIN = "<!-- backends: written by `python docs/make_backend_table.py` from the declarations -->"
END = "<!-- /backends -->"

# what a setting is, where its name alone does not say it (the [model] keys are in configuration.md)
MEANING = {
    "revision": "of the reference's equations",
    "sentences": "`one` unpadded sentence, or `many`",
    "dtype": "of the parameters",
    "training": "`true`: an update with gradients",
}


def _values(allowed) -> str:
    if allowed is ANY:
        return "any"
    if isinstance(allowed, AtMost):
        return str(allowed)
    return ", ".join(f"`{str(v).lower()}`" for v in sorted(allowed, key=str))


def _cell(backend, part: str, setting: str) -> str:
    if getattr(backend, part) is None:
        return ""
    if backend is REFERENCE:
        return "any"
    supports = backend.encoder_supports if part == "encoder" else backend.decoder_supports
    if setting not in supports:
        return "declines"
    return _values(supports[setting])


def render() -> str:
    """The table: a row per setting of each part, a column per backend in the chooser's order."""
    names = list(BACKENDS)
    lines = [
        BEGIN,
        "",
        "| part | setting | " + " | ".join(f"`{n}`" for n in names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for part, settings in (("encoder", ENCODER_SETTINGS), ("decoder", DECODER_SETTINGS)):
        for setting in settings:
            name = f"`{setting}`" + (f" ({MEANING[setting]})" if setting in MEANING else "")
            cells = [_cell(BACKENDS[n], part, setting) or "—" for n in names]
            lines.append(f"| {part} | {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "— : the backend does not compute that part; *declines*: it was not written for that setting, so\n"
        "the chooser passes it over. A backend also needs what it imports: `numba` runs where Numba can be\n"
        "imported (a core dependency; its loops are compiled once after an install, which is announced).",
        "",
        END,
    ]
    return "\n".join(lines)


def replaced(page: str) -> str:
    """The page with its table (between :data:`BEGIN` and :data:`END`) made from today's declarations."""
    head, found, rest = page.partition(BEGIN)
    _, closed, tail = rest.partition(END)
    if not (found and closed):
        raise SystemExit(f"{PAGE}: the markers {BEGIN!r} and {END!r} are missing")
    return head + render() + tail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the table is out of date")
    args = parser.parse_args()
    page = PAGE.read_text(encoding="utf-8")
    new = replaced(page)
    if args.check:
        sys.exit(0 if new == page else 1)
    PAGE.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
