/* easyfirst's interactive raindrop: the attention αⁿ of each sketch step n over the words (the paper's
 * Figs. 2-4), one cell per (step, word), with a step control that replays the decoder and the
 * cumulative attention β = Σₙ αⁿ up to the shown step.
 *
 * window.easyfirstRaindrop.render(element, data_or_list_of_data) draws one view per data object, side by
 * side. A data object has tokens, tags and attention (one row per step, one column per word); optional:
 * gold (gold tags), model, task, title, colors ({tag: {color, bold}}; easyfirst.viz.web.tag_colors), mistake
 * (the colour of a label whose tag differs from gold; easyfirst.viz.plot.MISTAKE), and beta: false to
 * leave out the β row.
 * The cells take the width the view has (between CELL_MIN and CELL_MAX px a column), and the read-out of
 * the cell pointed at sits beside the grid, or below it when the grid needs the width: never over it.
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
  var NEUTRAL = "#333333";
  var CELL_MIN = 14, CELL_MAX = 56; // px a column: 100 words fit 1600 px; 8 words are not a stamp
  var ROW_MIN = 8, GRID_HEIGHT = 480; // px a step, and the height the steps share (square cells if they fit)
  var READOUT_MIN = 220, GAP = 16; // px: the read-out beside the grid when this much is left over
  var FONT_MIN = 11, FONT_MAX = 15; // px, the word labels and the β values

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

  // α and β as the read-out gives them: three decimals, and small non-zero values in exponent form (the exact
  // value is the cell's data-alpha)
  function format(value) {
    if (value === 0) return "0";
    return Math.abs(value) < 0.001 ? value.toExponential(2) : value.toFixed(3);
  }

  function mistakeColor(data) {
    return data.mistake || NEUTRAL;
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

  // what a cell says: the word, its tag, the step, α and β up to the step (one line each in the read-out)
  function reading(data, beta, n, i) {
    var word = "word " + (i + 1) + " “" + data.tokens[i] + "”, tag " + data.tags[i];
    if (data.gold) word += data.gold[i] === data.tags[i] ? " (gold too)" : " (gold " + data.gold[i] + ")";
    return [word, "step " + (n + 1) + " · α = " + format(data.attention[n][i]),
      "β up to step " + (n + 1) + " = " + format(beta[n][i])];
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
        cell.setAttribute("aria-label", reading(data, beta, n, i).join(" · "));
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
      if (wrong) word.classList.add("efr-mistake");
      word.style.color = wrong ? mistakeColor(data) : look.color;
      if (look.bold || wrong) word.style.fontWeight = "bold";
      row.appendChild(word);
    });
    return row;
  }

  // replaying the decoder: steps after the shown one greyed, β up to it; returns show(step)
  function stepper(root, data, beta, c, g) {
    var length = data.tokens.length, steps = data.attention.length;
    var state = { step: steps, timer: null };
    function show(step) { // no step: the one shown, drawn again (after a new layout)
      state.step = Math.max(1, Math.min(steps, step === undefined ? state.step : step));
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
        cell.textContent = g.writeBeta ? b[i].toFixed(2) : "";
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

  // reading a cell by pointing or by keyboard focus: the read-out (beside or below the grid, never over
  // it) says what the cell holds; the arrow keys, Home and End move the focus
  function pointer(readout, data, beta, g) {
    var length = data.tokens.length, steps = data.attention.length, grid = g.grid;
    var idle = "Point at a cell (or Tab to the grid, then the arrow keys) to read it here.";
    function say(lines, className) {
      readout.textContent = "";
      readout.className = "efr-readout " + className;
      lines.forEach(function (line) { readout.appendChild(el("div", "efr-readout-line", line)); });
    }
    function point(cell) {
      say(reading(data, beta, Number(cell.dataset.step), Number(cell.dataset.word)), "efr-reading");
    }
    function rest() { say([idle], "efr-idle"); }
    grid.addEventListener("mouseover", function (e) {
      if (e.target.classList && e.target.classList.contains("efr-cell")) point(e.target);
    });
    grid.addEventListener("mouseleave", rest);
    grid.addEventListener("focusin", function (e) {
      if (e.target.classList.contains("efr-cell")) point(e.target);
    });
    grid.addEventListener("focusout", rest);
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
    rest();
  }

  function clamp(value, low, high) {
    return Math.max(low, Math.min(high, value));
  }

  // the width of "0.00" in the β row's font, to write β only where it fits its cell with room around it
  function textWidth(text, font) {
    var canvas = textWidth.canvas || (textWidth.canvas = document.createElement("canvas"));
    var context = canvas.getContext("2d");
    if (!context) return text.length * 0.6 * parseFloat(font);
    context.font = font;
    return context.measureText(text).width;
  }

  // sizes the cells to the view's width: the read-out beside the grid when the columns keep at least
  // CELL_MIN + 10 px that way, else the grid takes the whole width (scrolling below CELL_MIN) and the
  // read-out is one line above it ("stacked", where it stays in view of a tall grid's first rows); rows
  // square up to GRID_HEIGHT for all steps, and ROW_MIN at least; β written where "0.00" fits its cell
  function layout(body, data, g) {
    var width = body.clientWidth, length = Math.max(1, data.tokens.length);
    var steps = Math.max(1, data.attention.length);
    if (!width) return false;
    var head = g.grid.querySelector(".efr-stepnum").getBoundingClientRect().width + 2;
    var beside = Math.floor((width - head - GAP - READOUT_MIN) / length);
    var stacked = beside < CELL_MIN + 10;
    var cell = stacked ? clamp(Math.floor((width - head) / length), CELL_MIN, CELL_MAX) : Math.min(CELL_MAX, beside);
    body.classList.toggle("efr-stacked", stacked);
    var row = clamp(Math.min(cell, Math.floor(GRID_HEIGHT / steps)), ROW_MIN, CELL_MAX);
    var font = clamp(Math.round(cell * 0.4), FONT_MIN, FONT_MAX);
    g.grid.style.setProperty("--efr-cell", cell + "px");
    g.grid.style.setProperty("--efr-row", row + "px");
    g.grid.style.setProperty("--efr-font", font + "px");
    var family = getComputedStyle(g.grid).fontFamily;
    var fits = [font, FONT_MIN].filter(function (px) { return textWidth("0.00", px + "px " + family) + 8 <= cell; });
    g.writeBeta = fits.length > 0;
    g.grid.style.setProperty("--efr-beta-font", (fits[0] || FONT_MIN) + "px");
    return true;
  }

  // one view: title, step control, the grid (scrolling sideways when wide) with its read-out, legend, hint
  function view(data) {
    var length = data.tokens.length, steps = data.attention.length;
    var beta = cumulative(data.attention, length);
    var root = el("section", "efr-view");
    root.setAttribute("aria-label", "raindrop: " + (data.title || data.tokens.join(" ")));
    var title = data.title || [data.model, data.task].filter(Boolean).join(" · ");
    if (title) root.appendChild(el("h3", "efr-title", title));
    var c = controls(steps);
    root.appendChild(c.box);
    var body = el("div", "efr-body"), scroller = el("div", "efr-scroll"), g = attentionGrid(data, beta);
    scroller.appendChild(g.grid);
    body.appendChild(scroller);
    var readout = el("div", "efr-readout");
    readout.setAttribute("aria-hidden", "true"); // the cells carry the same words as their aria-label
    body.appendChild(readout);
    root.appendChild(body);
    root.appendChild(legend(data));
    root.appendChild(el("p", "efr-hint", "Rows are sketch steps n (step 1 at the top), columns the words " +
      "with their predicted tags; a cell's colour is the attention αⁿ on the word at step n" +
      (g.betaCells.length ? ", the β row the attention each word got up to the step shown. " : ". ") +
      "Point at a cell, or focus the grid (Tab) and move with the arrow keys, to read it." +
      (length > 30 ? " A long sentence scrolls sideways in a narrow window." : "")));
    pointer(readout, data, beta, g);
    var show = stepper(root, data, beta, c, g);
    show(steps);
    // sized once the view is on the page, and again whenever its width changes
    root.fit = function () { if (layout(body, data, g)) show(); };
    if (window.ResizeObserver) {
      var last = -1;
      new ResizeObserver(function () {
        if (body.clientWidth !== last) { last = body.clientWidth; root.fit(); }
      }).observe(body);
    } else {
      window.addEventListener("resize", root.fit);
    }
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
    // what ✗ means, only where there is gold to differ from
    if (data.gold && data.gold.some(function (g, i) { return g !== data.tags[i]; })) {
      var wrong = el("span", "efr-legend-tag efr-legend-mistake", "✗: the gold tag, where the prediction differs");
      wrong.style.color = mistakeColor(data);
      wrong.style.fontWeight = "bold";
      box.appendChild(wrong);
    } else if (data.gold) {
      box.appendChild(el("span", "efr-legend-gold", "every predicted tag is the gold tag"));
    }
    return box;
  }

  function render(element, data) {
    var list = Array.isArray(data) ? data : [data];
    element.textContent = "";
    element.classList.add("efr");
    var row = el("div", "efr-views"), views = list.map(view);
    views.forEach(function (v) { row.appendChild(v); });
    element.appendChild(row);
    views.forEach(function (v) { v.fit(); });
    return element;
  }

  window.easyfirstRaindrop = { render: render, version: 1 };
})();
