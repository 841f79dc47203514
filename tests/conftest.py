"""Shared fixtures.

Real-data tests (marker ``realdata``) read the sets under ``$EASYFIRST_DATA``. They skip only when the
variable is unset on a developer's machine; under CI (``CI`` set) a missing data folder is a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "samples" / "en-sample.conllu"


def real_data_root() -> Path:
    value = os.environ.get("EASYFIRST_DATA")
    if not value:
        if os.environ.get("CI"):
            pytest.fail("EASYFIRST_DATA is not set under CI: real-data tests must not skip")
        pytest.skip("EASYFIRST_DATA is not set")
    root = Path(value)
    if not root.is_dir():
        pytest.fail(f"EASYFIRST_DATA={value} is not a folder")
    return root


@pytest.fixture
def data_root() -> Path:
    return real_data_root()


@pytest.fixture
def ewt(data_root) -> dict[str, Path]:
    folder = data_root / "ud" / "UD_English-EWT"
    paths = {s: folder / f"en_ewt-ud-{s}.conllu" for s in ("train", "dev", "test")}
    for path in paths.values():
        assert path.is_file(), f"missing {path}"
    return paths
