"""Many inputs in one command (``easyfirst tag FILE... -o DIR``): which files, the name each output
gets, and which are done already.

Each input is written to ``DIR/<its name>`` (``.jsonl`` added for JSON lines), atomically
(easyfirst.atomic), so a file present in DIR is a finished one: a rerun skips it and tags the rest
(resuming an interrupted run). A folder given as an input stands for the files directly inside it
(sorted by name; hidden files, the temporary files of an unfinished write among them, and subfolders
left out). Two inputs with the same name from different folders would need the same output: they are
refused together, in one line, before anything is tagged (rename one, or tag them into different
folders); the same file given twice (by a folder and a glob) is tagged once.

Free of torch: every mistake here is found before the model is loaded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from easyfirst.errors import InputError


@dataclass
class Corpus:
    """The inputs to tag into ``folder``: ``todo`` (input, output) in order, and how many inputs were
    ``skipped`` because their output exists."""

    folder: Path
    todo: list[tuple[str, Path]] = field(default_factory=list)
    skipped: int = 0

    @property
    def total(self) -> int:
        return len(self.todo) + self.skipped


def several(inputs: list[str]) -> bool:
    """Whether ``easyfirst tag`` was given many inputs (more than one, or a folder): each is then
    written into the ``-o`` folder under its own name. One file's ``-o`` names its output file, as
    before (an existing folder there is refused)."""
    return len(inputs) > 1 or any(os.path.isdir(given) for given in inputs)


def input_files(inputs: list[str]) -> list[str]:
    """The files that ``inputs`` name: each folder's files (sorted, no hidden ones, no subfolders),
    each file once; a missing one is kept, to be reported as that input's failure."""
    found: list[str] = []
    for given in inputs:
        if given == "-":
            raise InputError("- (stdin) cannot be one of several inputs: give files or folders")
        if os.path.isdir(given):
            inside = sorted(p for p in Path(given).iterdir() if p.is_file() and not p.name.startswith("."))
            if not inside:
                raise InputError("no files in this folder", given)
            found += [str(p) for p in inside]
        else:
            found.append(given)
    unique: dict[str, str] = {}
    for path in found:
        unique.setdefault(os.path.realpath(path), path)
    return list(unique.values())


def plan(inputs: list[str], folder: Path, suffix: str = "") -> Corpus:
    """The :class:`Corpus` of ``inputs`` written into ``folder`` (made if missing, its parent being
    there), each under its name and ``suffix`` (``.jsonl`` for JSON lines); refuses two inputs that would
    share an output, and an output that would replace its input."""
    if folder.exists() and not folder.is_dir():
        raise InputError("is a file; several inputs are written into a folder (-o DIR)", folder)
    if not folder.exists() and not (folder.parent if str(folder.parent) else Path(".")).is_dir():
        raise InputError("cannot make this folder: its parent does not exist", folder)
    corpus, named = Corpus(folder), {}
    for given in input_files(inputs):
        name = Path(given).name + suffix
        if name in named:
            raise InputError(
                f"{named[name]} and {given} would both be written to {folder / name}: "
                "rename one, or tag them into different folders"
            )
        named[name] = given
        output = folder / name
        if os.path.realpath(output) == os.path.realpath(given):
            raise InputError(f"-o {folder} is this input's folder: its output would replace it", given)
        if output.is_file():
            corpus.skipped += 1
        else:
            corpus.todo.append((given, output))
    return corpus
