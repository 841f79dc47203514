"""Named data sets: where their files are, and downloading the public ones with checksums.

A split is looked for, in order:

1. under ``$EASYFIRST_DATA`` (the layout of the project's shared data folder, e.g.
   ``ud/UD_English-EWT/en_ewt-ud-train.conllu``);
2. in the user cache, ``$EASYFIRST_CACHE`` or ``$XDG_CACHE_HOME/easyfirst`` or ``~/.cache/easyfirst``,
   with the same layout;
3. downloaded into that cache, for sets with a public source, verified against a SHA-256 digest and
   renamed into place only when complete. ``$EASYFIRST_UD_BASE_URL`` replaces the UD base URL (a
   mirror, or a local server in tests).

UD English EWT comes from the official repository at release r2.16. The dev and test digests are those
of the official files; the train digest was taken from the shared copy, which was rebuilt from the
treebank's per-document sources. If a download does not match, the error gives both digests: then
put the files under ``$EASYFIRST_DATA`` or pass ``--train/--dev/--test``.
"""

from __future__ import annotations

import hashlib
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from easyfirst.atomic import atomic_write
from easyfirst.errors import InputError

UD_BASE_URL = "https://raw.githubusercontent.com/UniversalDependencies/UD_English-EWT/r2.16"


@dataclass(frozen=True)
class DataSet:
    name: str
    task: str
    splits: dict[str, str]  # split → path relative to the data root (a prefix for QE)
    sha256: dict[str, str]  # split → digest, for sets that can be downloaded
    remote: bool = False
    note: str = ""
    prefixes: bool = False  # each split is a path prefix of several files (PREFIX.src, PREFIX.mt, ...)

    def url(self, split: str) -> str:
        base = os.environ.get("EASYFIRST_UD_BASE_URL", UD_BASE_URL).rstrip("/")
        return f"{base}/{Path(self.splits[split]).name}"


DATASETS = {
    d.name: d
    for d in (
        DataSet(
            "ud-en-ewt",
            "pos",
            {s: f"ud/UD_English-EWT/en_ewt-ud-{s}.conllu" for s in ("train", "dev", "test")},
            {
                "train": "3fb78e2b55482c8ee00caa653af436c88c9e5bc9a73ce26e4ae3ddc79d2b7e7b",
                "dev": "531a54ff90d6ab12201c5a50c3e78e6ddac4de69abc4bce5d275d3cd29efe2b6",
                "test": "e266e515a0a7547657ed3d90d9ba46487d6bd251f27ad4269d4e8a427c8555cd",
            },
            remote=True,
            note="UD English EWT r2.16, CC BY-SA 4.0",
        ),
        DataSet(
            "conll2003-en",
            "ner",
            {
                "train": "ner/conll2003/eng.train",
                "dev": "ner/conll2003/eng.testa",
                "test": "ner/conll2003/eng.testb",
            },
            {},
            note="CoNLL-2003 English (not freely downloadable: place the files yourself)",
        ),
        DataSet(
            "wmt16-qe-en-de",
            "qe",
            {"train": "qe/wmt16-en-de/train", "dev": "qe/wmt16-en-de/dev"},
            {},
            note="WMT16 word-level QE en-de (place the files yourself)",
            prefixes=True,
        ),
        DataSet(
            "wmt19-qe-en-de",
            "qe",
            {"train": "qe/wmt19-en-de/train", "dev": "qe/wmt19-en-de/dev"},
            {},
            note="WMT19 word-level QE en-de, 2N+1 tags with gaps and source tags (place the files yourself)",
            prefixes=True,
        ),
    )
}


def cache_root() -> Path:
    if os.environ.get("EASYFIRST_CACHE"):
        return Path(os.environ["EASYFIRST_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "easyfirst"


def _present(path: Path) -> bool:
    """A file, or for QE a prefix whose files exist."""
    return path.is_file() or any(path.parent.glob(path.name + ".*")) if path.parent.is_dir() else False


def locate(name: str, split: str) -> Path | None:
    """Where ``split`` of the set is on this machine (EASYFIRST_DATA, then cache), or None."""
    relative = DATASETS[name].splits[split]
    roots = [Path(os.environ["EASYFIRST_DATA"])] if os.environ.get("EASYFIRST_DATA") else []
    for root in [*roots, cache_root()]:
        if _present(root / relative):
            return root / relative
    return None


def resolve_split(name: str, split: str, *, download: bool = True, progress: bool = True) -> Path:
    """The path of ``split`` of the named set, downloading it into the cache if needed and possible."""
    if name not in DATASETS:
        raise InputError(f"unknown data set {name!r} (known: {', '.join(DATASETS)})")
    dataset = DATASETS[name]
    if split not in dataset.splits:
        raise InputError(f"data set {name} has no {split} split (it has {', '.join(dataset.splits)})")
    found = locate(name, split)
    if found is not None:
        return found
    root = os.environ.get("EASYFIRST_DATA")
    if root and not Path(root).is_dir():  # a mistake to say, not a reason to download
        raise InputError(missing(name, f"EASYFIRST_DATA={root} names no folder, so nothing was downloaded"))
    if dataset.remote and download:
        target = cache_root() / dataset.splits[split]
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            fetch(dataset.url(split), target, dataset.sha256.get(split), progress=progress)
        except InputError as error:
            raise InputError(missing(name, f"downloading {split} failed ({error})")) from None
        return target
    raise InputError(missing(name))


def missing(name: str, failure: str | None = None) -> str:
    """What ``easyfirst data`` says of a set with missing splits, on one line, for every verb that needs
    the set: which splits, where it looked, how to get them (``failure``: why a download did not)."""
    dataset = DATASETS[name]
    absent = [split for split in dataset.splits if locate(name, split) is None]
    folder = str(Path(dataset.splits[absent[0]]).parent)
    get = how_to_get(name)
    return (
        f"data set {name} ({dataset.note}): {', '.join(absent)} missing; looked in "
        + " and ".join(places(folder))
        + (f"; {failure}" if failure else "")
        + f". It is {get}; `easyfirst data` lists every set"
    )


def fetch(url: str, dest: Path, sha256: str | None, *, progress: bool = True, timeout: float = 30.0) -> None:
    """Download ``url`` to ``dest`` through a temporary file, verifying ``sha256``; nothing is left on failure."""

    def download(out) -> None:
        digest = hashlib.sha256()
        try:
            response = urllib.request.urlopen(url, timeout=timeout)  # noqa: S310 (http/https only)
        except urllib.error.HTTPError as error:
            raise InputError(f"download failed: HTTP {error.code} {error.reason}", url) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise InputError(f"download failed: {reason}", url) from None
        with response:
            total = int(response.headers.get("Content-Length") or 0) or None
            _copy(response, out, digest, total, progress and sys.stderr.isatty(), dest.name)
        if sha256 is not None and digest.hexdigest() != sha256:
            raise InputError(
                f"checksum mismatch: expected sha256 {sha256}, got {digest.hexdigest()}; the file was not "
                "kept. Put the files under $EASYFIRST_DATA or pass explicit paths instead.",
                url,
            )

    atomic_write(dest, download)


def _copy(response, out, digest, total: int | None, show: bool, label: str) -> None:
    from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

    with Progress(
        *Progress.get_default_columns(),
        DownloadColumn(),
        TransferSpeedColumn(),
        disable=not show,
        transient=True,
    ) as bar:
        task = bar.add_task(f"downloading {label}", total=total)
        while True:
            try:
                chunk = response.read(1 << 16)
            except OSError as error:
                raise InputError(f"download interrupted: {error}", getattr(response, "url", label)) from None
            if not chunk:
                break
            out.write(chunk)
            digest.update(chunk)
            bar.advance(task, len(chunk))


def looked_at(name: str, split: str) -> list[str]:
    """Where :func:`locate` looks for ``split`` of the set, in order, said for a user."""
    return places(DATASETS[name].splits[split])


def places(relative: str) -> list[str]:
    """``relative`` (a path in the data layout) under EASYFIRST_DATA and in the cache, said for a user."""
    root = os.environ.get("EASYFIRST_DATA")
    if root:
        there = "missing there" if Path(root).is_dir() else "no such folder"
        first = f"$EASYFIRST_DATA/{relative} (EASYFIRST_DATA={root}: {there})"
    else:
        first = "$EASYFIRST_DATA (not set)"
    return [first, str(cache_root() / relative)]


def unset_hint(path: str | None) -> str:
    """For a missing path that begins where a set's folder would if ``$EASYFIRST_DATA`` were empty
    (``/ud/…``, ``/ner/…``, ``/qe/…``: README's ``$EASYFIRST_DATA/ud/…`` with the variable unset), what
    to add to the error; otherwise nothing."""
    tops = {Path(relative).parts[0] for d in DATASETS.values() for relative in d.splits.values()}
    if path is None or os.environ.get("EASYFIRST_DATA") or Path(path).parent.exists():
        return ""
    top = next((top for top in sorted(tops) if path.startswith(f"/{top}/")), None)
    if top is None:
        return ""
    return (
        f" (EASYFIRST_DATA looks unset: was this $EASYFIRST_DATA/{top}/…? Set it to the data folder; "
        "`easyfirst data` says what it finds)"
    )


def how_to_get(name: str) -> str:
    """One sentence on how to get a set that is missing."""
    dataset = DATASETS[name]
    folder = str(Path(next(iter(dataset.splits.values()))).parent)
    if dataset.remote:
        return (
            f"downloaded into {cache_root() / folder} on first use (easyfirst train --task {dataset.task}), "
            f"checked against its SHA-256; or put the files under $EASYFIRST_DATA/{folder}/"
        )
    files = ", ".join(
        Path(path).name + (".*" if dataset.prefixes else "") for path in dataset.splits.values()
    )
    return f"not downloadable: put {files} under $EASYFIRST_DATA/{folder}/ (or pass --train/--dev/--test)"


def describe() -> list[dict]:
    """Each set with its task and, per split, where it is found (or 'missing'); for a set with a
    missing split, ``looked`` (split → the places searched) and ``get`` (how to get it)."""
    rows = []
    for dataset in DATASETS.values():
        splits, looked = {}, {}
        for split in dataset.splits:
            found = locate(dataset.name, split)
            splits[split] = (
                str(found) if found else ("missing (downloadable)" if dataset.remote else "missing")
            )
            if found is None:
                looked[split] = looked_at(dataset.name, split)
        row = {"name": dataset.name, "task": dataset.task, "note": dataset.note, "splits": splits}
        if looked:
            row |= {"looked": looked, "get": how_to_get(dataset.name)}
        rows.append(row)
    return rows
