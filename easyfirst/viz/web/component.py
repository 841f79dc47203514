"""The interactive raindrop as HTML: the data one view shows, a fragment for a notebook or a page, and a
whole self-contained page (``easyfirst plot -o FILE.html``).

The component itself is ``raindrop.js`` and ``raindrop.css`` beside this module (package resources).
Everything is inlined: a fragment or page fetches nothing, so it works opened from disk with no network.
"""

from __future__ import annotations

import html
import json
import uuid
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources

# a page may run only its own inline script and style, and load nothing from anywhere
POLICY = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"


@cache
def asset(name: str) -> str:
    """The text of ``raindrop.js`` or ``raindrop.css``."""
    return (resources.files("easyfirst.viz.web") / name).read_text(encoding="utf-8")


def tag_colors(tagset: Sequence[str]) -> dict[str, dict]:
    """``{tag: {"color": "#rrggbb", "bold": bool}}`` for every tag of ``tagset``: the colours of the PNG
    (easyfirst.viz.plot.tag_style), so that the page and the figure agree."""
    from easyfirst.viz.plot import tag_style

    colors = {}
    for tag in tagset:
        color, bold = tag_style(tag, tagset)
        colors[tag] = {"color": color, "bold": bold}
    return colors


def raindrop_data(
    tokens: Sequence[str],
    tags: Sequence[str],
    attention,
    *,
    gold: Sequence[str] | None = None,
    model: str | None = None,
    task: str | None = None,
    title: str | None = None,
    tagset: Sequence[str] | None = None,
) -> dict:
    """What one view of the component shows, as JSON-able data: ``tokens``, ``tags``, ``attention`` (one
    row of floats per sketch step, one column per word; a tensor or nested lists), and where given
    ``gold``, ``model``, ``task``, ``title`` and the tag ``colors`` (for ``tagset``, default the tags and
    gold tags present; the model's full tag set keeps the colours of its other figures), and the
    ``mistake`` colour of a label whose tag differs from gold (easyfirst.viz.plot.MISTAKE: red, which no
    tag has)."""
    from easyfirst.viz.plot import MISTAKE

    rows = attention.tolist() if hasattr(attention, "tolist") else [list(row) for row in attention]
    length = len(tokens)
    if len(tags) != length or (gold is not None and len(gold) != length):
        raise ValueError(
            f"raindrop_data: {length} tokens but {len(tags)} tags"
            + (f" and {len(gold)} gold tags" if gold is not None else "")
        )
    for n, row in enumerate(rows):
        if len(row) != length:
            raise ValueError(f"raindrop_data: attention row {n} has {len(row)} values for {length} tokens")
    data = {
        "tokens": list(tokens),
        "tags": list(tags),
        "attention": [[float(a) for a in row] for row in rows],
    }
    if gold is not None:
        data["gold"] = list(gold)
    for key, value in (("model", model), ("task", task), ("title", title)):
        if value is not None:
            data[key] = value
    data["colors"] = tag_colors(sorted(tagset if tagset is not None else {*tags, *(gold or [])}))
    data["mistake"] = MISTAKE
    return data


def _json_for_script(value) -> str:
    """JSON that cannot end the ``<script>`` element it sits in."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def fragment(views: Sequence[Mapping] | Mapping) -> str:
    """A self-contained ``<div>`` drawing ``views`` (raindrop_data dicts) side by side: its own style and
    script inline, a unique id, and nothing global beyond ``window.easyfirstRaindrop`` (defined once
    however many fragments a page holds)."""
    views = [views] if isinstance(views, Mapping) else list(views)
    ident = f"efr-{uuid.uuid4().hex[:12]}"
    boot = (
        "(function(){var id=" + json.dumps(ident) + ";"
        "var data=JSON.parse(document.getElementById(id+'-data').textContent);"
        "window.easyfirstRaindrop.render(document.getElementById(id+'-mount'),data);})();"
    )
    return (
        f'<div class="efr-fragment" id="{ident}">'
        f"<style>{asset('raindrop.css')}</style>"
        f'<div class="efr" id="{ident}-mount">'
        # shown where scripts do not run (an untrusted notebook, GitHub's notebook viewer); render()
        # replaces it
        '<p class="efr-fallback">This raindrop is drawn by JavaScript, which did not run here: in Jupyter, '
        "trust the notebook or run the cell again; or save it as a page with .save('raindrop.html')."
        "</p></div>"
        f'<script type="application/json" id="{ident}-data">{_json_for_script(views)}</script>'
        f"<script>{asset('raindrop.js')}</script>"
        f"<script>{boot}</script>"
        "</div>"
    )


def page(views: Sequence[Mapping] | Mapping, title: str = "easyfirst raindrop") -> str:
    """A whole self-contained HTML document with the component (``easyfirst plot -o FILE.html``)."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n"
        "<style>body{margin:16px;background:#fff;color:#1a1a1a;"
        "font-family:system-ui,sans-serif}h1{font-size:18px;margin:0 0 10px}</style>\n"
        "</head>\n<body>\n"
        f"<h1>{html.escape(title)}</h1>\n"
        f"{fragment(views)}\n"
        "</body>\n</html>\n"
    )
