"""Raindrop plots and the attention analysis: the data behind the figure, label colours, each output
format, the terminal rendering, and analyze's statistics against a direct computation."""

from __future__ import annotations

import io
import json
import math
import re

import pytest
import torch
from rich.console import Console
from verbs import easyfirst

from conftest import SAMPLE, run_cli, train_on_sample
from easyfirst import Tagger
from easyfirst.data.conllu import read_conllu
from easyfirst.tagging.tagged import Tagged
from easyfirst.viz.analysis import analyze
from easyfirst.viz.plot import MISTAKE, Drop, figure, tag_style, terminal


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("plot") / "nef"
    result = train_on_sample(out, epochs=2)
    assert result.returncode == 0, result.stderr.decode()
    return out


def test_figure_draws_the_models_attention_with_tagged_labels(run_dir):
    tagger = Tagger.load(run_dir)
    sentence = read_conllu(SAMPLE)[2]
    tagged = tagger.tag([sentence.words], attention=True)
    tags, attention = [t.tags for t in tagged], [t.attention for t in tagged]
    drop = Drop(sentence.words, tags[0], attention[0], sentence.tags, "t")
    fig = figure([drop], tagger.tags)
    heat, beta_panel = fig.axes[0], fig.axes[1]
    drawn = heat.get_images()[0].get_array()
    assert torch.allclose(torch.tensor(drawn.data), attention[0].float())
    assert drawn.shape == (len(sentence.words), len(sentence.words))
    assert torch.allclose(torch.tensor(beta_panel.get_images()[0].get_array().data)[0], attention[0].sum(0))
    labels = beta_panel.get_xticklabels()
    for i, label in enumerate(labels):
        assert label.get_text().startswith(f"{sentence.words[i]}\n{tags[0][i]}")
        wrong = tags[0][i] != sentence.tags[i]
        expected = MISTAKE if wrong else tag_style(sentence.tags[i], tagger.tags)[0]
        assert label.get_color() == expected
        assert ("✗" in label.get_text()) == wrong


def rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[k : k + 2], 16) for k in (1, 3, 5))


def test_tag_colours_follow_the_papers_figures():
    """Fig. 3: B-* (light) blue, I-* bold, O green; Fig. 4: BAD bold as I-*, OK green. The paper's red for
    I-* and BAD is a mistake's colour here: they are purple (red and blue over green)."""
    (blue, bold_b), (inside, bold_i), (green, bold_o) = (tag_style(t, []) for t in ("B-PER", "I-LOC", "O"))
    assert max(rgb(blue)) == rgb(blue)[2] and max(rgb(green)) == rgb(green)[1]
    assert min(rgb(inside)[0], rgb(inside)[2]) > rgb(inside)[1]
    assert (bold_b, bold_i, bold_o) == (False, True, False)
    assert tag_style("BAD", []) == (inside, True) and tag_style("OK", []) == (green, False)
    upos = ["ADJ", "NOUN", "VERB"]
    assert len({tag_style(t, upos)[0] for t in upos}) == 3


@pytest.mark.parametrize(
    "suffix, magic",
    [(".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF"), (".html", b"<!DOCTYPE html>")],
)
def test_each_format_is_written(run_dir, tmp_path, suffix, magic):
    out = tmp_path / f"drop{suffix}"
    result = run_cli("plot", "-m", run_dir, "--input", SAMPLE, "--sentence", "3", "-o", out)
    assert result.returncode == 0, result.stderr.decode()
    data = out.read_bytes()
    assert data.startswith(magic) and len(data) > 1000


def test_compare_draws_one_panel_per_model(run_dir, tmp_path):
    fig_path = tmp_path / "compare.png"
    result = run_cli("plot", "-m", run_dir, "--compare", run_dir, "--text", "The dog barks .", "-o", fig_path)
    assert result.returncode == 0, result.stderr.decode()
    tagger = Tagger.load(run_dir)
    (tagged,) = tagger.tag([["The", "dog", "barks", "."]], attention=True)
    fig = figure([Drop(["The", "dog", "barks", "."], ["X"] * 4, tagged.attention)] * 2, tagger.tags)
    assert len([ax for ax in fig.axes if ax.get_images()]) == 4  # two heatmaps, two β panels


def test_terminal_rendering_lists_words_and_one_row_per_step(run_dir):
    tagger = Tagger.load(run_dir)
    words = ["The", "dog", "barks", "."]
    (tagged,) = tagger.tag([words], attention=True)
    console = Console(record=True, width=200)
    console.print(terminal(Drop(words, tagged.tags, tagged.attention), tagger.tags))
    text = console.export_text()
    assert "1:The/" in text and "4:./" in text
    steps = [line.split()[0] for line in text.splitlines() if re.match(r"\s*\d+ ", line)]
    assert steps == ["1", "2", "3", "4"]  # one row per sketch step (N = L = 4)


def test_plot_and_analyze_refuse_a_model_without_sketch_steps(tmp_path):
    out = tmp_path / "bilstm"
    assert train_on_sample(out, "--model", "bilstm", epochs=1).returncode == 0
    result = run_cli("plot", "-m", out, "--text", "a b", "--terminal")
    assert result.returncode == 2 and b"no sketch steps" in result.stderr
    result = run_cli("analyze", SAMPLE, "-m", out)
    assert result.returncode == 2 and b"no sketch steps" in result.stderr


@pytest.fixture(scope="module")
def analyzed(run_dir) -> dict:
    """`easyfirst analyze SAMPLE --json` of the run: what the direct count and the Markdown are held to."""
    result = run_cli("analyze", SAMPLE, "-m", run_dir, "--json")
    assert result.returncode == 0, result.stderr.decode()
    return json.loads(result.stdout)


def test_analyze_matches_a_direct_count(run_dir, analyzed):
    tagger = Tagger.load(run_dir)
    sentences = read_conllu(SAMPLE)
    stats = analyze(tagger, [s.words for s in sentences], [s.tags for s in sentences])
    tagged = tagger.tag([s.words for s in sentences], attention=True)
    verbs = sum(
        s.tags[int(t.attention[0].argmax())] == "VERB" for s, t in zip(sentences, tagged, strict=True)
    )
    assert stats["first_focus"].get("VERB", 0) == pytest.approx(verbs / len(sentences))
    assert sum(stats["first_focus"].values()) == pytest.approx(1.0)
    assert stats["evenness"]["share_beta_one"] == 1.0  # csoftmax with N = L
    assert abs(stats["evenness"]["beta_max"] - 1) < 1e-4
    assert sum(row["count"] for row in stats["per_step"]) == sum(len(s.words) for s in sentences)
    assert analyzed["first_focus"] == stats["first_focus"]


def test_analyze_markdown_holds_the_same_numbers(run_dir, analyzed):
    stats = analyzed
    markdown = run_cli("analyze", SAMPLE, "-m", run_dir, "--markdown")
    assert markdown.returncode == 0, markdown.stderr.decode()
    text = markdown.stdout.decode()
    top, share = next(iter(stats["first_focus"].items()))
    assert f"| {top} | {100 * share:.1f}% |" in text
    assert text.count("\n| ") >= len(stats["first_focus"]) + len(stats["per_step"])
    code, _, stderr = easyfirst("analyze", SAMPLE, "-m", run_dir, "--json", "--markdown")  # a refusal
    assert code == 2 and "not both" in stderr


def test_terminal_matrix_reads_without_colours():
    """Piped output has no colours: the glyphs alone must order the attention values."""
    from easyfirst.viz.plot import SHADES

    attention = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.3, 0.7], [0.0, 0.7, 0.3]])
    drop = Drop(["a", "b", "c"], ["X", "Y", "Z"], attention)
    console = Console(no_color=True, width=80, record=True, file=io.StringIO())
    console.print(terminal(drop, ["X", "Y", "Z"]))
    rows = [line for line in console.export_text().splitlines() if line.strip()[:1].isdigit()][1:]
    cells = [[row[5 + 3 * i] for i in range(3)] for row in rows]
    rank = {glyph: k for k, glyph in enumerate(SHADES)}
    assert cells[0][0] == SHADES[-1] and cells[0][1] == SHADES[0]
    assert rank[cells[1][2]] > rank[cells[1][1]] and rank[cells[2][1]] > rank[cells[2][2]]


class _FixedAttention:
    """A stand-in tagger whose attention histories are given: analyze's arithmetic alone is tested."""

    def __init__(self, matrices, steps=None):
        self.matrices = [torch.tensor(m, dtype=torch.float64) for m in matrices]
        self.model = type("Model", (), {"decoder": object(), "steps": steps})()

    def tag(self, words, *, attention, batch_size, extras):
        assert attention is True  # what analyze asks of Tagger.tag
        return [Tagged(list(w), ["X"] * len(w), m) for w, m in zip(words, self.matrices, strict=True)]


def test_sharpness_statistics_by_hand():
    # one sentence of 3 words, N = L = 3 (csoftmax-like: β ends at 1 for every word)
    history = [[0.8, 0.2, 0.0], [0.2, 0.4, 0.4], [0.0, 0.4, 0.6]]
    stats = analyze(_FixedAttention([history]), [["a", "b", "c"]])
    h = lambda *p: -sum(x * math.log(x) for x in p if x > 0)  # noqa: E731
    # first half of 3 steps = the first 2 steps; before step 1 all 3 words have budget, before step 2 all 3
    # (β = 0.8, 0.2, 0), before step 3 only words 2 and 3 (word 1 reached β = 1.0)
    sharp = stats["sharpness"]
    assert sharp["max_weight_first_half"] == pytest.approx((0.8 + 0.4) / 2)
    assert sharp["share_focused_first_half"] == pytest.approx(1 / 2)
    assert sharp["normalized_entropy_first_half"] == pytest.approx(
        (h(0.8, 0.2) / math.log(3) + h(0.2, 0.4, 0.4) / math.log(3)) / 2
    )
    last = stats["per_step"][-1]  # N = L: steps grouped by n/N; step 3 is in the last tenth
    assert last["normalized_entropy"] == pytest.approx(h(0.4, 0.6) / math.log(2))
    assert last["max_weight"] == pytest.approx(0.6) and last["share_focused"] == 1.0


def test_sharpness_with_a_fixed_number_of_steps_and_budget_refreshed():
    # N = 3 fixed on a 2-word sentence: step 3 starts a fresh unit of budget (u = 2 − β)
    history = [[0.5, 0.5], [0.5, 0.5], [1.0, 0.0]]
    stats = analyze(_FixedAttention([history], steps=3), [["a", "b"]])
    assert [row["steps"] for row in stats["per_step"]] == ["1", "2", "3"]
    assert stats["per_step"][0]["normalized_entropy"] == pytest.approx(1.0)  # uniform over both words
    assert stats["per_step"][2]["normalized_entropy"] == pytest.approx(0.0)  # both have budget again
    assert stats["sharpness"]["share_focused_first_half"] == pytest.approx(1.0)  # 0.5 counts as ≥ 0.5


def test_first_focus_against_the_entities_by_hand():
    """Issue #26, item 4: the share of first focus on entity words and its position against the first
    entity, on three hand-made sentences (the third has no entity and is left out)."""
    histories = [
        [[0.1, 0.2, 0.6, 0.1], [0.3, 0.3, 0.1, 0.3], [0.3, 0.3, 0.1, 0.3], [0.3, 0.2, 0.2, 0.3]],
        [[0.7, 0.2, 0.1], [0.2, 0.4, 0.4], [0.1, 0.4, 0.5]],
        [[0.9, 0.1], [0.1, 0.9]],
    ]
    gold = [["O", "B-PER", "I-PER", "O"], ["O", "O", "B-LOC"], ["O", "O"]]
    words = [["w"] * len(tags) for tags in gold]
    stats = analyze(_FixedAttention(histories), words, gold, outside="O")
    # sentence 1: focus word 3 (I-PER), first entity word 2; sentence 2: focus word 1 (O), before word 3
    assert stats["entities"] == pytest.approx(
        {
            "sentences": 2,
            "share_on_entity": 1 / 2,
            "share_before_first_entity": 1 / 2,
            "focus_position": (2 / 3 + 0) / 2,
            "first_entity_position": (1 / 3 + 1) / 2,
            "offset_words": (1 - 2) / 2,
        }
    )
    assert "entities" not in analyze(_FixedAttention(histories), words, gold)


# readability (issue #17, item 6): contrast, labels inside the figure, axis labels, β explained, the key


def luminance(colour: str) -> float:
    """WCAG 2 relative luminance of a #rrggbb colour, computed here from the definition."""
    channels = [int(colour[k : k + 2], 16) / 255 for k in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_with_white(colour: str) -> float:
    return 1.05 / (luminance(colour) + 0.05)


UPOS = "ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split()


def test_every_label_colour_reads_on_white():
    assert contrast_with_white("#ffff00") < 1.1 and contrast_with_white("#000000") == pytest.approx(21)
    colours = {tag_style(t, UPOS)[0] for t in [*UPOS, "B-PER", "I-PER", "O", "OK", "BAD"]}
    for colour in colours | {MISTAKE}:
        assert contrast_with_white(colour) >= 4.5, colour
        assert (luminance(colour) + 0.05) / 0.05 >= 3, colour  # on a black terminal
    assert len({tag_style(t, UPOS)[0] for t in UPOS}) == len(UPOS)  # one colour per UPOS tag


# issue #39, item 4: VERB's red (#d62728) was 5.8 CIEDE2000 units from the mistake red (#e60000)


def lab(colour: str) -> tuple[float, float, float]:
    """CIELAB (D65) of a #rrggbb sRGB colour, from the definitions (IEC 61966-2-1, CIE 15)."""
    channels = [int(colour[k : k + 2], 16) / 255 for k in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    xyz = (
        (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047,
        0.2126729 * r + 0.7151522 * g + 0.0721750 * b,
        (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883,
    )
    fx, fy, fz = (t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29 for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def ciede2000(lab1, lab2) -> float:
    """The CIEDE2000 colour difference (Sharma, Wu and Dalal 2005), without weights (kL = kC = kH = 1)."""
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    mean_c = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(mean_c**7 / (mean_c**7 + 25**7)))
    c1, c2 = math.hypot((1 + g) * a1, b1), math.hypot((1 + g) * a2, b2)
    h1, h2 = (math.degrees(math.atan2(b, (1 + g) * a)) % 360 for a, b in ((a1, b1), (a2, b2)))
    dh = 0.0 if c1 * c2 == 0 else (h2 - h1 + 180) % 360 - 180
    big_dh = 2 * math.sqrt(c1 * c2) * math.sin(math.radians(dh / 2))
    mean_l, mean_cp = (l1 + l2) / 2, (c1 + c2) / 2
    if c1 * c2 == 0:
        mean_h = h1 + h2
    elif abs(h1 - h2) <= 180:
        mean_h = (h1 + h2) / 2
    else:
        mean_h = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    t = (
        1
        - 0.17 * math.cos(math.radians(mean_h - 30))
        + 0.24 * math.cos(math.radians(2 * mean_h))
        + 0.32 * math.cos(math.radians(3 * mean_h + 6))
        - 0.20 * math.cos(math.radians(4 * mean_h - 63))
    )
    rotation = 30 * math.exp(-(((mean_h - 275) / 25) ** 2))
    rc = 2 * math.sqrt(mean_cp**7 / (mean_cp**7 + 25**7))
    sl = 1 + 0.015 * (mean_l - 50) ** 2 / math.sqrt(20 + (mean_l - 50) ** 2)
    sc, sh = 1 + 0.045 * mean_cp, 1 + 0.015 * mean_cp * t
    rt = -math.sin(math.radians(2 * rotation)) * rc
    dl, dc, dh_s = (l2 - l1) / sl, (c2 - c1) / sc, big_dh / sh
    return math.sqrt(dl**2 + dc**2 + dh_s**2 + rt * dc * dh_s)


@pytest.mark.parametrize(
    "first, second, expected",  # pairs 1, 7, 17, 18, 19, 20 and 25 of Sharma et al.'s test data
    [
        ((50, 2.6772, -79.7751), (50, 0, -82.7485), 2.0425),
        ((50, 0, 0), (50, -1, 2), 2.3669),
        ((50, 2.5, 0), (73, 25, -18), 27.1492),
        ((50, 2.5, 0), (61, -5, 29), 22.8977),
        ((50, 2.5, 0), (56, -27, -3), 31.9030),
        ((50, 2.5, 0), (58, 24, 15), 19.4535),
        ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
    ],
)
def test_ciede2000_matches_the_published_test_data(first, second, expected):
    assert ciede2000(first, second) == pytest.approx(expected, abs=1e-4)
    assert lab("#ffffff") == pytest.approx((100, 0, 0), abs=0.01)


def test_the_mistake_colour_is_far_from_every_tag_colour():
    """Every colour tag_style can give (the whole palette, through a 40-tag set, and BIO's and QE's)
    is at least 20 CIEDE2000 units from the mistake red, so that a red label reads as a mistake only."""
    many = [f"T{k:02d}" for k in range(40)]
    tags = {"B-PER": [], "I-PER": [], "E-LOC": [], "S-ORG": [], "O": [], "OK": [], "BAD": []}
    colours = {tag_style(t, many)[0] for t in many} | {tag_style(t, ts)[0] for t, ts in tags.items()}
    colours |= {tag_style(t, UPOS)[0] for t in UPOS}
    assert MISTAKE not in colours
    nearest = min(colours, key=lambda c: ciede2000(lab(MISTAKE), lab(c)))
    assert ciede2000(lab(MISTAKE), lab(nearest)) >= 20, nearest
    assert ciede2000(lab(MISTAKE), lab(tag_style("VERB", UPOS)[0])) >= 20  # the case


def test_the_words_caption_explains_the_mark_only_where_there_is_gold():
    no_gold, same, wrong = drop_of(6), drop_of(6), drop_of(6, gold=True)
    same.gold = list(same.predicted)
    captions = [figure([d], UPOS).axes[1].get_xlabel() for d in (no_gold, same, wrong)]
    assert "✗" not in captions[0] and "gold" not in captions[0]
    assert "✗" not in captions[1] and "same as the gold tag" in captions[1]
    assert "✗: the gold tag, where it differs" in captions[2]


def drop_of(length: int, steps: int | None = None, gold=False) -> Drop:
    words = ["Microsoft", *[f"w{i}" for i in range(1, length - 1)], "."]
    steps = length if steps is None else steps
    attention = torch.full((steps, length), 1.0 / length)  # rows sum to 1; β = steps / length
    predicted = ["PROPN"] + ["NOUN"] * (length - 2) + ["PUNCT"]
    return Drop(words, predicted, attention, ["X"] + predicted[1:] if gold else None, "title")


@pytest.mark.parametrize("length", [6, 12, 45])
def test_every_label_is_inside_the_figure(length):
    """The issue: 'Microsoft' drawn as 'licrosoft', cut off at the bottom edge."""
    fig = figure([drop_of(length, gold=True)], UPOS)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    texts = [t for ax in fig.axes for t in [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.title,
             ax._left_title, ax.xaxis.label, ax.yaxis.label, *ax.texts] if t.get_text()]  # fmt: skip
    assert any(t.get_text().startswith("Microsoft") for t in texts)
    for text in texts:
        extent = text.get_window_extent(renderer)
        assert extent.x0 >= box.x0 - 0.5 and extent.x1 <= box.x1 + 0.5, text.get_text()
        assert extent.y0 >= box.y0 - 0.5 and extent.y1 <= box.y1 + 0.5, text.get_text()


def test_labels_keep_their_size_on_long_sentences():
    small, large = figure([drop_of(10)], UPOS), figure([drop_of(45)], UPOS)
    for fig in (small, large):
        assert min(t.get_fontsize() for t in fig.axes[1].get_xticklabels()) >= 9
    assert large.get_size_inches()[0] >= 45 * 0.3  # the figure grows with the words instead
    # the word labels do not overlap each other
    large.canvas.draw()
    renderer = large.canvas.get_renderer()
    extents = [t.get_window_extent(renderer) for t in large.axes[1].get_xticklabels()]
    assert all(a.x1 <= b.x0 + 0.5 for a, b in zip(extents, extents[1:], strict=False))


def test_axes_and_colour_bar_say_what_they_show():
    fig = figure([drop_of(8)], UPOS)
    heat, beta, bar = fig.axes[0], fig.axes[1], fig.axes[2]
    assert "sketch step" in heat.get_ylabel()
    assert "words" in beta.get_xlabel()
    assert "attention" in bar.get_ylabel()


def test_the_beta_panel_says_why_it_is_flat():
    flat = figure([drop_of(8)], UPOS).axes[1]  # N = L: β = 1 for every word
    assert "1.00 for every word" in flat._left_title.get_text().replace("\n", " ")
    assert [t.get_text() for t in flat.texts] == ["1.00"] * 8
    partial = figure([drop_of(8, steps=2)], UPOS).axes[1]  # β = 2/8 everywhere
    assert "(from 0.25 to 0.25)" in partial._left_title.get_text().replace("\n", " ")


def test_terminal_has_a_key_to_its_shades():
    from easyfirst.viz.plot import SHADES, shade

    attention = torch.tensor([[0.01, 0.2, 0.79], [0.99, 0.005, 0.005]])
    console = Console(no_color=True, width=200, record=True, file=io.StringIO())
    console.print(terminal(Drop(["a", "b", "c"], ["X"] * 3, attention), ["X"]))
    text = console.export_text()
    key = next(line for line in text.splitlines() if line.startswith("key:"))
    # each glyph stands for √α in [k/6, (k+1)/6): α from (k/6)² to ((k+1)/6)², written in the key
    assert "▒▒ .25–.44" in key and "██ ≥.69" in key and "blank .00–.03" in key
    for value, glyph in [(0.01, " "), (0.2, "░"), (0.3, "▒"), (0.5, "▓"), (0.79, "█")]:
        assert shade(value)[0] == glyph
    assert len(SHADES) == 6
    beta = next(line for line in text.splitlines() if line.strip().startswith("β"))
    assert beta.split()[1:] == ["██", "░░", "██"]  # β = 1.0, 0.205, 0.795
