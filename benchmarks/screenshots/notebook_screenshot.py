"""A screenshot of two raindrops in a JupyterLab notebook, for docs/raindrops.md: the notebook of its
"In a notebook" section executed (nbclient), trusted, opened in JupyterLab in headless Chromium, and
both raindrops checked to be drawn, each with its own step control, before the shot.

    python benchmarks/screenshots/notebook_screenshot.py [--out docs/raindrop-notebook.png]

Needs JupyterLab beside easyfirst (not a dependency of the project: `pip install jupyterlab`) and
tests/browser.py's Chromium (Debian's chromium, driven by Playwright, no network); the PNG is reduced to
256 colours as raindrop_screenshots.py does. JupyterLab runs on a
free loopback port with its settings, data and runtime folders in a temporary folder, so nothing of the
user's Jupyter setup is read or written."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks" / "speed"))  # serve_load.py

from raindrop_screenshots import shrink  # noqa: E402
from serve_load import free_port  # noqa: E402

from browser import chromium  # noqa: E402

CELLS = [
    "from easyfirst import Tagger\n\n"
    "tagger = Tagger.load()\n"
    'tagger.raindrop("Microsoft bought a small company in Seattle.")',
    'tagger.raindrop(["I", "saw", "her", "duck", "."], gold=["PRON", "VERB", "PRON", "NOUN", "PUNCT"])',
]
POINT = (4, 3)  # in the second raindrop, the cell pointed at: step, word (from 0)


def notebook(folder: Path) -> Path:
    """The notebook of CELLS, executed and trusted (its scripts run when JupyterLab opens it)."""
    import nbformat
    from nbclient import NotebookClient

    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(book, timeout=300, kernel_name="python3").execute()
    path = folder / "raindrops.ipynb"
    nbformat.write(book, path)
    subprocess.run([sys.executable, "-m", "jupyter", "trust", str(path)], check=True)
    return path


def jupyterlab(folder: Path, port: int) -> subprocess.Popen:
    """JupyterLab serving ``folder`` on loopback ``port``, without a token, once it answers."""
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         "--IdentityProvider.token=", f"--ServerApp.root_dir={folder}",
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    for _ in range(120):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2)
            return server
        except OSError:
            time.sleep(0.5)
    server.terminate()
    raise SystemExit("JupyterLab did not answer in 60 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "raindrop-notebook.png")
    parser.add_argument("--width", type=int, default=900)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="efr-notebook-") as tmp:
        folder = Path(tmp)
        for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR"):
            os.environ[name] = str(folder / name.lower())  # for the kernel, `jupyter trust` and the server
        path = notebook(folder)
        port = free_port()
        server = jupyterlab(folder, port)
        try:
            with chromium() as browser:
                page = browser.new_page()
                page.set_viewport_size({"width": args.width, "height": 2400})  # the whole notebook
                page.goto(f"http://127.0.0.1:{port}/lab/tree/{path.name}")
                page.wait_for_function("document.querySelectorAll('.jp-OutputArea .efr-cell').length > 0")
                drops = page.locator(".jp-OutputArea .efr-fragment")
                if drops.count() != 2:
                    raise SystemExit(f"{drops.count()} raindrops drawn in the notebook, not 2")
                news = page.get_by_role("button", name="No", exact=True)  # "notified of Jupyter news?"
                if news.count():
                    news.first.click()
                page.keyboard.press("Control+b")  # the left sidebar closed: the notebook takes the width
                page.wait_for_timeout(500)
                step, word = POINT
                drops.nth(1).locator(f'.efr-cell[data-step="{step}"][data-word="{word}"]').hover()
                time.sleep(0.5)
                # the notebook's cells, without the empty space the tall window leaves under them
                top = page.locator(".jp-Notebook .jp-Cell").first.bounding_box()
                end = page.locator(".jp-Notebook .jp-Cell").last.bounding_box()
                box = page.locator(".jp-NotebookPanel-notebook").bounding_box()
                height = end["y"] + end["height"] - top["y"] + 16
                clip = {"x": box["x"], "y": top["y"] - 8, "width": box["width"], "height": height}
                page.screenshot(path=str(args.out), clip=clip)
                shrink(args.out)
                if browser.refused:
                    print(f"note: the page asked for another host (refused): {browser.refused}")
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:  # a kernel slow to stop
                server.kill()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
