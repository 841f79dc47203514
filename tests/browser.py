"""Headless Chromium for the tests that read a rendered page (marker ``browser``).

Debian's ``chromium`` package, driven by Playwright for Python (no browser download): started with a
fresh profile and without its background connections, and every request that would leave the machine
is refused and recorded, so that a test can assert that a page fetched nothing. The tests skip only
when Chromium or Playwright is missing on a developer's machine; under CI (``CI`` set) that is a
failure (``.ci/run`` installs Chromium).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest

ARGUMENTS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        _missing("no chromium on PATH (apt-get install chromium)")
    return path


def _missing(what: str):
    if os.environ.get("CI"):
        pytest.fail(f"{what}: browser tests must not skip under CI")
    pytest.skip(what)


def local(url: str) -> bool:
    """A file, data or blank page, or a server on this machine's loopback."""
    parsed = urlsplit(url)
    return parsed.scheme in ("file", "data", "about", "blob") or parsed.hostname in (
        "127.0.0.1",
        "localhost",
        "::1",
    )


@contextmanager
def chromium():
    """A browser context (fresh profile, headless) that refuses every request that is not :func:`local`;
    its ``refused`` attribute lists the URLs it refused."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("Playwright is not installed (pip install -e '.[dev]')")
    executable = chromium_path()
    with tempfile.TemporaryDirectory(prefix="efr-chromium-") as profile, sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            profile, executable_path=executable, headless=True, args=ARGUMENTS
        )
        context.refused = []

        def refuse(route):
            context.refused.append(route.request.url)
            route.abort()

        context.route(lambda url: not local(url), refuse)
        try:
            yield context
        finally:
            context.close()
