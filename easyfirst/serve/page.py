"""The page at ``GET /``: a text box, the tagged sentences, and the raindrop of the sentence picked.

Self-contained like ``easyfirst plot -o FILE.html``: inline style and script, nothing fetched from
another host; the raindrop is the interactive component of easyfirst.viz.web
(``window.easyfirstRaindrop.render(element, sentence)`` on a sentence of the ``POST /tag`` answer).
"""

from __future__ import annotations

import html

from easyfirst.viz.web.component import POLICY, _json_for_script, asset

# the page's own script may also call POST /tag on the server that sent it, and nothing else
PAGE_POLICY = POLICY + "; connect-src 'self'"

STYLE = """
body { font: 16px/1.45 system-ui, sans-serif; color: #1a1a1a; background: #fff; margin: 0 auto;
       max-width: 72rem; padding: 1rem; }
h1 { font-size: 1.4rem; margin: 0 0 .25rem; }
.about { color: #444; margin: 0 0 1rem; }
label { display: block; font-weight: 600; margin: .5rem 0 .25rem; }
textarea, input[type=text] { width: 100%; box-sizing: border-box; font: inherit; padding: .4rem;
       border: 1px solid #666; border-radius: 4px; }
button { font: inherit; margin: .5rem 0; padding: .35rem 1rem; border: 1px solid #1d4f91;
       background: #1d4f91; color: #fff; border-radius: 4px; cursor: pointer; }
#error { color: #a00000; font-weight: 600; min-height: 1.4em; }
#sentences { list-style: none; padding: 0; }
#sentences li { margin: .25rem 0; }
#sentences button.sentence { background: #fff; color: #1a1a1a; border: 1px solid #999; margin: 0;
       text-align: left; width: 100%; display: flex; flex-wrap: wrap; gap: .15rem .6rem; }
#sentences button.sentence[aria-pressed=true] { border: 2px solid #1d4f91; background: #eef3fa; }
.token { display: inline-flex; flex-direction: column; align-items: center; }
.token .tag { font-size: .75rem; color: #444; font-family: ui-monospace, monospace; }
#raindrop { margin-top: 1rem; overflow-x: auto; }
"""

SCRIPT = """
(function () {
  const about = JSON.parse(document.getElementById('about').textContent);
  const form = document.getElementById('form');
  const list = document.getElementById('sentences');
  const error = document.getElementById('error');
  const drop = document.getElementById('raindrop');
  let answer = null;

  function pick(k) {
    list.querySelectorAll('button.sentence').forEach(function (b, i) {
      b.setAttribute('aria-pressed', i === k ? 'true' : 'false');
    });
    drop.textContent = '';
    const sentence = answer.sentences[k];
    if (!sentence.attention || sentence.attention.length === 0) {
      drop.textContent = 'This model has no sketch steps: there is no attention to show.';
    } else {
      const view = Object.assign({model: about.model, task: about.task, colors: about.colors}, sentence);
      window.easyfirstRaindrop.render(drop, view);
    }
  }

  function show(data) {
    answer = data;
    list.textContent = '';
    data.sentences.forEach(function (sentence, k) {
      const item = document.createElement('li');
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'sentence';
      button.setAttribute('aria-pressed', 'false');
      button.dataset.sentence = String(k);
      sentence.tokens.forEach(function (token, i) {
        const span = document.createElement('span');
        span.className = 'token';
        const word = document.createElement('span');
        word.textContent = token;
        const tag = document.createElement('span');
        tag.className = 'tag';
        tag.textContent = sentence.tags[i];
        span.append(word, tag);
        button.append(span);
      });
      button.addEventListener('click', function () { pick(k); });
      item.append(button);
      list.append(item);
    });
    if (data.sentences.length) { pick(0); }
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    error.textContent = '';
    const body = {attention: true};
    form.querySelectorAll('[data-key]').forEach(function (field) { body[field.dataset.key] = field.value; });
    fetch('tag', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)})
      .then(function (response) {
        return response.json().then(function (data) {
          if (!response.ok) { throw new Error(data.error || response.statusText); }
          show(data);
        });
      })
      .catch(function (e) { error.textContent = e.message; });
  });
})();
"""

TEXT_FIELDS = (
    '<label for="text">Text</label><textarea id="text" data-key="text" rows="4">{example}</textarea>'
)
PAIR_FIELDS = "".join(
    f'<label for="{key}">{label}</label><input type="text" id="{key}" data-key="{key}">'
    for key, label in (
        ("src", "Source sentence (tokens separated by spaces)"),
        ("mt", "Machine translation (tokens separated by spaces)"),
        ("alignments", "Alignments (Pharaoh i-j pairs, source index first)"),
    )
)
EXAMPLE = "The easy words are tagged first. Then the decoder looks at the hard ones."


def page(about: dict, pairs: bool) -> str:
    """The page for a model described by ``about`` (model, task, and the tag ``colors`` of
    easyfirst.viz.web.tag_colors); ``pairs``: a QE model's three fields instead of a text box."""
    fields = PAIR_FIELDS if pairs else TEXT_FIELDS.format(example=html.escape(EXAMPLE))
    title = html.escape(f"easyfirst: {about['model']}")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{PAGE_POLICY}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{STYLE}{asset("raindrop.css")}</style>
</head>
<body>
<h1>{title}</h1>
<p class="about">A {html.escape(about["task"].upper())} model. Tag a text, then pick a sentence to see where the
decoder looked at each sketch step.</p>
<form id="form">{fields}<button type="submit">Tag</button></form>
<div id="error" role="alert"></div>
<ul id="sentences"></ul>
<div id="raindrop"></div>
<script type="application/json" id="about">{_json_for_script(about)}</script>
<script>{asset("raindrop.js")}</script>
<script>{SCRIPT}</script>
</body>
</html>
"""
