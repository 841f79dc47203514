"""The interactive raindrop's HTML without a browser (easyfirst.viz.web, Tagger.raindrop, ``plot -o FILE.html``):
the data a page carries against ``Tagger.tag``'s attention, pages that fetch nothing, text that cannot end
the script it sits in, saving by suffix, and the errors for bad input. tests/viz/test_web.py reads the same
pages rendered in Chromium."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLE, run_cli
from easyfirst import Tagger
from easyfirst.api import default_model_path
from easyfirst.data.conllu import read_conllu
from easyfirst.viz.plot import tag_style
from easyfirst.viz.web import fragment, page, raindrop_data

DATA = re.compile(r'<script type="application/json" id="(efr-[0-9a-f]+)-data">(.*?)</script>', re.S)


def embedded(html: str) -> list[tuple[str, list[dict]]]:
    """(id, views) of each fragment in ``html``."""
    return [(ident, json.loads(text)) for ident, text in DATA.findall(html)]


@pytest.fixture(scope="module")
def tagger():
    return Tagger.load()


def test_the_notebook_fragment_carries_the_apis_tokens_tags_and_attention(tagger):
    text = "Microsoft bought a small company in Seattle. It paid in cash."
    raindrop = tagger.raindrop(text, sentence=2)
    [(_, [view])] = embedded(raindrop._repr_html_())
    words = ["It", "paid", "in", "cash", "."]
    assert view["tokens"] == words
    (tagged,) = tagger.tag([words], attention=True)
    assert view["tags"] == tagged.tags
    assert len(view["attention"]) == tagged.attention.shape[0]
    for row, expected in zip(view["attention"], tagged.attention.tolist(), strict=True):
        assert row == pytest.approx(expected, abs=1e-6)
    assert "gold" not in view


def test_gold_tags_and_the_tag_colours_of_the_png(tagger):
    sentence = read_conllu(SAMPLE)[2]
    [(_, [view])] = embedded(tagger.raindrop(sentence.words, gold=sentence.tags)._repr_html_())
    assert view["gold"] == sentence.tags
    for tag, look in view["colors"].items():
        assert (look["color"], look["bold"]) == tag_style(tag, tagger.tags)
    assert set(view["colors"]) == set(tagger.tags)  # the model's whole tag set: colours as in its PNGs


def test_two_fragments_get_their_own_ids():
    view = raindrop_data(["a", "b"], ["X", "Y"], [[0.5, 0.5], [0.0, 1.0]])
    html = fragment(view) + fragment([view, view])
    found = embedded(html)
    assert len({ident for ident, _ in found}) == 2
    assert [len(views) for _, views in found] == [1, 2]
    for ident, _ in found:
        assert (
            html.count(f'class="efr-fragment" id="{ident}"') == 1 and html.count(f'id="{ident}-mount"') == 1
        )


def test_where_scripts_do_not_run_the_fragment_says_why():
    html = fragment(raindrop_data(["a"], ["X"], [[1.0]]))
    mount = re.search(r'id="efr-[0-9a-f]+-mount">(.*?)</div>', html, re.S).group(1)
    assert "drawn by JavaScript, which did not run here" in mount and "trust the notebook" in mount


def test_a_token_cannot_end_the_script_or_inject_markup():
    nasty = ["</script><script>alert(1)</script>", "<!--", "&amp;", "\u2028"]
    html = page(raindrop_data(nasty, ["X"] * 4, [[0.25] * 4]), title="<b>title</b>")
    [(_, [view])] = embedded(html)
    assert view["tokens"] == nasty
    assert html.count("<script>alert") == 0 and "<b>title" not in html


def test_a_page_fetches_nothing_and_says_so():
    html = page(raindrop_data(["a"], ["X"], [[1.0]]))
    assert not re.search(r"https?:|//[a-z]|\bsrc=|\bhref=|@import|url\(", html)
    assert "Content-Security-Policy" in html and "default-src 'none'" in html


def test_raindrop_data_refuses_shapes_that_do_not_match():
    with pytest.raises(ValueError, match="2 tokens but 1 tags"):
        raindrop_data(["a", "b"], ["X"], [[0.5, 0.5]])
    with pytest.raises(ValueError, match="attention row 1 has 1 values for 2 tokens"):
        raindrop_data(["a", "b"], ["X", "Y"], [[0.5, 0.5], [1.0]])


def test_save_by_suffix_and_nothing_written_for_an_unknown_one(tagger, tmp_path):
    raindrop = tagger.raindrop(["She", "reads", "."])
    assert raindrop.save(tmp_path / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert raindrop.save(tmp_path / "r.png").read_bytes().startswith(b"\x89PNG")
    with pytest.raises(ValueError, match=r"r\.txt: a raindrop is saved as \.html, \.png, \.svg, \.pdf"):
        raindrop.save(tmp_path / "r.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "r.png"]


def test_raindrop_refuses_what_it_cannot_draw(tagger):
    with pytest.raises(ValueError, match="the text has 1 sentence"):
        tagger.raindrop("One sentence only.", sentence=2)
    with pytest.raises(ValueError, match="gold has 1 tags for 2 tokens"):
        tagger.raindrop(["Two", "words"], gold=["X"])
    with pytest.raises(TypeError, match="not a list of sentences"):
        tagger.raindrop([["a"], ["b"]])


def test_plot_html_refuses_an_unknown_suffix_in_one_line(tmp_path):
    out = tmp_path / "r.txt"
    result = run_cli("plot", "--text", "She reads .", "-o", out)
    assert result.returncode == 2
    message = result.stderr.decode().strip()
    assert message.endswith("r.txt: the figure file must end in .html, .png, .svg, .pdf"), message
    assert "\n" not in message and not out.exists()


def test_compare_puts_one_view_per_model_side_by_side_on_the_page(tagger, tmp_path):
    out = tmp_path / "compare.html"
    words = ["The", "dog", "barks", "."]
    result = run_cli("plot", "--compare", default_model_path(), "--text", " ".join(words), "-o", out)
    assert result.returncode == 0, result.stderr.decode()
    [(_, views)] = embedded(out.read_text(encoding="utf-8"))
    assert [v["title"].split(":")[0] for v in views] == ["bundled model", default_model_path().name]
    (tagged,) = tagger.tag([words], attention=True)
    for view in views:
        assert view["tokens"] == words
        for row, expected in zip(view["attention"], tagged.attention.tolist(), strict=True):
            assert row == pytest.approx(expected, abs=1e-6)


def test_the_screenshot_script_says_what_is_missing_without_ewt(tmp_path):
    """benchmarks/screenshots/raindrop_screenshots.py with EASYFIRST_DATA unset: one line naming it, exit 2, no
    traceback (it was a KeyError), and no screenshot written."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "screenshots" / "raindrop_screenshots.py"
    env = {k: v for k, v in os.environ.items() if k != "EASYFIRST_DATA"}
    env["EASYFIRST_CACHE"] = str(tmp_path / "cache")
    result = subprocess.run(
        [sys.executable, str(script), "--out", str(tmp_path)], capture_output=True, env=env, timeout=300
    )
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert "EASYFIRST_DATA (not set)" in stderr and "UD English EWT" in stderr
    assert not list(tmp_path.glob("*.png"))
