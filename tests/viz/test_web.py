"""The interactive raindrop (easyfirst.viz.web) in a real browser: ``easyfirst plot -o FILE.html`` and the
notebook fragment of ``Tagger.raindrop``, read from the DOM headless Chromium renders (tests/browser.py).

The expected values come from ``Tagger.tag(..., attention=True)`` and sums over its tensor, never
from the component."""

from __future__ import annotations

import pytest

from browser import chromium
from conftest import SAMPLE, run_cli
from easyfirst import Tagger
from easyfirst.data.conllu import read_conllu
from easyfirst.viz.plot import MISTAKE
from easyfirst.viz.web import page as page_html
from easyfirst.viz.web import raindrop_data

pytestmark = pytest.mark.browser

TEXT = "The old ferry crossed the river at dawn , and nobody on board said a word ."
CELLS = """root => Array.from(root.querySelectorAll('.efr-cell')).map(
    c => [Number(c.dataset.step), Number(c.dataset.word), Number(c.dataset.alpha)])"""


@pytest.fixture(scope="module")
def browser():
    with chromium() as context:
        yield context


@pytest.fixture(scope="module")
def tagger():
    return Tagger.load()


@pytest.fixture
def page(browser):
    opened = browser.new_page()
    errors = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    opened.close()
    assert not errors, errors  # no script error on any page
    assert not browser.refused, browser.refused  # nothing fetched from another host


def assert_cells_equal(cells, attention):
    steps, length = attention.shape
    assert sorted((n, i) for n, i, _ in cells) == [(n, i) for n in range(steps) for i in range(length)]
    for n, i, alpha in cells:
        assert abs(alpha - float(attention[n, i])) <= 1e-3, (n, i, alpha)


def test_plot_html_file_renders_one_cell_per_step_and_word_with_the_apis_alpha(tagger, page, tmp_path):
    out = tmp_path / "r.html"
    result = run_cli("plot", "--text", TEXT, "-o", out)
    assert result.returncode == 0, result.stderr.decode()
    page.goto(out.as_uri())
    words = TEXT.split()
    attention = tagger.tag([words], attention=True)[0].attention
    assert attention.shape == (len(words), len(words))  # the bundled model: N = L
    assert_cells_equal(page.locator(".efr").evaluate(CELLS), attention)
    labels = page.locator(".efr-word .efr-token").all_text_contents()
    assert labels == words


def test_notebook_fragment_has_the_same_cells_and_two_fragments_do_not_clash(tagger, page):
    short = ["She", "reads", "a", "book", "."]
    first, second = tagger.raindrop(TEXT), tagger.raindrop(short)
    html = first._repr_html_() + "<p>between</p>" + second._repr_html_()
    page.set_content(f"<!DOCTYPE html><html><body>{html}</body></html>")
    roots = page.locator(".efr-fragment")
    assert roots.count() == 2
    assert page.locator(".efr-fallback").count() == 0  # the words for a notebook whose scripts do not run
    assert len(set(roots.evaluate_all("nodes => nodes.map(n => n.id)"))) == 2
    for root, words in zip(roots.all(), (TEXT.split(), short), strict=True):
        attention = tagger.tag([words], attention=True)[0].attention
        assert_cells_equal(root.evaluate(CELLS), attention)
    # each fragment's controls drive its own grid only
    roots.nth(1).locator(".efr-first").click()
    assert roots.nth(1).locator(".efr-cell.efr-future").count() == 4 * len(short)
    assert roots.nth(0).locator(".efr-cell.efr-future").count() == 0
    names = page.evaluate(
        "Object.keys(window).filter(k => k.toLowerCase().includes('efr') || k.includes('aindrop'))"
    )
    assert names == ["easyfirstRaindrop"]


def expected_reading(word, tag, step, alpha, beta):
    def show(value):
        return (
            "0"
            if value == 0
            else (f"{value:.2e}".replace("e-0", "e-") if abs(value) < 1e-3 else f"{value:.3f}")
        )

    return word, tag, f"step {step}", f"α = {show(alpha)}", f"β up to step {step} = {show(beta)}"


def test_pointing_at_or_focusing_a_cell_shows_word_tag_gold_step_alpha_and_beta(tagger, page):
    sentence = read_conllu(SAMPLE)[2]
    raindrop = tagger.raindrop(sentence.words, gold=sentence.tags)
    page.set_content(raindrop.html())
    tagged = tagger.tag([sentence.words], attention=True)[0]
    tags, attention = tagged.tags, tagged.attention
    n, i = 3, 2
    assert "α =" not in page.locator(".efr-readout").text_content()  # nothing pointed at yet
    page.locator(f'.efr-cell[data-step="{n}"][data-word="{i}"]').hover()
    readout = page.locator(".efr-readout")
    assert readout.is_visible()
    text = readout.text_content()
    beta = float(attention[: n + 1, i].sum())
    for part in expected_reading(sentence.words[i], tags[i], n + 1, float(attention[n, i]), beta):
        assert part in text, (part, text)
    assert ("gold too" in text) == (sentence.tags[i] == tags[i])
    # the keyboard: Tab into the grid (step 1, word 1), then two steps down and one word right
    page.locator(".efr-last").focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert (
        page.evaluate("document.activeElement.dataset.step + ',' + document.activeElement.dataset.word")
        == "0,0"
    )
    for key in ("ArrowDown", "ArrowDown", "ArrowRight"):
        page.keyboard.press(key)
    text = readout.text_content()
    beta = float(attention[:3, 1].sum())
    for part in expected_reading(sentence.words[1], tags[1], 3, float(attention[2, 1]), beta):
        assert part in text, (part, text)


def test_the_step_control_replays_the_decoder_and_beta_follows(tagger, page):
    words = TEXT.split()
    page.set_content(tagger.raindrop(words).html())
    attention = tagger.tag([words], attention=True)[0].attention
    steps = attention.shape[0]

    def shown():
        future = page.locator(".efr-cell.efr-future").evaluate_all(
            "cs => cs.map(c => Number(c.dataset.step))"
        )
        betas = page.locator(".efr-beta").evaluate_all("cs => cs.map(c => Number(c.dataset.beta))")
        return sorted(set(future)), betas

    future, betas = shown()
    assert future == [] and all(abs(b - 1.0) < 1e-3 for b in betas)  # csoftmax, N = L: every budget spent
    page.locator(".efr-first").click()
    future, betas = shown()
    assert future == list(range(1, steps))
    assert all(abs(b - float(a)) < 1e-5 for b, a in zip(betas, attention[0], strict=True))
    page.locator(".efr-next").click()
    page.locator(".efr-next").click()
    future, betas = shown()
    assert future == list(range(3, steps))
    assert all(abs(b - float(a)) < 1e-5 for b, a in zip(betas, attention[:3].sum(0), strict=True))
    assert page.locator(".efr-shown").text_content() == f"showing steps 1–3 of {steps}"


def luminance(color: str) -> float:
    red, green, blue = (
        float(part) / 255 for part in color[color.index("(") + 1 : color.index(")")].split(",")[:3]
    )
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (red, green, blue)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(foreground: str, background: str) -> float:
    light, dark = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


# every element with text of its own: its colour and the first opaque background behind it
TEXTS = """root => Array.from(root.querySelectorAll('*')).filter(e =>
    Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim()) && e.getClientRects().length
  ).map(e => {
    let back = e;
    while (back && ['rgba(0, 0, 0, 0)', 'transparent'].includes(getComputedStyle(back).backgroundColor))
      back = back.parentElement;
    return [e.textContent.trim().slice(0, 20), getComputedStyle(e).color,
            back ? getComputedStyle(back).backgroundColor : 'rgb(255, 255, 255)'];
  })"""


def test_every_text_contrasts_at_least_4_5_to_1_at_every_step(tagger, page):
    sentence = read_conllu(SAMPLE)[2]
    gold = [*sentence.tags[:-1], "X" if sentence.tags[-1] != "X" else "NOUN"]  # one mistake: the red label
    seen = 0

    def check():
        nonlocal seen
        for text, color, background in page.locator("body").evaluate(TEXTS):
            assert contrast(color, background) >= 4.5, (text, color, background)
            seen += 1

    page.set_content(tagger.raindrop(sentence.words, gold=gold).html())
    page.locator('.efr-cell[data-step="1"][data-word="1"]').hover()  # the read-out too
    for control in (None, ".efr-first", ".efr-next", ".efr-next"):
        if control:
            page.locator(control).click()
        check()
    assert seen > 4 * (2 * len(sentence.words))  # the labels and the β values were among them
    # β written on every shade of the colour scale: one step whose attention runs from 0 to 1
    sweep = [k / 20 for k in range(21)]
    page.set_content(page_html(raindrop_data([f"w{k}" for k in range(21)], ["NOUN"] * 21, [sweep])))
    assert page.locator(".efr-beta").evaluate_all("cs => cs.map(c => Number(c.dataset.beta))") == sweep
    check()


def hundred_words(tagger) -> list[str]:
    words = [w for s in read_conllu(SAMPLE) for w in s.words][:100]
    assert len(words) == 100
    return words


BOXES = """root => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom]; };
  const scroll = root.querySelector('.efr-scroll');
  return {grid: box(root.querySelector('.efr-grid')), cell: box(root.querySelector('.efr-cell')),
          words: Array.from(root.querySelectorAll('.efr-word')).map(box),
          scroll: [scroll.scrollWidth, scroll.clientWidth], page: document.documentElement.scrollWidth};
}"""


@pytest.mark.parametrize("width", [800, 1600])
def test_a_hundred_words_are_not_clipped_and_fit_800_px_by_scrolling(tagger, page, width):
    words = hundred_words(tagger)
    page.set_viewport_size({"width": width, "height": 900})
    page.set_content(tagger.raindrop(words).html())
    layout = page.locator(".efr").evaluate(BOXES)
    assert layout["page"] <= width  # the page itself never scrolls sideways
    grid_left, grid_right, grid_top, grid_bottom = layout["grid"]
    column = layout["cell"][1] - layout["cell"][0]
    assert len(layout["words"]) == 100
    for k, (left, right, top, bottom) in enumerate(layout["words"]):
        assert right - left <= column + 0.5, k  # a label stays in its column
        assert (
            grid_left <= left and right <= grid_right and grid_top <= top and bottom <= grid_bottom + 0.5
        ), k
    scroll_width, visible = layout["scroll"]
    assert scroll_width >= grid_right - grid_left  # all of the grid can be scrolled to
    if width == 1600:
        assert scroll_width <= visible  # a wide window shows all 100 words at once
    # the last word's cell scrolled into view: its read-out is inside the window
    page.locator('.efr-cell[data-step="99"][data-word="99"]').hover()
    left, right = page.locator(".efr-readout").evaluate(
        "t => [t.getBoundingClientRect().left, t.getBoundingClientRect().right]"
    )
    assert 0 <= left and right <= width


def test_no_beta_leaves_out_the_beta_row_only(tagger, page, tmp_path):
    out = tmp_path / "r.html"
    words = ["She", "reads", "a", "book", "."]
    tagger.raindrop(words).save(out, show_beta=False)
    page.goto(out.as_uri())
    assert page.locator(".efr-cell").count() == len(words) ** 2
    assert page.locator(".efr-beta, .efr-beta-label").count() == 0
    assert "β row" not in page.locator(".efr-hint").text_content()
    page.locator(".efr-first").click()  # the step control works without it
    assert page.locator(".efr-cell.efr-future").count() == (len(words) - 1) * len(words)


# issue #39, item 5: cells sized to the window, text of 11 px at least, the read-out never over the grid

LAYOUT = """root => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom]; };
  const own = e => Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
  const texts = Array.from(root.querySelectorAll('*')).filter(e => own(e) && e.getClientRects().length);
  const beta = Array.from(root.querySelectorAll('.efr-beta')).filter(c => c.textContent).map(c => {
    const range = document.createRange(); range.selectNodeContents(c);
    return {text: box(range), cell: box(c), fits: c.scrollWidth <= c.clientWidth};
  });
  return {fonts: texts.map(e => [e.textContent.trim().slice(0, 20), parseFloat(getComputedStyle(e).fontSize)]),
          cell: box(root.querySelector('.efr-cell')), grid: box(root.querySelector('.efr-grid')),
          scroll: box(root.querySelector('.efr-scroll')), readout: box(root.querySelector('.efr-readout')),
          beta: beta, window: window.innerWidth};
}"""


def overlap(a, b) -> bool:
    """Whether two [left, right, top, bottom] boxes share any area."""
    return min(a[1], b[1]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[2], b[2])


def sample_words(length: int) -> tuple[list[str], list[str]]:
    sentences = read_conllu(SAMPLE)
    words = [w for s in sentences for w in s.words][:length]
    gold = [t for s in sentences for t in s.tags][:length]
    assert len(words) == length
    return words, gold


@pytest.mark.parametrize("width", [800, 1200])
@pytest.mark.parametrize("length", [8, 30, 100])
def test_cells_fill_the_window_text_is_11_px_and_the_read_out_is_beside_or_below(tagger, page, length, width):
    words, gold = sample_words(length)
    page.set_viewport_size({"width": width, "height": 800})
    page.set_content(tagger.raindrop(words, gold=gold).html())
    corners = [(0, 0), (length // 2, length // 2), (length - 1, length - 1), (0, length - 1)]
    for n, i in corners:  # steps and words from 0; N = L
        page.locator(f'.efr-cell[data-step="{n}"][data-word="{i}"]').hover()
        layout = page.locator(".efr").evaluate(LAYOUT)
        shown = layout["scroll"][:2] + layout["grid"][2:]  # the part of the grid the page shows
        assert not overlap(layout["readout"], shown), (n, i, layout["readout"], shown)
        assert 0 <= layout["readout"][0] and layout["readout"][1] <= width
    for text, size in layout["fonts"]:
        assert size >= 11, (text, size)
    column = layout["cell"][1] - layout["cell"][0]
    grid = layout["grid"][1] - layout["grid"][0]
    assert 14 <= column <= 56
    if length * 14 + 40 <= width - 32:  # the words fit the window at the smallest column: no scrolling
        assert layout["grid"][1] <= width
        assert grid >= min(width - 32, length * 56) / 2  # and take the space there is (8 words: a third)
    for k, beta in enumerate(layout["beta"]):  # β's values inside their cells, apart from each other
        assert beta["fits"] and beta["cell"][0] <= beta["text"][0] and beta["text"][1] <= beta["cell"][1], k
        if k:
            assert beta["text"][0] - layout["beta"][k - 1]["text"][1] >= 4, k
    if length == 8:
        assert len(layout["beta"]) == 8  # written in every cell of a short sentence
        assert grid >= width / 3  # the 176 px grid in a 1200 px window


def test_mistakes_alone_are_red_and_the_legend_explains_the_mark_only_with_gold(tagger, page, tmp_path):
    words, _ = sample_words(30)
    tags = tagger.tag([words])[0].tags
    wrong = [2, 5]  # gold differs there: the two labels in red
    gold = [("X" if tag != "X" else "NOUN") if i in wrong else tag for i, tag in enumerate(tags)]
    assert any(tags[i] == gold[i] == "VERB" for i in range(30))  # a right VERB: not red

    def labels():
        return page.locator(".efr-word").evaluate_all(
            "ws => ws.map(w => [w.textContent, getComputedStyle(w).color])"
        )

    red = "rgb({}, {}, {})".format(*(int(MISTAKE[k : k + 2], 16) for k in (1, 3, 5)))
    page.set_content(tagger.raindrop(words, gold=gold).html())
    for i, (text, color) in enumerate(labels()):
        assert (color == red) == (i in wrong) == ("✗" in text), (i, text, color)
    legend = page.locator(".efr-legend").text_content()
    assert "✗: the gold tag, where the prediction differs" in legend
    assert page.locator(".efr-legend-tag", has_text="VERB").first.evaluate("e => e.style.color") != red
    out = tmp_path / "text.html"  # --text: no gold, so nothing to mark and no ✗ in the legend
    result = run_cli("plot", "--text", " ".join(words), "--pretokenized", "-o", out)
    assert result.returncode == 0, result.stderr.decode()
    page.goto(out.as_uri())
    assert all(color != red and "✗" not in text for text, color in labels())
    assert (
        "✗" not in page.locator(".efr").text_content()
        and "gold" not in page.locator(".efr-legend").text_content()
    )
    page.set_content(tagger.raindrop(words, gold=tags).html())  # gold that agrees everywhere
    assert "✗" not in page.locator(".efr-legend").text_content()


def test_the_cells_follow_the_window_when_it_is_resized(tagger, page):
    words, _ = sample_words(30)
    page.set_viewport_size({"width": 800, "height": 800})
    page.set_content(tagger.raindrop(words).html())
    column = "() => document.querySelector('.efr-cell').getBoundingClientRect().width"
    narrow = page.evaluate(column)
    page.set_viewport_size({"width": 1400, "height": 800})
    page.wait_for_function(f"({column})() > {narrow}")  # the grid is laid out again, wider
    page.locator('.efr-cell[data-step="0"][data-word="29"]').hover()
    layout = page.locator(".efr").evaluate(LAYOUT)
    assert not overlap(layout["readout"], layout["grid"]) and layout["grid"][1] <= 1400
