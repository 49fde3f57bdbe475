// corpusmix inspect: renders the embedded run data. No network, no library; text goes in via textContent.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("data").textContent);
  var SVG = "http://www.w3.org/2000/svg";
  var state = { domain: null, step: null, reason: null, sortKey: "dropped", sortDir: -1, filter: "", search: "" };

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === "text") e.textContent = attrs[k]; else if (k === "cls") e.className = attrs[k]; else e.setAttribute(k, attrs[k]);
    }
    (kids || []).forEach(function (c) { if (c) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return e;
  }
  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function get(o) { for (var i = 1; i < arguments.length; i++) { if (o == null) return undefined; o = o[arguments[i]]; } return o; }
  function fmt(x) { return x == null ? "n/a" : (typeof x === "number" ? (Number.isInteger(x) ? x.toLocaleString("en") : x.toPrecision(4)) : String(x)); }
  function pct(x) { return x == null ? "n/a" : (100 * x).toFixed(x < 0.01 && x > 0 ? 2 : 1) + " %"; }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
  function matches(ruleReason, reason) {
    return ruleReason.slice(-2) === ":*" ? reason.indexOf(ruleReason.slice(0, -1)) === 0 : ruleReason === reason;
  }
  function table(head, rows, numeric) {
    var t = el("table"), tr = el("tr");
    head.forEach(function (h, i) { tr.appendChild(el("th", { text: h, cls: numeric && numeric[i] ? "num" : "" })); });
    t.appendChild(el("thead", null, [tr]));
    var tb = el("tbody");
    rows.forEach(function (r) {
      var row = el("tr");
      r.forEach(function (c, i) { row.appendChild(el("td", { text: fmt(c), cls: numeric && numeric[i] ? "num" : "" })); });
      tb.appendChild(row);
    });
    t.appendChild(tb);
    return t;
  }

  // ---------------------------------------------------------------- per-domain numbers
  function domainDrops(dom) {
    var n = 0;
    D.steps.forEach(function (s) { var c = get(D.counts, s, dom); if (c) for (var r in c.dropped) n += c.dropped[r]; });
    return n;
  }
  function ruleRows(dom) {
    var rows = [], docsIn = D.domains[dom];
    D.steps.forEach(function (s) {
      var c = get(D.counts, s, dom), seen = {};
      var dropped = c ? c.dropped : {};
      Object.keys(dropped).forEach(function (r) {
        seen[r] = 1;
        rows.push({ step: s, reason: r, dropped: dropped[r], share: docsIn ? dropped[r] / docsIn : null });
      });
      (get(D.rules, s, dom) || []).forEach(function (rule) {
        var hit = Object.keys(dropped).some(function (r) { return matches(rule.reason, r); });
        if (!hit && !seen[rule.reason]) {
          seen[rule.reason] = 1;
          rows.push({ step: s, reason: rule.reason, dropped: 0, share: 0 });
        }
      });
    });
    return rows;
  }

  // ---------------------------------------------------------------- header and domain list
  function renderHeader() {
    var t = D.totals;
    document.getElementById("run").textContent = "run: " + D.run + " · engine: " + D.engine +
      (t ? " · documents in " + fmt(t.docs_in) + ", kept " + fmt(t.kept) + ", dropped " + fmt(t.dropped) : "") +
      (D.pii && D.pii.note ? " · texts: " + D.pii.note : "");
    var notes = clear(document.getElementById("notes"));
    D.notes.forEach(function (n) { notes.appendChild(el("div", { cls: "note " + n.level, text: n.text })); });
  }
  function renderDomains() {
    var nav = clear(document.getElementById("domains"));
    nav.appendChild(el("h2", { text: "Domains" }));
    Object.keys(D.domains).sort().forEach(function (dom) {
      var n = D.domains[dom], dropped = domainDrops(dom);
      var b = el("button", { cls: "domain", type: "button", "data-domain": dom, "aria-pressed": String(dom === state.domain) },
        [dom, el("small", { text: (n == null ? "" : fmt(n) + " docs · ") + fmt(dropped) + " dropped" + (n ? " (" + pct(dropped / n) + ")" : "") })]);
      b.addEventListener("click", function () { selectDomain(dom); });
      nav.appendChild(b);
    });
  }
  function arrowNav(container, selector) {
    container.addEventListener("keydown", function (ev) {
      if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp") return;
      var items = Array.prototype.slice.call(container.querySelectorAll(selector));
      var i = items.indexOf(document.activeElement);
      if (i < 0) return;
      ev.preventDefault();
      var j = Math.max(0, Math.min(items.length - 1, i + (ev.key === "ArrowDown" ? 1 : -1)));
      items[j].focus();
    });
  }

  // ---------------------------------------------------------------- one domain
  function selectDomain(dom) {
    state.domain = dom; state.step = null; state.reason = null;
    Array.prototype.forEach.call(document.querySelectorAll("button.domain"), function (b) {
      b.setAttribute("aria-pressed", String(b.getAttribute("data-domain") === dom));
    });
    renderDomain();
    clear(document.getElementById("detail"));
  }
  function renderDomain() {
    var sec = clear(document.getElementById("domain")), dom = state.domain;
    if (dom == null) { sec.appendChild(el("p", { cls: "muted", text: "Choose a domain on the left." })); return; }
    var n = D.domains[dom], dropped = domainDrops(dom);
    sec.appendChild(el("h2", { text: "Domain " + dom }));
    var facts = [(n == null ? "documents in: n/a" : fmt(n) + " documents in"), fmt(dropped) + " dropped",
      (n ? "kept share " + pct(1 - dropped / n) : "")];
    if (D.domain_lang[dom]) facts.push("language " + D.domain_lang[dom]);
    sec.appendChild(el("p", { text: facts.filter(Boolean).join(" · ") }));
    if (D.fallback[dom]) sec.appendChild(el("p", { cls: "note warn", text: "calibration: " + D.fallback[dom] }));
    D.guard.filter(function (g) { return g.domain === dom; }).forEach(function (g) {
      sec.appendChild(el("p", { cls: "guard", text: "guard: " + g.step + " / " + g.reason + " removed " + pct(g.share) + " of the domain (limit " + pct(g.limit) + ")" }));
    });
    var filter = el("input", { type: "search", id: "rule-filter", placeholder: "filter rules (/)", "aria-label": "filter rules", value: state.filter });
    filter.addEventListener("input", function () { state.filter = filter.value; fillRules(); });
    sec.appendChild(el("p", null, [filter]));
    var t = el("table", { id: "rules", "aria-label": "rules of the domain" }), tr = el("tr");
    [["step", "Step"], ["reason", "Rule (drop reason)"], ["dropped", "Dropped"], ["share", "Share of domain"]].forEach(function (h, i) {
      var b = el("button", { type: "button", "data-sort": h[0], text: h[1] });
      b.addEventListener("click", function () {
        state.sortDir = state.sortKey === h[0] ? -state.sortDir : (i > 1 ? -1 : 1); state.sortKey = h[0]; fillRules();
      });
      tr.appendChild(el("th", { cls: i > 1 ? "num" : "", scope: "col" }, [b]));
    });
    t.appendChild(el("thead", null, [tr]));
    t.appendChild(el("tbody"));
    sec.appendChild(t);
    arrowNav(t, "tr.rule");
    fillRules();
    if (!ruleRows(dom).some(function (r) { return r.dropped > 0; }))
      sec.appendChild(el("p", { cls: "muted", id: "no-drops", text: "No document of this domain was dropped: rules are listed with their near-misses and histograms." }));
  }
  function fillRules() {
    var rows = ruleRows(state.domain), q = state.filter.toLowerCase();
    rows = rows.filter(function (r) { return !q || (r.step + " " + r.reason).toLowerCase().indexOf(q) >= 0; });
    rows.sort(function (a, b) {
      var x = a[state.sortKey], y = b[state.sortKey];
      return (x < y ? -1 : x > y ? 1 : 0) * state.sortDir || (a.step + a.reason < b.step + b.reason ? -1 : 1);
    });
    var tb = clear(document.querySelector("#rules tbody"));
    rows.forEach(function (r) {
      var sel = r.step === state.step && r.reason === state.reason;
      var row = el("tr", { cls: "rule" + (r.dropped ? "" : " zero"), tabindex: "0", role: "button", "aria-selected": String(sel),
        "data-step": r.step, "data-reason": r.reason }, [
        el("td", { text: r.step }), el("td", { text: r.reason }), el("td", { cls: "num", text: fmt(r.dropped) }),
        el("td", { cls: "num", text: pct(r.share) })]);
      function go() { selectRule(r.step, r.reason); }
      row.addEventListener("click", go);
      row.addEventListener("keydown", function (ev) { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); go(); } });
      tb.appendChild(row);
    });
  }

  // ---------------------------------------------------------------- one rule
  function selectRule(step, reason) {
    state.step = step; state.reason = reason;
    Array.prototype.forEach.call(document.querySelectorAll("#rules tr.rule"), function (r) {
      r.setAttribute("aria-selected", String(r.getAttribute("data-step") === step && r.getAttribute("data-reason") === reason));
    });
    renderDetail();
  }
  function histogram(h, rule) {
    var W = 520, H = 170, L = 36, B = 28, n = h.counts.length, max = Math.max.apply(null, h.counts.concat([1]));
    var s = svg("svg", { "class": "hist", width: W, height: H + 20, viewBox: "0 0 " + W + " " + (H + 20), role: "img",
      "aria-label": "histogram of " + rule.stat, "data-stat": rule.stat });
    s.appendChild(svg("title", {}, "histogram of " + rule.stat + " (" + h.scale + "), documents reaching the step"));
    var bw = (W - L - 8) / n;
    h.counts.forEach(function (c, i) {
      if (!c) return;
      var bh = (H - B - 10) * c / max;
      var r = svg("rect", { "class": "bar", x: L + i * bw, y: H - B - bh, width: Math.max(bw - 1, 1), height: bh });
      r.appendChild(svg("title", {}, fmt(c) + " documents in [" + (h.lo + i * (h.hi - h.lo) / n).toPrecision(3) + ", " + (h.lo + (i + 1) * (h.hi - h.lo) / n).toPrecision(3) + ")"));
      s.appendChild(r);
    });
    s.appendChild(svg("line", { x1: L, x2: W - 8, y1: H - B, y2: H - B, stroke: "#888" }));
    [h.lo, (h.lo + h.hi) / 2, h.hi].forEach(function (v, i) {
      s.appendChild(svg("text", { x: L + i * (W - L - 8) / 2, y: H - B + 14, "text-anchor": i === 0 ? "start" : i === 2 ? "end" : "middle" }, +v.toPrecision(3) + ""));
    });
    s.appendChild(svg("text", { x: 2, y: 12 }, fmt(max)));
    s.appendChild(svg("text", { x: W - 8, y: H - B + 28, "text-anchor": "end" }, rule.stat + (h.scale !== "linear" ? " (" + h.scale + ")" : "")));
    function mark(v, cls, label, y) {
      var f = (v - h.lo) / (h.hi - h.lo), off = f < 0 || f > 1, x = L + Math.max(0, Math.min(1, f)) * (W - L - 8);
      var line = svg("line", { "class": cls, x1: x, x2: x, y1: 8, y2: H - B, "data-value": v });
      line.appendChild(svg("title", {}, label + " " + v));
      s.appendChild(line);
      s.appendChild(svg("text", { "class": cls + "-label", x: Math.min(x + 3, W - 120), y: y }, label + " " + (+(+v).toPrecision(4)) + (off ? " (off scale)" : "")));
    }
    if (rule.threshold != null) mark(rule.threshold, "thr-domain", rule.global_threshold === rule.threshold ? "threshold (domain = global)" : "domain threshold", 18);
    if (rule.global_threshold != null && rule.global_threshold !== rule.threshold) mark(rule.global_threshold, "thr-global", "global threshold", 32);
    return s;
  }
  function sampleCard(x, extra) {
    var meta = "id " + x.id + " · " + fmt(x.chars) + " characters" + (x.cut ? " (first " + fmt(x.text.length) + " shown)" : "") + (extra ? " · " + extra : "");
    return el("div", { cls: "sample", "data-id": x.id }, [el("div", { cls: "meta", text: meta }), el("pre", { text: x.text })]);
  }
  function renderDetail() {
    var sec = clear(document.getElementById("detail")), s = state.step, dom = state.domain, reason = state.reason;
    sec.appendChild(el("h2", { text: s + " / " + reason + " in " + dom }));
    var rules = (get(D.rules, s, dom) || []).filter(function (r) { return matches(r.reason, reason); });
    var hists = el("div", { cls: "hists", id: "hists" }), nearBox = el("div", { id: "near" });
    if (!D.has_inspect) sec.appendChild(el("p", { cls: "note missing", text: "This run recorded no inspection data: no histogram, threshold or example." }));
    else if (!rules.length) sec.appendChild(el("p", { cls: "muted", text: "This step's statistic is not recorded (counts and dropped examples only)." }));
    rules.forEach(function (rule) {
      var txt = rule.stat + ": dropped when " + (rule.side === "low" ? "below " : "above ") + fmt(rule.threshold) + " in this domain" +
        (rule.global_threshold == null ? " (no global threshold)" : rule.global_threshold !== rule.threshold ? "; global " + fmt(rule.global_threshold) : " (same as global)") +
        (rule.note ? " — " + rule.note : "");
      sec.appendChild(el("p", { cls: "rule-desc", text: txt }));
      var h = get(D.hist, s, dom, rule.stat);
      if (h) {
        var box = el("figure", null, [histogram(h, rule), el("figcaption", { cls: "muted", text: fmt(h.counts.reduce(function (a, b) { return a + b; }, 0)) + " documents with a value" + (h.missing ? ", " + fmt(h.missing) + " without" : "") })]);
        hists.appendChild(box);
      } else hists.appendChild(el("p", { cls: "muted", text: "no document of this domain had a value of " + rule.stat }));
      var near = get(D.near, s, dom, rule.reason + "|" + rule.stat) || [];
      nearBox.appendChild(el("h3", { text: "Kept near-misses of " + rule.stat + " (" + near.length + ")" }));
      if (!near.length) nearBox.appendChild(el("p", { cls: "muted", text: "none recorded" }));
      near.forEach(function (x) { nearBox.appendChild(sampleCard(x, rule.stat + " " + fmt(x.value) + ", margin " + fmt(x.margin))); });
    });
    sec.appendChild(hists);
    var search = el("input", { type: "search", id: "sample-search", placeholder: "search examples", "aria-label": "search examples", value: state.search });
    search.addEventListener("input", function () { state.search = search.value; filterSamples(); });
    sec.appendChild(el("p", null, [search]));
    var drops = get(D.samples, s, dom, reason) || [], n = get(D.counts, s, dom, "dropped", reason) || 0;
    var dropBox = el("div", { id: "drops" }, [el("h3", { text: "Dropped examples (" + drops.length + " of " + fmt(n) + ", smallest sha1(id))" })]);
    if (!drops.length) dropBox.appendChild(el("p", { cls: "muted", text: n ? "texts not recorded for this rule (outside the run's per-domain budget, or not recorded)" : "no drop" }));
    drops.forEach(function (x) {
      var v = Object.keys(x.values || {}).filter(function (k) { return x.values[k] != null && rules.some(function (r) { return r.stat === k; }); })
        .map(function (k) { return k + " " + fmt(x.values[k]); }).join(", ");
      dropBox.appendChild(sampleCard(x, v));
    });
    sec.appendChild(el("div", { cls: "cols" }, [dropBox, nearBox]));
    filterSamples();
  }
  function filterSamples() {
    var q = state.search.toLowerCase();
    Array.prototype.forEach.call(document.querySelectorAll("#detail .sample"), function (c) {
      c.hidden = !!q && c.textContent.toLowerCase().indexOf(q) < 0;
    });
  }

  // ---------------------------------------------------------------- corpus-wide sections
  function renderLang() {
    var sec = clear(document.getElementById("lang"));
    var doms = Object.keys(D.lang).sort();
    if (!doms.length) return;
    sec.appendChild(el("h2", { text: "Language ID by domain (label: documents, of which dropped by the language filter)" }));
    var rows = doms.map(function (d) {
      var labels = D.lang[d], keys = Object.keys(labels).sort(function (a, b) { return labels[b][0] - labels[a][0] || (a < b ? -1 : 1); });
      var shown = keys.slice(0, 8).map(function (k) { return k + ": " + labels[k][0] + (labels[k][1] ? " (" + labels[k][1] + " dropped)" : ""); });
      if (keys.length > 8) shown.push("+" + (keys.length - 8) + " more labels");
      return [d, D.domain_lang[d] || "n/a", shown.join(" · ")];
    });
    sec.appendChild(table(["domain", "domain language", "fastText labels"], rows));
  }
  function renderClusters() {
    var sec = clear(document.getElementById("clusters")), c = D.clusters;
    if (!c || !c.top || !c.top.length) return;
    sec.appendChild(el("h2", { text: "Largest dedup clusters (" + fmt(c.with_duplicates) + " clusters with duplicates)" }));
    var t = table(["size", "exact", "near", "representative", "text"], c.top.map(function (r) { return [r.size, r.exact, r.near, r.cluster, r.text == null ? "(not found)" : r.text]; }), [1, 1, 1, 0, 0]);
    t.id = "cluster-table";
    sec.appendChild(t);
  }
  function renderSafety() {
    var sec = clear(document.getElementById("safety")), rows = [];
    Object.keys(D.decontam).sort().forEach(function (d) {
      Object.keys(D.decontam[d]).sort().forEach(function (b) { rows.push([b, d, D.decontam[d][b].flagged, D.decontam[d][b].dropped]); });
    });
    if (rows.length) {
      sec.appendChild(el("h2", { text: "Evaluation-set hits per benchmark" }));
      sec.appendChild(table(["benchmark", "domain", "documents flagged", "dropped"], rows, [0, 0, 1, 1]));
    }
    var tox = [];
    Object.keys(get(D.counts, "toxicity") || {}).sort().forEach(function (d) {
      var c = D.counts.toxicity[d];
      Object.keys(c.dropped).sort().forEach(function (r) { tox.push([d, r, c.dropped[r], c.docs_in ? pct(c.dropped[r] / c.docs_in) : "n/a"]); });
    });
    if (get(D.counts, "toxicity")) {
      sec.appendChild(el("h2", { text: "Toxicity drops per domain" }));
      if (tox.length) sec.appendChild(table(["domain", "reason", "dropped", "share of documents reaching the step"], tox, [0, 0, 1, 1]));
      else sec.appendChild(el("p", { cls: "muted", text: "the toxicity step dropped no document" }));
    }
  }
  function renderScores() {
    var sec = clear(document.getElementById("scores"));
    if (!D.scores) return;
    sec.appendChild(el("h2", { text: "Precision and recall per rule, from the labelled samples" }));
    sec.appendChild(table(["step", "rule", "labelled drops", "precision", "labelled near-misses", "recall in sample"],
      D.scores.rules.map(function (r) { return [r.step, r.rule, r.labelled_drops, r.precision, r.labelled_near, r.recall_in_sample]; }), [0, 0, 1, 1, 1, 1]));
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.key === "/" && document.activeElement.tagName !== "INPUT") {
      var f = document.getElementById("rule-filter");
      if (f) { ev.preventDefault(); f.focus(); }
    }
  });
  renderHeader();
  renderDomains();
  arrowNav(document.getElementById("domains"), "button.domain");
  renderDomain();
  renderLang();
  renderClusters();
  renderSafety();
  renderScores();
  document.body.setAttribute("data-ready", "1");
})();
