// The leaderboard's benchmark section: boards from /api/bench, accuracy with
// Wilson intervals beside the preference rating. Everything is written with
// textContent: contender names and grader labels are data, never markup.
(function () {
  "use strict";
  const section = document.getElementById("bench");
  if (!section) return;
  const status = document.getElementById("bench-status");
  const boardsEl = document.getElementById("bench-boards");
  const judgesEl = document.getElementById("bench-judges");

  const pct = (x) => (x === null || x === undefined ? "—" : (100 * x).toFixed(1) + "%");
  const el = (tag, text, cls) => {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (cls) node.className = cls;
    return node;
  };
  const acc = (p) => (p && p.n ? `${pct(p.rate)} (${p.k}/${p.n})` : "—");
  const ci = (p) => (p && p.n ? `${pct(p.ci_low)} – ${pct(p.ci_high)}` : "");

  function table(headers, rows) {
    const wrap = el("div", null, "card lb-table-wrap");
    wrap.dataset.scrollLabel = "Benchmark table"; // leaderboard.js makes it reachable when it scrolls
    const t = el("table", null, "lb-table");
    const head = t.createTHead().insertRow();
    headers.forEach(([label, num]) => head.appendChild(el("th", label, num ? "num" : "")));
    const body = t.createTBody();
    rows.forEach((cells) => {
      const tr = body.insertRow();
      cells.forEach(([text, cls]) => tr.appendChild(el("td", text, cls || "")));
    });
    wrap.appendChild(t);
    return wrap;
  }

  function board(b) {
    const box = el("div", null, "lb-panel card lb-bench__board");
    box.appendChild(el("h3", `${b.suite} · ${b.grader_label}`));
    const levels = [...new Set(b.contenders.flatMap((c) => Object.keys(c.by_level)))].sort();
    const headers = [["Contender"], ["Rating", true], ["Accuracy", true], ["95% CI"]];
    levels.forEach((l) => headers.push([`Level ${l}`, true]));
    headers.push(["s / instance", true], ["Tool calls", true], ["Top tools"]);
    const rows = b.contenders.map((c) => {
      const tools = Object.entries(c.tool_share || {})
        .map(([level, share]) => {
          const top = Object.entries(share).slice(0, 3).map(([tool, s]) => `${tool} ${pct(s)}`).join(", ");
          return top ? `L${level}: ${top}` : "";
        })
        .filter(Boolean)
        .join(" · ");
      const cells = [
        [c.contender + (c.gate ? " (GATE)" : ""), "lb-name"],
        [c.rating && c.rating.rating !== null ? Math.round(c.rating.rating).toString() : "—", "num"],
        [acc(c.accuracy), "num"],
        [ci(c.accuracy), "lb-ci"],
      ];
      levels.forEach((l) => cells.push([acc(c.by_level[l]), "num"]));
      cells.push(
        [c.time && c.time.mean_s !== null ? c.time.mean_s.toFixed(2) : "—", "num"],
        [c.tool_calls === null ? "—" : c.tool_calls.toFixed(1), "num"],
        [tools || "—", "lb-ci"],
      );
      return cells;
    });
    box.appendChild(table(headers, rows));
    const agreement = b.judge_agreement;
    if (agreement && agreement.runs) {
      const kappa = agreement.kappa === null ? "undefined" : agreement.kappa.toFixed(2);
      box.appendChild(el("p", `Judge vs offline grader: ${pct(agreement.agreement.rate)} agreement on ` +
        `${agreement.runs} runs, Cohen's kappa ${kappa}.`, "lb-help"));
    }
    return box;
  }

  function judge(j) {
    const box = el("div", null, "lb-panel card lb-bench__judge");
    const kappa = j.kappa === null ? "undefined" : j.kappa.toFixed(2);
    box.appendChild(el("h3", `Model judge ${j.judge}`));
    box.appendChild(el("p", `Agrees with the human votes on ${pct(j.agreement.rate)} of ${j.battles} battles ` +
      `(${ci(j.agreement)}), Cohen's kappa ${kappa}, position consistency ${pct(j.position_consistency.rate)}.`,
      "lb-help"));
    const rows = j.board.map((r) => [[r.contender, "lb-name"], [pct(r.judge_win_rate), "num"],
      [`${pct(r.judge_ci_low)} – ${pct(r.judge_ci_high)}`, "lb-ci"], [pct(r.human_win_rate), "num"],
      [String(r.battles), "num"]]);
    box.appendChild(table([["Contender"], ["Judge win rate", true], ["95% CI"], ["Human win rate", true],
      ["Battles", true]], rows));
    return box;
  }

  fetch(section.dataset.api, { headers: { Accept: "application/json" } })
    .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`))))
    .then((data) => {
      if (!data.boards.length && !data.judges.length) {
        status.textContent = data.message || "No benchmark results yet.";
        return;
      }
      status.textContent = "";
      status.hidden = true;
      data.boards.forEach((b) => boardsEl.appendChild(board(b)));
      data.judges.forEach((j) => judgesEl.appendChild(judge(j)));
    })
    .catch((err) => { status.textContent = `Benchmark results could not be loaded (${err.message}).`; });
})();
