"""The interactive raindrop: easyfirst/viz/web/component.py (a view's data checked, the fragment and the
page self-contained, JSON that cannot close its script element), easyfirst/viz/web/raindrop.py (the
Raindrop object: panels side by side, saved by suffix), and the viz package, which draws what it is
given and never loads a model."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import torch

import easyfirst.viz
from easyfirst.viz.plot import MISTAKE, Drop
from easyfirst.viz.web import asset, fragment, page, raindrop_data, tag_colors
from easyfirst.viz.web.component import POLICY
from easyfirst.viz.web.raindrop import FORMATS, Raindrop

ATTENTION = [[0.5, 0.25, 0.25], [0.0, 1.0, 0.0]]


def embedded(html: str) -> list:
    """The views a fragment carries in its JSON script element."""
    match = re.search(r'<script type="application/json" id="efr-[0-9a-f]{12}-data">(.*?)</script>', html)
    return json.loads(match.group(1))


def test_a_view_has_its_words_tags_attention_and_colours():
    data = raindrop_data(
        ["a", "b", "c"], ["X", "Y", "X"], torch.tensor(ATTENTION), gold=["X", "X", "X"], model="m"
    )
    assert data["tokens"] == ["a", "b", "c"] and data["tags"] == ["X", "Y", "X"]
    assert data["attention"] == ATTENTION and data["gold"] == ["X", "X", "X"] and data["model"] == "m"
    assert "task" not in data and "title" not in data
    assert set(data["colors"]) == {"X", "Y"} and data["mistake"] == MISTAKE
    assert all(c["color"] != MISTAKE for c in data["colors"].values())  # red is no tag's colour
    assert tag_colors(["X", "Y"]) == data["colors"]


@pytest.mark.parametrize(
    "tags, gold, attention, message",
    [
        (["X"], None, ATTENTION, "3 tokens but 1 tags"),
        (["X"] * 3, ["X"], ATTENTION, "3 tokens but 3 tags and 1 gold tags"),
        (["X"] * 3, None, [[1.0, 0.0]], "attention row 0 has 2 values for 3 tokens"),
    ],
)
def test_a_view_whose_parts_disagree_in_length_is_refused(tags, gold, attention, message):
    with pytest.raises(ValueError, match=message):
        raindrop_data(["a", "b", "c"], tags, attention, gold=gold)


def test_a_fragment_carries_its_views_and_nothing_can_close_its_script():
    view = raindrop_data(["</script><b>", "&"], ["X", "X"], [[0.5, 0.5]])
    html = fragment(view)
    assert "</script><b>" not in html.split('-data">', 1)[1].split("</script>", 1)[0]
    assert embedded(html) == [view]
    assert asset("raindrop.js") in html and asset("raindrop.css") in html
    assert fragment(view) != html  # a unique id each time: two fragments on one page do not clash


def test_a_page_is_a_whole_document_that_loads_nothing():
    html = page([raindrop_data(["a"], ["X"], [[1.0]])], title="a <b> title")
    assert html.startswith("<!DOCTYPE html>") and f'content="{POLICY}"' in html
    assert "<title>a &lt;b&gt; title</title>" in html
    assert not re.search(r'(src|href)="(https?:)?//', html)


def drop(words, tags, title=""):
    return Drop(words, tags, torch.full((2, len(words)), 1 / len(words)), title=title)


def test_raindrops_side_by_side_and_their_views():
    left = Raindrop([drop(["a", "b"], ["X", "Y"], "one")], ["X", "Y"])
    right = Raindrop([drop(["a", "b"], ["Z", "Z"], "two")], ["Z"])
    both = Raindrop.side_by_side([left, right])
    assert both.tagset == ["X", "Y", "Z"] and [d.title for d in both.drops] == ["one", "two"]
    views = both.views(show_beta=False)
    assert [v["title"] for v in views] == ["one", "two"] and all(v["beta"] is False for v in views)
    assert all(set(v["colors"]) == {"X", "Y", "Z"} for v in views)  # one tag set: one colour per tag
    assert embedded(left._repr_html_()) == left.views()


@pytest.mark.parametrize("suffix", FORMATS)
def test_a_raindrop_is_saved_as_its_suffix_says(suffix, tmp_path):
    raindrop = Raindrop([drop(["a", "b"], ["X", "Y"])], ["X", "Y"])
    path = raindrop.save(tmp_path / f"r{suffix}")
    head = path.read_bytes()[:16]
    expected = {".html": b"<!DOCTYPE html>", ".png": b"\x89PNG", ".svg": b"<?xml", ".pdf": b"%PDF"}[suffix]
    assert head.startswith(expected)
    if suffix == ".html":
        assert "<title>easyfirst raindrop: a b</title>" in path.read_text()


def test_a_raindrop_refuses_another_suffix(tmp_path):
    with pytest.raises(ValueError, match=r"r\.jpg: a raindrop is saved as \.html, \.png, \.svg, \.pdf"):
        Raindrop([drop(["a"], ["X"])], ["X"]).save(tmp_path / "r.jpg")
    assert list(tmp_path.iterdir()) == []


def test_the_viz_package_draws_and_never_loads_a_model():
    """No viz module imports what loads or runs a model (read from their imports, those inside functions
    too): it draws what it is given."""
    assert "never loads or runs a model" in easyfirst.viz.__doc__
    runs_models = ("easyfirst.api", "easyfirst.runs", "easyfirst.tagging", "easyfirst.training", "easyfirst.model",
                   "easyfirst.backends")  # fmt: skip
    found = []
    for path in Path(easyfirst.viz.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}: {n}" for n in names if n.startswith(runs_models)]
    assert found == []


@pytest.mark.parametrize(
    ("words", "text", "title"),
    [
        ("Microsoft bought a company in Seattle .".split(), "", "Microsoft bought a company in Seattle."),
        (["a", "b"], "a  b as written", "a  b as written"),  # the text, where known, as it is
        (["w"] * 41, "", " ".join(["w"] * 40) + " …"),  # 81 characters: cut at the last space before 80
    ],
)
def test_the_pages_title_shows_the_sentence_as_written(words, text, title, tmp_path):
    """The page said "in Seattle ." with a space before the stop: the title shows text as written."""
    raindrop = Raindrop([drop(words, ["X"] * len(words))], ["X"])
    raindrop.drops[0].text = text
    page = raindrop.save(tmp_path / "r.html").read_text()
    assert (
        f"<title>easyfirst raindrop: {title}</title>" in page
        and f"<h1>easyfirst raindrop: {title}</h1>" in page
    )


def test_tagger_raindrop_of_text_keeps_the_sentence_as_written():
    from easyfirst import Tagger

    text = "He didn't pay  $3.50 (cash). Then he left!"
    raindrop = Tagger.load().raindrop(text, sentence=1)
    assert raindrop.drops[0].words[-3:] == ["cash", ")", "."]
    assert raindrop.drops[0].text == "He didn't pay $3.50 (cash)."  # a run of spaces reads as one, as in UD
    assert Tagger.load().raindrop(["a", "b", "."]).drops[0].text == ""  # tokens: not known
