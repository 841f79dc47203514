"""Screenshots of the interactive raindrop page (``easyfirst plot -o FILE.html``) in headless Chromium, for
docs/raindrops.md: a 20-word and a ~100-word UD English EWT sentence, each at 800 px and at a wide window,
with the tooltip of one cell shown.

    EASYFIRST_DATA=/work/shared/data python benchmarks/raindrop_screenshots.py [--out docs]

Uses tests/browser.py's Chromium (Debian's chromium, driven by Playwright, no network)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from browser import chromium  # noqa: E402
from easyfirst import Tagger  # noqa: E402
from easyfirst.data.conllu import read_conllu  # noqa: E402

# (name, EWT file, sentence index from 0, the cell whose tooltip is shown: step, word)
SENTENCES = [
    ("", "dev", 71, (4, 5)),  # "Guerrillas threatened to assassinate Prime Minister Iyad Allawi ..."
    ("-100", "train", 6724, (60, 40)),  # 102 words of Don Quixote (the curate on games of chess)
]
WIDTHS = {"": 800, "-wide": 1600}  # docs/raindrop-html[-100][-wide].png


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    folder = Path(os.environ["EASYFIRST_DATA"]) / "ud" / "UD_English-EWT"
    tagger = Tagger.load()
    with tempfile.TemporaryDirectory() as tmp, chromium() as browser:
        for name, split, index, (step, word) in SENTENCES:
            sentence = read_conllu(folder / f"en_ewt-ud-{split}.conllu")[index]
            page_file = tagger.raindrop(sentence.words, gold=sentence.tags).save(
                Path(tmp) / f"page{name}.html"
            )
            for label, width in WIDTHS.items():
                page = browser.new_page()
                page.set_viewport_size({"width": width, "height": 700})
                page.goto(page_file.as_uri())
                page.locator(f'.efr-cell[data-step="{step}"][data-word="{word}"]').hover()
                out = args.out / ("raindrop-html" + name + label + ".png")
                page.screenshot(path=str(out), full_page=True)
                page.close()
                print(f"wrote {out} ({len(sentence.words)} words, {width} px wide)")
        assert not browser.refused, browser.refused


if __name__ == "__main__":
    main()
