"""Screenshots of the interactive raindrop page (``easyfirst plot -o FILE.html``) in headless Chromium, for
docs/raindrops.md: UD English EWT sentences of 8, 30 and 102 words in a 1200 px window, and the 30-word
one at 800 px, each with one cell pointed at (its read-out shown), gold tags from the treebank.

    EASYFIRST_DATA=/work/shared/data python benchmarks/screenshots/raindrop_screenshots.py [--out docs]

Uses tests/browser.py's Chromium (Debian's chromium, driven by Playwright, no network). The PNGs are
reduced to 256 colours (Pillow), which keeps them small and their text sharp."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from easyfirst.data.conllu import read_conllu  # noqa: E402
from easyfirst.data.datasets import locate, looked_at  # noqa: E402

# (file name under --out, EWT split, sentence index from 0, window width, the step (from 0) whose cell of
# most attention is pointed at)
SHOTS = [
    ("raindrop-html-8.png", "dev", 198, 1200, 4),  # "Malach , What you say makes sense ." (1 mistake)
    ("raindrop-html-30.png", "dev", 4, 1200, 2),  # "Bush also nominated A. Noel Anketell Kramer ..." (2)
    ("raindrop-html-30-narrow.png", "dev", 4, 800, 2),
    ("raindrop-html-100.png", "train", 6724, 1200, 33),  # 102 words of Don Quixote (games of chess; 7)
]


def treebank() -> dict[str, Path]:
    """The EWT splits the shots use, or a one-line message and exit 2 (EASYFIRST_DATA unset or wrong)."""
    found = {split: locate("ud-en-ewt", split) for split in ("dev", "train")}
    for split, path in found.items():
        if path is None:
            print(
                f"raindrop_screenshots.py: UD English EWT's {split} split is needed and not found (looked at "
                f"{', '.join(looked_at('ud-en-ewt', split))}): set EASYFIRST_DATA to a folder with "
                "ud/UD_English-EWT/ in it, or run `easyfirst data` to see what is where",
                file=sys.stderr,
            )
            raise SystemExit(2)
    return found


def shrink(path: Path) -> None:
    """The screenshot in 256 colours (an adaptive octree palette, which keeps the α scale's gradient)."""
    from PIL import Image

    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    small.save(path, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    splits = treebank()
    from browser import chromium
    from easyfirst import Tagger

    tagger = Tagger.load()
    sentences = {split: read_conllu(path) for split, path in splits.items()}
    with tempfile.TemporaryDirectory() as tmp, chromium() as browser:
        for name, split, index, width, step in SHOTS:
            sentence = sentences[split][index]
            attention = tagger.tag([sentence.words], attention=True)[0].attention
            word = int(attention[step].argmax())
            page_file = tagger.raindrop(sentence.words, gold=sentence.tags).save(Path(tmp) / "page.html")
            page = browser.new_page()
            page.set_viewport_size({"width": width, "height": 700})
            page.goto(page_file.as_uri())
            page.locator(f'.efr-cell[data-step="{step}"][data-word="{word}"]').hover()
            out = args.out / name
            page.screenshot(path=str(out), full_page=True)
            page.close()
            shrink(out)
            print(
                f"wrote {out} ({len(sentence.words)} words, {width} px wide, {out.stat().st_size // 1024} KiB)"
            )
        assert not browser.refused, browser.refused


if __name__ == "__main__":
    main()
