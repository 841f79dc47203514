/* easyfirst's interactive raindrop: the attention αⁿ of each sketch step n over the words (the paper's
 * Figs. 2-4), one cell per (step, word), with a step control that replays the decoder and the
 * cumulative attention β = Σₙ αⁿ up to the shown step.
 *
 * window.easyfirstRaindrop.render(element, data_or_list_of_data) draws one view per data object, side by
 * side. A data object has tokens, tags and attention (one row per step, one column per word); optional:
 * gold (gold tags), model, task, title, colors ({tag: {color, bold}}; easyfirst.web.tag_colors), and
 * beta: false to leave out the β row.
 * No network, no globals beyond window.easyfirstRaindrop; loading this file twice changes nothing.
 */
(function () {
  "use strict";
  if (window.easyfirstRaindrop) return;

  // matplotlib's viridis at 33 evenly spaced points (low attention dark blue, high yellow)
  var VIRIDIS = ["#440154", "#470d60", "#48186a", "#482374", "#472d7b", "#453781", "#424086", "#3e4989",
    "#3b528b", "#375b8d", "#33638d", "#2f6b8e", "#2c728e", "#297a8e", "#26828e", "#23898e", "#21918c",
    "#1f988b", "#1fa088", "#22a785", "#28ae80", "#32b67a", "#3fbc73", "#4ec36b", "#5ec962", "#70cf57",
    "#84d44b", "#98d83e", "#addc30", "#c2df23", "#d8e219", "#ece51b", "#fde725"];
  var WRONG = "#e60000";
  var NEUTRAL = "#333333";
  var ANNOTATE_BETA_UP_TO = 30; // words: β's values are written in its cells up to this length

  function rgb(hex) {
    return [1, 3, 5].map(function (i) { return parseInt(hex.slice(i, i + 2), 16); });
  }

  function viridisRGB(value) {
    var x = Math.max(0, Math.min(1, value)) * (VIRIDIS.length - 1);
    var i = Math.min(VIRIDIS.length - 2, Math.floor(x));
    var a = rgb(VIRIDIS[i]), b = rgb(VIRIDIS[i + 1]), t = x - i;
    return a.map(function (c, k) { return Math.round(c + t * (b[k] - c)); });
  }

  function viridis(value) {
    return "rgb(" + viridisRGB(value).join(",") + ")";
  }

  // black or white text on a viridis colour, whichever contrasts more (WCAG 2 relative luminance; the
  // better of the two is at least 4.58:1 on any background)
  function textOn(value) {
    var lum = viridisRGB(value).map(function (c) {
      c /= 255;
      return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    });
    var y = 0.2126 * lum[0] + 0.7152 * lum[1] + 0.0722 * lum[2];
    return (y + 0.05) / 0.05 >= 1.05 / (y + 0.05) ? "#000" : "#fff";
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // α and β as read in a tooltip: three decimals, and small non-zero values in exponent form (the exact
  // value is the cell's data-alpha)
  function format(value) {
    if (value === 0) return "0";
    return Math.abs(value) < 0.001 ? value.toExponential(2) : value.toFixed(3);
  }

  function style(data, tag) {
    var found = data.colors && data.colors[tag];
    return found || { color: NEUTRAL, bold: false };
  }

  // the cumulative attention of each word after each step: beta[n][i] = Σ_{m ≤ n} α^m_i
  function cumulative(attention, length) {
    var beta = [], sum = new Array(length).fill(0);
    attention.forEach(function (row) {
      sum = sum.map(function (s, i) { return s + row[i]; });
      beta.push(sum);
    });
    return beta;
  }

  function label(data, i) {
    var parts = [data.tokens[i], data.tags[i]];
    if (data.gold && data.gold[i] !== data.tags[i]) parts.push("✗ " + data.gold[i]);
    return parts;
  }

  function tooltipText(data, beta, n, i) {
    var text = "word " + (i + 1) + " “" + data.tokens[i] + "”, tag " + data.tags[i];
    if (data.gold) text += data.gold[i] === data.tags[i] ? " (gold too)" : " (gold " + data.gold[i] + ")";
    return text + " · step " + (n + 1) + " · α = " + format(data.attention[n][i]) +
      " · β up to step " + (n + 1) + " = " + format(beta[n][i]);
  }

  // the step control: first, back, the slider, on, last, play, and what is shown
  function controls(steps) {
    var c = {
      box: el("div", "efr-controls"), first: el("button", "efr-first", "first"),
      back: el("button", "efr-back", "◀"), play: el("button", "efr-play", "▶ play"),
      next: el("button", "efr-next", "▶"), last: el("button", "efr-last", "last"),
      slider: el("input", "efr-step"), shown: el("span", "efr-shown")
    };
    c.slider.type = "range"; c.slider.min = 1; c.slider.max = Math.max(1, steps); c.slider.value = Math.max(1, steps);
    c.slider.setAttribute("aria-label", "sketch step shown");
    c.shown.setAttribute("aria-live", "polite");
    c.first.title = "step 1"; c.back.title = "one step back"; c.next.title = "one step on"; c.last.title = "all steps";
    [c.first, c.back, c.play, c.next, c.last].forEach(function (b) { b.type = "button"; });
    [el("span", "efr-control-label", "step"), c.first, c.back, c.slider, c.next, c.last, c.play, c.shown]
      .forEach(function (part) { c.box.appendChild(part); });
    return c;
  }

  // the step × word grid: one row of cells per step (cells[n][i]), then the β row and the labelled words
  function attentionGrid(data, beta) {
    var length = data.tokens.length, steps = data.attention.length;
    var grid = el("div", "efr-grid");
    grid.setAttribute("role", "grid");
    grid.setAttribute("aria-label", "attention: rows are sketch steps, columns are words");
    grid.style.gridTemplateColumns = "auto repeat(" + length + ", var(--efr-cell))";
    grid.style.setProperty("--efr-row", steps > 40 ? "9px" : "16px");
    // narrower columns for long sentences: 100 words fit a wide window, and scroll sideways at 800 px
    grid.style.setProperty("--efr-cell", length > 60 ? "15px" : length > 30 ? "18px" : "22px");
    if (length > 60) grid.classList.add("efr-long");
    var cells = data.attention.map(function (row, n) {
      var line = el("div", "efr-row");
      line.setAttribute("role", "row");
      var head = el("div", "efr-stepnum", (n + 1) % 5 === 0 || n === 0 || steps <= 25 ? String(n + 1) : "");
      head.setAttribute("role", "rowheader");
      line.appendChild(head);
      grid.appendChild(line);
      return row.map(function (alpha, i) {
        var cell = el("div", "efr-cell");
        cell.setAttribute("role", "gridcell");
        cell.dataset.step = n; cell.dataset.word = i; cell.dataset.alpha = String(alpha);
        cell.tabIndex = n === 0 && i === 0 ? 0 : -1;
        cell.style.background = viridis(alpha);
        cell.setAttribute("aria-label", tooltipText(data, beta, n, i));
        line.appendChild(cell);
        return cell;
      });
    });
    var betaRow = el("div", "efr-row efr-beta-row");
    betaRow.appendChild(el("div", "efr-stepnum efr-beta-label", "β"));
    var betaCells = data.beta === false ? [] : data.tokens.map(function () {
      return betaRow.appendChild(el("div", "efr-beta"));
    });
    if (betaCells.length) grid.appendChild(betaRow);
    grid.appendChild(words(data));
    return { grid: grid, cells: cells, betaCells: betaCells };
  }

  // the words with their tags, coloured by (gold) tag; a wrong prediction in red with the gold tag
  function words(data) {
    var row = el("div", "efr-row efr-words");
    row.appendChild(el("div", "efr-stepnum"));
    data.tokens.forEach(function (token, i) {
      var wrong = data.gold && data.gold[i] !== data.tags[i];
      var look = style(data, data.gold ? data.gold[i] : data.tags[i]);
      var word = el("div", "efr-word");
      word.dataset.word = i;
      label(data, i).forEach(function (part, k) {
        word.appendChild(el("span", k === 0 ? "efr-token" : "efr-tag", part));
      });
      word.style.color = wrong ? WRONG : look.color;
      if (look.bold || wrong) word.style.fontWeight = "bold";
      row.appendChild(word);
    });
    return row;
  }

  // replaying the decoder: steps after the shown one greyed, β up to it; returns show(step)
  function stepper(root, data, beta, c, g) {
    var length = data.tokens.length, steps = data.attention.length;
    var state = { step: steps, timer: null };
    function show(step) {
      state.step = Math.max(1, Math.min(steps, step));
      c.slider.value = state.step;
      c.shown.textContent = steps ? "showing steps 1–" + state.step + " of " + steps : "no sketch steps";
      g.cells.forEach(function (row, n) {
        row.forEach(function (cell) { cell.classList.toggle("efr-future", n >= state.step); });
        row.forEach(function (cell) { cell.classList.toggle("efr-current", n === state.step - 1); });
      });
      var b = steps ? beta[state.step - 1] : new Array(length).fill(0);
      var top = Math.max(1, Math.max.apply(null, b.concat([0])));
      g.betaCells.forEach(function (cell, i) {
        cell.style.background = viridis(b[i] / top);
        cell.style.color = textOn(b[i] / top);
        cell.dataset.beta = String(b[i]);
        cell.textContent = length <= ANNOTATE_BETA_UP_TO ? b[i].toFixed(2) : "";
        cell.title = data.tokens[i] + ": β up to step " + state.step + " = " + format(b[i]);
      });
    }
    function stop() {
      if (state.timer) clearInterval(state.timer);
      state.timer = null;
      c.play.textContent = "▶ play";
    }
    c.slider.addEventListener("input", function () { stop(); show(Number(c.slider.value)); });
    c.first.addEventListener("click", function () { stop(); show(1); });
    c.back.addEventListener("click", function () { stop(); show(state.step - 1); });
    c.next.addEventListener("click", function () { stop(); show(state.step + 1); });
    c.last.addEventListener("click", function () { stop(); show(steps); });
    c.play.addEventListener("click", function () {
      if (state.timer) return stop();
      if (state.step >= steps) show(1);
      c.play.textContent = "⏸ pause";
      state.timer = setInterval(function () {
        if (state.step >= steps || !root.isConnected) return stop();
        show(state.step + 1);
      }, Math.max(60, Math.min(600, 6000 / Math.max(1, steps))));
    });
    return show;
  }

  // reading a cell by pointing or by keyboard focus: the tooltip sits just below the cell (above it near
  // the bottom of the grid), inside the view; the arrow keys, Home and End move the focus
  function pointer(root, scroller, tip, data, beta, g) {
    var length = data.tokens.length, steps = data.attention.length, grid = g.grid;
    function point(cell) {
      var n = Number(cell.dataset.step), i = Number(cell.dataset.word);
      tip.textContent = tooltipText(data, beta, n, i);
      tip.hidden = false;
      var box = cell.getBoundingClientRect(), frame = root.getBoundingClientRect();
      var left = Math.max(0, Math.min(box.left - frame.left - 8, frame.width - tip.offsetWidth));
      var below = box.bottom - frame.top + 6;
      var above = box.top - frame.top - tip.offsetHeight - 6;
      tip.style.left = left + "px";
      tip.style.top = (n > steps / 2 && above > 0 ? above : below) + "px";
    }
    function hide() { tip.hidden = true; }
    grid.addEventListener("mouseover", function (e) {
      if (e.target.classList && e.target.classList.contains("efr-cell")) point(e.target);
    });
    grid.addEventListener("mouseleave", hide);
    grid.addEventListener("focusin", function (e) {
      if (e.target.classList.contains("efr-cell")) point(e.target);
    });
    grid.addEventListener("focusout", hide);
    scroller.addEventListener("scroll", hide);
    grid.addEventListener("keydown", function (e) {
      var cell = e.target, moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1],
        Home: [0, -length], End: [0, length] };
      if (!cell.classList.contains("efr-cell") || !moves[e.key]) return;
      var n = Math.max(0, Math.min(steps - 1, Number(cell.dataset.step) + moves[e.key][0]));
      var i = Math.max(0, Math.min(length - 1, Number(cell.dataset.word) + moves[e.key][1]));
      cell.tabIndex = -1;
      g.cells[n][i].tabIndex = 0;
      g.cells[n][i].focus();
      e.preventDefault();
    });
  }

  // one view: title, step control, the grid (scrolling sideways when wide), tooltip, legend and hint
  function view(data) {
    var length = data.tokens.length, steps = data.attention.length;
    var beta = cumulative(data.attention, length);
    var root = el("section", "efr-view");
    root.setAttribute("aria-label", "raindrop: " + (data.title || data.tokens.join(" ")));
    var title = data.title || [data.model, data.task].filter(Boolean).join(" · ");
    if (title) root.appendChild(el("h3", "efr-title", title));
    var c = controls(steps);
    root.appendChild(c.box);
    var scroller = el("div", "efr-scroll"), g = attentionGrid(data, beta);
    scroller.appendChild(g.grid);
    root.appendChild(scroller);
    var tip = el("div", "efr-tooltip");
    tip.setAttribute("role", "tooltip");
    tip.hidden = true;
    root.appendChild(tip);
    root.appendChild(legend(data));
    root.appendChild(el("p", "efr-hint", "Rows are sketch steps n (step 1 at the top), columns the words " +
      "with their predicted tags; a cell's colour is the attention αⁿ on the word at step n" +
      (g.betaCells.length ? ", the β row the attention each word got up to the step shown. " : ". ") +
      "Point at a cell, or focus the grid (Tab) and move with the arrow keys, to read it." +
      (length > 30 ? " A long sentence scrolls sideways." : "")));
    pointer(root, scroller, tip, data, beta, g);
    stepper(root, data, beta, c, g)(steps);
    return root;
  }

  function legend(data) {
    var box = el("div", "efr-legend");
    var scale = el("span", "efr-scale");
    scale.appendChild(el("span", "efr-scale-label", "α 0"));
    var bar = el("span", "efr-scale-bar");
    bar.style.background = "linear-gradient(to right, " + VIRIDIS.join(", ") + ")";
    scale.appendChild(bar);
    scale.appendChild(el("span", "efr-scale-label", "1"));
    box.appendChild(scale);
    var seen = {};
    data.tags.concat(data.gold || []).forEach(function (tag) {
      if (seen[tag]) return;
      seen[tag] = true;
      var look = style(data, tag), item = el("span", "efr-legend-tag", tag);
      item.style.color = look.color;
      if (look.bold) item.style.fontWeight = "bold";
      box.appendChild(item);
    });
    if (data.gold && data.gold.some(function (g, i) { return g !== data.tags[i]; })) {
      var wrong = el("span", "efr-legend-tag", "✗ gold tag where the prediction differs");
      wrong.style.color = WRONG;
      wrong.style.fontWeight = "bold";
      box.appendChild(wrong);
    }
    return box;
  }

  function render(element, data) {
    var list = Array.isArray(data) ? data : [data];
    element.textContent = "";
    element.classList.add("efr");
    var row = el("div", "efr-views");
    list.forEach(function (d) { row.appendChild(view(d)); });
    element.appendChild(row);
    return element;
  }

  window.easyfirstRaindrop = { render: render, version: 1 };
})();
