// GeoArena leaderboard: the plain/style toggle, sorting and the name filter,
// the rating chart with confidence whiskers, the win-rate heat map and the
// category tables. Charts are drawn as inline SVG from #lb-data (no CDN, no
// library). Every figure arrives formatted (or rounded) by the server
// (arena/web/figures.py): this script prints them and formats nothing.
(function () {
  "use strict";

  var SVG = "http://www.w3.org/2000/svg";
  var dataNode = document.getElementById("lb-data");
  if (!dataNode) return;
  var snap = JSON.parse(dataNode.textContent || "{}");
  if (!snap.views || !snap.views.plain || !snap.views.plain.length) return;

  var view = "plain";
  // The theme's colours are light-dark() pairs: a probe element resolves one
  // to the colour in force, which SVG attributes can take.
  var probe = document.createElement("span");
  probe.hidden = true;
  document.body.appendChild(probe);
  function color(name, fallback) {
    probe.style.color = "var(" + name + ", " + fallback + ")";
    return getComputedStyle(probe).color || fallback;
  }

  // ---- small helpers ---------------------------------------------------------

  function el(tag, attrs, text) {
    var node = document.createElementNS(SVG, tag);
    for (var k in attrs) node.setAttribute(k, attrs[k]);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function html(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function fmtInt(x) { return x.toLocaleString("en-US"); }  // counts: whole numbers already
  function pct(x) { return x + "%"; }  // percentages: rounded by the server
  function rows() { return snap.views[view] || snap.views.plain; }
  function niceStep(span, ticks) {
    var raw = span / Math.max(ticks, 1);
    var power = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * power >= raw) return steps[i] * power;
    return 10 * power;
  }
  function truncate(name, max) { return name.length > max ? name.slice(0, max - 1) + "…" : name; }

  // ---- the tables: view, sort, filter -----------------------------------------

  var sortKey = "rank", sortDir = 1;

  function fillTable(tbody, list) {
    tbody.textContent = "";
    list.forEach(function (r) {
      var tr = html("tr");
      tr.appendChild(html("td", "num", String(r.rank)));
      var name = html("td", "lb-name", r.contender);
      if (r.gate) { name.appendChild(document.createTextNode(" ")); name.appendChild(html("span", "badge lb-gate", "GATE")); }
      tr.appendChild(name);
      var rating = html("td", "num"); rating.appendChild(html("strong", "", r.rating));
      rating.appendChild(html("span", "lb-ci lb-ci-inline", r.interval)); tr.appendChild(rating);
      tr.appendChild(html("td", "num lb-ci lb-ci-col", r.interval));
      tr.appendChild(html("td", "num", r.votes));
      tr.appendChild(html("td", "num", r.win_rate));
      tbody.appendChild(tr);
    });
  }

  function sortable() { return Array.prototype.slice.call(document.querySelectorAll("table.lb-sortable")); }

  function sortBody(tbody) {
    var trs = Array.prototype.slice.call(tbody.rows);
    trs.sort(function (a, b) {
      var x = a.dataset[toCamel(sortKey)], y = b.dataset[toCamel(sortKey)];
      var c = sortKey === "contender" ? (x < y ? -1 : x > y ? 1 : 0) : (+x - +y);
      // ties keep the board's order
      return c * sortDir || (+a.dataset.rank - +b.dataset.rank) || (a.dataset.contender < b.dataset.contender ? -1 : 1);
    });
    trs.forEach(function (tr) { tbody.appendChild(tr); });
  }
  function toCamel(key) { return key.replace(/_([a-z])/g, function (_, c) { return c.toUpperCase(); }); }

  function applyView() {
    var needle = (document.getElementById("lb-filter") || { value: "" }).value.trim().toLowerCase();
    var shown = 0;
    sortable().forEach(function (table) {
      Array.prototype.forEach.call(table.tBodies, function (tbody) {
        var active = tbody.dataset.view === view || (tbody.dataset.view === "plain" && !snap.views[view]);
        tbody.hidden = !active;
        if (!active) return;
        sortBody(tbody);
        Array.prototype.forEach.call(tbody.rows, function (tr) {
          var match = !needle || tr.dataset.contender.indexOf(needle) !== -1;
          tr.hidden = !match;
          if (match) shown++;
        });
      });
      table.classList.toggle("lb-no-elo", view !== "plain");
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
        if (!th.dataset.sort) return;
        if (th.dataset.sort === sortKey) th.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
        else th.removeAttribute("aria-sort");
      });
    });
    var none = document.getElementById("lb-no-match");
    if (none) none.hidden = shown > 0;
    return shown;
  }

  function announce(text) {
    var status = document.getElementById("lb-status");
    if (status) status.textContent = text;
  }

  function setupTables() {
    sortable().forEach(function (table) {
      Array.prototype.forEach.call(table.querySelectorAll("th[data-sort] button"), function (button) {
        button.addEventListener("click", function () {
          var key = button.parentNode.dataset.sort;
          // names read A to Z first; figures best first (rank: 1 first)
          if (key === sortKey) sortDir = -sortDir;
          else { sortKey = key; sortDir = key === "rank" || key === "contender" ? 1 : -1; }
          applyView();
          announce("Sorted by " + button.textContent.toLowerCase() + (sortDir > 0 ? ", ascending" : ", descending"));
        });
      });
    });
    var filter = document.getElementById("lb-filter");
    if (filter) filter.addEventListener("input", function () {
      var shown = applyView();
      announce(filter.value.trim() ? shown + " contender" + (shown === 1 ? "" : "s") + " match" + (shown === 1 ? "es" : "") : "");
    });
  }

  // ---- the rating chart --------------------------------------------------------

  function renderChart() {
    var box = document.getElementById("lb-chart");
    if (!box) return;
    var list = rows();
    var width = Math.max(box.clientWidth, 280);
    var rowH = list.length <= 12 ? 28 : list.length <= 40 ? 20 : 15;
    var labelW = Math.min(Math.round(width * 0.38), 200);
    var maxChars = Math.max(8, Math.floor(labelW / 7.6));  // ~7.6 px a character at 12 px: no name runs past the edge
    var top = 26, right = 14, plotW = width - labelW - right;
    var height = top + list.length * rowH + 8;
    var lo = Math.min.apply(null, list.map(function (r) { return r.ci_low; }));
    var hi = Math.max.apply(null, list.map(function (r) { return r.ci_high; }));
    if (hi - lo < 1) { lo -= 5; hi += 5; }
    var pad = (hi - lo) * 0.04; lo -= pad; hi += pad;
    function x(v) { return labelW + (v - lo) / (hi - lo) * plotW; }

    var svg = el("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, class: "lb-svg" });
    var step = niceStep(hi - lo, Math.max(2, Math.floor(plotW / 70)));
    for (var t = Math.ceil(lo / step) * step; t <= hi; t += step) {
      svg.appendChild(el("line", { x1: x(t), x2: x(t), y1: top - 6, y2: height - 6, stroke: color("--border", "#ccc") }));
      svg.appendChild(el("text", { x: x(t), y: top - 10, "text-anchor": "middle", class: "lb-axis" }, String(Math.round(t))));
    }
    var accent = color("--accent", "#1f6f5c"), gate = color("--gate", "#6b3fa0");
    list.forEach(function (r, i) {
      var y = top + i * rowH + rowH / 2;
      var g = el("g", { class: "lb-chart-row" });
      g.appendChild(el("title", {}, r.label));
      g.appendChild(el("text", { x: labelW - 8, y: y + 4, "text-anchor": "end", class: "lb-label" }, truncate(r.contender, maxChars)));
      var c = r.gate ? gate : accent;
      g.appendChild(el("line", { x1: x(r.ci_low), x2: x(r.ci_high), y1: y, y2: y, stroke: c, "stroke-width": 2 }));
      var cap = Math.min(5, rowH / 3);
      g.appendChild(el("line", { x1: x(r.ci_low), x2: x(r.ci_low), y1: y - cap, y2: y + cap, stroke: c, "stroke-width": 2 }));
      g.appendChild(el("line", { x1: x(r.ci_high), x2: x(r.ci_high), y1: y - cap, y2: y + cap, stroke: c, "stroke-width": 2 }));
      g.appendChild(el("circle", { cx: x(r.rating), cy: y, r: Math.min(4.5, rowH / 4), fill: c }));
      svg.appendChild(g);
    });
    box.textContent = "";
    box.appendChild(svg);
  }

  // ---- style coefficients ------------------------------------------------------

  function renderCoefficients() {
    var table = document.getElementById("lb-coef");
    if (!table) return;
    var trs = Array.prototype.slice.call(table.tBodies[0].rows);
    var span = 0;
    trs.forEach(function (tr) { span = Math.max(span, Math.abs(+tr.dataset.low), Math.abs(+tr.dataset.high)); });
    span = span || 1;
    trs.forEach(function (tr) {
      var w = 160, h = 18;
      function x(v) { return w / 2 + v / span * (w / 2 - 6); }
      var svg = el("svg", { width: w, height: h, viewBox: "0 0 " + w + " " + h, class: "lb-svg", "aria-hidden": "true" });
      svg.appendChild(el("line", { x1: w / 2, x2: w / 2, y1: 0, y2: h, stroke: color("--muted", "#888") }));
      var c = color("--accent", "#1f6f5c");
      svg.appendChild(el("line", { x1: x(+tr.dataset.low), x2: x(+tr.dataset.high), y1: h / 2, y2: h / 2, stroke: c, "stroke-width": 2 }));
      svg.appendChild(el("circle", { cx: x(+tr.dataset.value), cy: h / 2, r: 4, fill: c }));
      var cell = tr.querySelector(".lb-coef-bar");
      cell.textContent = "";
      cell.appendChild(svg);
    });
  }

  // ---- the heat map --------------------------------------------------------------

  function heatColour(v, kind, maxBattles) {
    if (v === null || v === undefined) return "transparent";
    if (kind === "battles") {
      var t = maxBattles ? Math.sqrt(v / maxBattles) : 0;
      return "rgba(31,111,92," + (0.08 + 0.85 * t).toFixed(3) + ")";
    }
    // diverging around 50%: red below, green above
    var d = Math.max(-1, Math.min(1, (v - 50) / 50));
    return d >= 0 ? "rgba(31,140,92," + (0.1 + 0.8 * d).toFixed(3) + ")" : "rgba(200,60,50," + (0.1 + 0.8 * -d).toFixed(3) + ")";
  }

  function renderHeat() {
    var box = document.getElementById("lb-heat");
    var m = snap.matrices;
    if (!box || !m) return;
    var sizeSel = document.getElementById("lb-heat-size");
    var kind = document.getElementById("lb-heat-kind").value;
    var n = Math.min(+sizeSel.value || m.contenders.length, m.contenders.length);
    var names = m.contenders.slice(0, n);
    var values = m[kind];
    var maxBattles = 0;
    for (var i = 0; i < n; i++) for (var j = 0; j < n; j++) maxBattles = Math.max(maxBattles, m.battles[i][j]);
    var width = Math.max(box.clientWidth, 260);
    // Cells shrink to fit the card (down to 3 px: 129 contenders fit a laptop);
    // names are written only where a cell is tall enough to read them, and
    // every cell keeps its figures in its tooltip.
    var labelW = Math.min(150, Math.round(width * 0.3));
    var cell = Math.max(3, Math.min(64, Math.floor((width - labelW - 4) / n)));
    var labelled = cell >= 9;
    if (!labelled) { labelW = 4; cell = Math.max(3, Math.min(64, Math.floor((width - labelW - 4) / n))); }
    var maxChars = Math.max(6, Math.floor(labelW / 7.6));  // ~7.6 px a character at 12 px: no name runs past the edge
    var top = labelled ? Math.round(labelW * 0.75) : 4;
    // rotated column labels lean right: leave them room past the last column
    var w = Math.min(width, labelW + n * cell + (labelled ? Math.round(top * 0.8) : 4)), h = top + n * cell + 4;
    if (labelW + n * cell > w) w = labelW + n * cell + 4;
    var svg = el("svg", { width: w, height: h, viewBox: "0 0 " + w + " " + h, class: "lb-svg" });
    if (labelled) {
      names.forEach(function (name, k) {
        svg.appendChild(el("text", { x: labelW - 6, y: top + k * cell + cell / 2 + 4, "text-anchor": "end", class: "lb-label" }, truncate(name, maxChars)));
        var cx = labelW + k * cell + cell / 2;
        svg.appendChild(el("text", { x: cx, y: top - 6, transform: "rotate(-45 " + cx + " " + (top - 6) + ")", class: "lb-label" }, truncate(name, maxChars)));
      });
    }
    var border = color("--border", "#ccc");
    for (i = 0; i < n; i++) {
      for (j = 0; j < n; j++) {
        var v = i === j ? null : values[i][j];
        if (kind === "battles" && v === 0) v = null;
        var rect = el("rect", { x: labelW + j * cell, y: top + i * cell, width: cell, height: cell, fill: heatColour(v, kind, maxBattles), stroke: border, "stroke-width": cell >= 6 ? 0.5 : 0 });
        var label = i === j ? names[i] : names[i] + " vs " + names[j] + ": " + (v === null ? "never met" : kind === "battles" ? fmtInt(v) + " battles" : pct(v) + " (" + fmtInt(m.battles[i][j]) + " battles)");
        rect.appendChild(el("title", {}, label));
        svg.appendChild(rect);
        if (cell >= 34 && v !== null) {
          svg.appendChild(el("text", { x: labelW + j * cell + cell / 2, y: top + i * cell + cell / 2 + 4, "text-anchor": "middle", class: "lb-cell" }, kind === "battles" ? fmtInt(v) : String(v)));
        }
      }
    }
    box.textContent = "";
    box.appendChild(svg);
    markScrollers();
  }

  function setupHeat() {
    var sizeSel = document.getElementById("lb-heat-size");
    if (!sizeSel || !snap.matrices) return;
    var total = snap.matrices.contenders.length;
    [10, 20, 50].filter(function (k) { return k < total; }).concat([total]).forEach(function (k) {
      var opt = html("option", "", k === total ? "all " + total : "top " + k);
      opt.value = String(k);
      sizeSel.appendChild(opt);
    });
    sizeSel.value = String(Math.min(total, 20));
    if (!sizeSel.value) sizeSel.value = String(total);
    sizeSel.addEventListener("change", renderHeat);
    document.getElementById("lb-heat-kind").addEventListener("change", renderHeat);
  }

  // ---- categories -------------------------------------------------------------------

  function renderCategory() {
    var sel = document.getElementById("lb-cat");
    if (!sel) return;
    var cat = snap.categories[+sel.value];
    document.getElementById("lb-cat-thin").hidden = !cat.too_few_votes;
    fillTable(document.getElementById("lb-cat-table").tBodies[0], cat.rows);
  }

  // ---- scrolling regions --------------------------------------------------------------

  // A box whose content is wider (or taller) than itself scrolls: it gets a
  // name and a tab stop, so keyboards reach it, and a visible cue (a shadow
  // at the edge with more to see and a line saying so) for everyone.
  function markScrollers() {
    var seen = {};
    Array.prototype.forEach.call(document.querySelectorAll("[data-scroll-label]"), function (box) {
      var wide = box.scrollWidth > box.clientWidth + 1, tall = box.scrollHeight > box.clientHeight + 1;
      var scrolls = wide || tall;
      box.classList.toggle("lb-scrolls", scrolls);
      box.classList.toggle("lb-scrolls--x", wide);
      if (scrolls) {
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "region");
        // regions are landmarks: each needs its own name (a second "Benchmark table" becomes "... 2")
        var name = box.dataset.scrollLabel;
        seen[name] = (seen[name] || 0) + 1;
        if (seen[name] > 1) name += " " + seen[name];
        box.setAttribute("aria-label", name + (wide ? ", scrolls sideways" : ", scrolls"));
      } else {
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
      }
      edges(box);
      var hint = box.previousElementSibling && box.previousElementSibling.classList.contains("lb-scroll-hint") ? box.previousElementSibling : null;
      if (wide && !hint) {
        hint = html("p", "lb-scroll-hint", "Scroll sideways for more columns →");
        hint.setAttribute("aria-hidden", "true");
        box.parentNode.insertBefore(hint, box);
      } else if (!wide && hint) hint.remove();
      if (!box.dataset.scrollWatched) {
        box.dataset.scrollWatched = "1";
        box.addEventListener("scroll", function () { edges(box); }, { passive: true });
      }
    });
  }
  function edges(box) {
    box.classList.toggle("lb-more-right", box.scrollLeft + box.clientWidth < box.scrollWidth - 1);
    box.classList.toggle("lb-more-left", box.scrollLeft > 1);
  }

  // ---- wiring --------------------------------------------------------------------------

  Array.prototype.forEach.call(document.querySelectorAll(".lb-toggle"), function (button) {
    button.addEventListener("click", function () {
      if (button.disabled) return;
      view = button.dataset.view;
      Array.prototype.forEach.call(document.querySelectorAll(".lb-toggle"), function (b) {
        b.setAttribute("aria-pressed", String(b === button));
      });
      applyView();
      renderChart();
      markScrollers();
    });
  });
  var computed = document.getElementById("lb-computed");
  if (computed && computed.getAttribute("datetime")) {
    var when = new Date(computed.getAttribute("datetime"));
    if (!isNaN(when)) computed.textContent = when.toLocaleString();
  }
  var cat = document.getElementById("lb-cat");
  if (cat) cat.addEventListener("change", function () { renderCategory(); markScrollers(); });
  setupTables();
  setupHeat();
  renderChart();
  renderCoefficients();
  renderHeat();
  renderCategory();
  markScrollers();
  // the benchmark section fills its tables later (bench.js): mark those when they arrive
  var bench = document.getElementById("bench");
  if (bench && window.MutationObserver) {
    new MutationObserver(function () { markScrollers(); }).observe(bench, { childList: true, subtree: true });
  }
  // the header's toggle switched light and dark (static/theme.js): redraw in the new colours
  document.addEventListener("geoarena:theme", function () { renderChart(); renderCoefficients(); renderHeat(); });
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () { renderChart(); renderHeat(); markScrollers(); }, 150);
  });
})();
