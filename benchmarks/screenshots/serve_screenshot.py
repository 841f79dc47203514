"""A screenshot of the page `easyfirst serve` sends (GET /), for docs/serve.md: a text typed into the box,
tagged, the second sentence picked and one cell of its raindrop pointed at.

    python benchmarks/screenshots/serve_screenshot.py [--out docs/serve-page.png] [--width 1000]

Starts `easyfirst serve` (the bundled model) on a free loopback port, as benchmarks/speed/serve_load.py does,
and drives tests/browser.py's Chromium (Debian's chromium, driven by Playwright, no network)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks" / "speed"))  # serve_load.py

from serve_load import free_port, serve  # noqa: E402

from browser import chromium  # noqa: E402

TEXT = "The ferry crossed the river at dawn. Nobody on board said a word about the storm."
POINT = (3, 4)  # the cell whose read-out is shown: step, word (from 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "serve-page.png")
    parser.add_argument("--width", type=int, default=1000)
    args = parser.parse_args()
    port = free_port()
    server = serve(port, 2.0, workers=1)
    try:
        with chromium() as browser:
            page = browser.new_page()
            page.set_viewport_size({"width": args.width, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/")
            page.fill("#text", TEXT)
            page.click("button[type=submit]")
            page.locator("#sentences button.sentence").nth(1).click()
            step, word = POINT
            page.hover(f'#raindrop .efr-cell[data-step="{step}"][data-word="{word}"]')
            page.screenshot(path=str(args.out), full_page=True)
            if browser.refused:
                raise SystemExit(f"the page asked for another host: {browser.refused}")
    finally:
        server.terminate()
        server.wait(timeout=60)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
