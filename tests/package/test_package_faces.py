"""The faces of two packages that must import little: easyfirst/integrations/__init__.py (each tool is an
optional extra: the package imports none of them) and easyfirst/model/__init__.py with its settings (the
config and `--help` read the model's settings without torch). Checked in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import easyfirst.integrations
import easyfirst.model
from easyfirst.model import settings

HEAVY = ("torch", "numpy", "spacy", "dask", "distributed", "starlette")


def imported_by(*modules: str) -> list[str]:
    """The HEAVY modules that importing ``modules`` in a fresh interpreter brings in."""
    code = f"import sys\nimport {', '.join(modules)}\nprint(__import__('json').dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_integrations_package_imports_no_tool():
    assert "optional extra" in easyfirst.integrations.__doc__
    assert imported_by("easyfirst.integrations") == []


def test_the_model_package_and_its_settings_need_no_torch():
    assert "settings" in easyfirst.model.__doc__ and settings.MODELS == ("nef-f", "nef-s", "bilstm")
    assert imported_by("easyfirst.model", "easyfirst.model.settings", "easyfirst.config") == []
