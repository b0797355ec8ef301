"use strict";
// strata's UI: reads the Prometheus HTTP API, as any client does.

const $ = (id) => document.getElementById(id);

async function api(path, params) {
  const url = params ? path + "?" + new URLSearchParams(params) : path;
  const resp = await fetch(url);
  const body = await resp.json().catch(() => null);
  if (!body) throw new Error(resp.status + " " + resp.statusText);
  if (body.status !== "success") throw new Error(body.error || resp.statusText);
  return body;
}

function text(s) { return document.createTextNode(String(s)); }

function row(tbody, cells, numeric) {
  const tr = document.createElement("tr");
  cells.forEach((c, i) => {
    const td = document.createElement("td");
    if (numeric && numeric[i]) td.className = "num";
    td.appendChild(text(c));
    tr.appendChild(td);
  });
  tbody.appendChild(tr);
  return tr;
}

function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); }

function seriesName(metric) {
  const name = metric.__name__ || "";
  const pairs = Object.keys(metric).filter((k) => k !== "__name__").sort()
    .map((k) => k + "=" + JSON.stringify(metric[k]));
  return name + "{" + pairs.join(", ") + "}";
}

// --- pages

const loaders = {
  query: () => {}, alerts: loadAlerts, rules: loadRules, targets: loadTargets, discovery: loadDiscovery,
  cardinality: loadCardinality, tsdb: loadTSDB, status: loadStatus,
};

function showPage() {
  const page = (location.hash || "#query").slice(1);
  const known = page in loaders ? page : "query";
  for (const id of Object.keys(loaders)) $("page-" + id).hidden = id !== known;
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.page === known));
  loaders[known]();
}

// --- query: panels, each with its expression, range, end and step, kept
// in the page's URL under Prometheus' parameter names (g0.expr,
// g0.tab, g0.range_input, g0.end_input, g0.step_input, ...), so that a
// graph can be shared and links made for Prometheus' /graph and /query
// open here.

const palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
const panels = [];
let panelSeq = 0;

const durationUnits = [["y", 31536000], ["w", 604800], ["d", 86400], ["h", 3600], ["m", 60], ["s", 1]];

// parseDuration reads a Prometheus duration (1h, 1d12h, 90s, 500ms) into
// seconds, or NaN.
function parseDuration(s) {
  const m = /^((\d+)y)?((\d+)w)?((\d+)d)?((\d+)h)?((\d+)m)?((\d+)s)?((\d+)ms)?$/.exec((s || "").trim());
  if (!m || !s.trim()) return NaN;
  const n = (i) => Number(m[i] || 0);
  return n(2) * 31536000 + n(4) * 604800 + n(6) * 86400 + n(8) * 3600 + n(10) * 60 + n(12) + n(14) / 1000;
}

function formatDuration(sec) {
  let out = "";
  for (const [u, n] of durationUnits) {
    if (sec >= n) { out += Math.floor(sec / n) + u; sec %= n; }
  }
  return out || "0s";
}

const pad = (n) => String(n).padStart(2, "0");

// Prometheus writes end_input as "2006-01-02 15:04:05", UTC.
function formatEnd(ms) {
  const d = new Date(ms);
  return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) + " " +
    pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds());
}

function parseEnd(s) {
  if (!s) return null;
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s) * 1000; // Unix seconds
  const t = Date.parse(s.replace(" ", "T") + (/[zZ]|[+-]\d\d:?\d\d$/.test(s) ? "" : "Z"));
  return Number.isNaN(t) ? null : t;
}

// The datetime-local input shows local time.
function toLocalInput(ms) {
  const d = new Date(ms);
  return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + "T" +
    pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
}

// panelsFromURL returns the panels the query string gives, in order.
function panelsFromURL(search) {
  const params = new URLSearchParams(search);
  const byIndex = new Map();
  for (const [k, v] of params) {
    const m = /^g(\d+)\.(.+)$/.exec(k);
    if (!m) continue;
    const i = Number(m[1]);
    if (!byIndex.has(i)) byIndex.set(i, {});
    byIndex.get(i)[m[2]] = v;
  }
  return [...byIndex.keys()].sort((a, b) => a - b).map((i) => {
    const g = byIndex.get(i);
    return {
      expr: g.expr || "",
      // 0 and 1 as Prometheus' first UI wrote them, names as its second.
      tab: g.tab === "1" || g.tab === "table" || g.tab === "console" ? "table" : "graph",
      range: g.range_input || "1h",
      end: parseEnd(g.end_input || g.moment_input),
      // Prometheus' second UI writes a fixed step as res_step.
      step: (g.res_type === "fixed" || g.res_type === "custom") && g.res_step ? g.res_step : g.step_input || "",
      stacked: g.stacked === "1" || g.display_mode === "stacked",
    };
  });
}

function urlOf(states) {
  const params = new URLSearchParams();
  states.forEach((st, i) => {
    params.set("g" + i + ".expr", st.expr);
    params.set("g" + i + ".tab", st.tab === "table" ? "1" : "0");
    params.set("g" + i + ".range_input", st.range);
    if (st.end !== null) params.set("g" + i + ".end_input", formatEnd(st.end));
    if (st.step) params.set("g" + i + ".step_input", st.step);
    if (st.stacked) params.set("g" + i + ".display_mode", "stacked");
  });
  return "?" + params.toString();
}

// saveState puts every panel's state in the URL and in local storage.
function saveState() {
  const states = panels.map((p) => p.state());
  history.replaceState(null, "", location.pathname + urlOf(states) + "#query");
  localStorage.setItem("strata.panels", JSON.stringify(states));
}

function autoStep(range) {
  return Math.max(1, Math.round(range / 250));
}

class Panel {
  constructor(st) {
    this.root = $("panel-template").content.firstElementChild.cloneNode(true);
    const q = (sel) => this.root.querySelector(sel);
    Object.assign(this, {
      form: q(".query-form"), expr: q(".expr-input"), suggest: q(".suggest"), range: q(".range"), end: q(".end"),
      step: q(".step"), stacked: q(".stacked"), info: q(".query-info"), error: q(".query-error"),
      graph: q(".graph"), legend: q(".legend"), table: q("table.result"),
    });
    this.modes = [...this.root.querySelectorAll("input.mode")];
    const name = "mode-" + panelSeq++;
    this.modes.forEach((r) => { r.name = name; r.checked = r.value === st.tab; });
    this.expr.value = st.expr;
    this.range.value = st.range;
    this.end.value = st.end !== null ? toLocalInput(st.end) : "";
    this.step.value = st.step;
    this.stacked.checked = st.stacked;
    this.plot = null;
    this.suggestions = [];
    this.selected = 0;
    this.form.addEventListener("submit", (e) => { e.preventDefault(); this.run(); });
    for (const el of [this.range, this.end, this.step, this.stacked, ...this.modes]) el.addEventListener("change", saveState);
    this.expr.addEventListener("input", () => this.showSuggest());
    this.expr.addEventListener("keydown", (e) => this.onKey(e));
    this.expr.addEventListener("blur", () => setTimeout(() => this.hideSuggest(), 100));
    q(".remove").addEventListener("click", () => removePanel(this));
  }

  state() {
    return {
      expr: this.expr.value.trim(),
      tab: this.modes.find((r) => r.checked).value,
      range: this.range.value.trim() || "1h",
      end: this.end.value ? new Date(this.end.value).getTime() : null,
      step: this.step.value.trim(),
      stacked: this.stacked.checked,
    };
  }

  async run() {
    const st = this.state();
    if (!st.expr) return;
    this.hideSuggest();
    saveState();
    this.error.hidden = true;
    const started = performance.now();
    try {
      const end = st.end !== null ? st.end / 1000 : Date.now() / 1000;
      if (st.tab === "graph") {
        const range = parseDuration(st.range);
        if (!(range > 0)) throw new Error("range " + JSON.stringify(st.range) + " is not a duration such as 1h or 2d12h");
        const step = st.step || String(autoStep(range));
        const body = await api("api/v1/query_range", { query: st.expr, start: end - range, end: end, step: step });
        this.drawGraph(body.data, end - range, end, Number(step) || parseDuration(step) || autoStep(range));
        this.showInfo(body, started);
      } else {
        const params = { query: st.expr };
        if (st.end !== null) params.time = end;
        const body = await api("api/v1/query", params);
        this.drawTable(body.data);
        this.showInfo(body, started);
      }
    } catch (e) {
      this.error.hidden = false;
      this.error.textContent = e.message;
    }
  }

  showInfo(body, started) {
    const n = Array.isArray(body.data.result) ? body.data.result.length : 1;
    let msg = "Load time: " + Math.round(performance.now() - started) + "ms, result series: " + n;
    if (body.warnings) msg += ", warnings: " + body.warnings.join("; ");
    this.info.textContent = msg;
  }

  drawTable(data) {
    this.table.hidden = false;
    this.graph.hidden = true;
    this.legend.hidden = true;
    const tbody = this.table.tBodies[0];
    clear(tbody);
    switch (data.resultType) {
    case "vector":
      for (const s of data.result) {
        row(tbody, [seriesName(s.metric), s.value ? s.value[1] : histogramText(s.histogram)], [false, true]);
      }
      break;
    case "matrix":
      for (const s of data.result) {
        const vals = (s.values || []).map((v) => v[1] + " @" + v[0]);
        row(tbody, [seriesName(s.metric), vals.join("\n")]);
      }
      break;
    default: // scalar, string
      row(tbody, ["(" + data.resultType + ")", data.result[1]], [false, true]);
    }
    if (!tbody.rows.length) row(tbody, ["no data", ""]);
  }

  drawGraph(data, start, end, step) {
    this.table.hidden = true;
    this.graph.hidden = false;
    this.legend.hidden = false;
    if (this.plot) { this.plot.destroy(); this.plot = null; }
    clear(this.legend);
    if (data.resultType !== "matrix") throw new Error("a range query gives a matrix, got " + data.resultType);
    const xs = [];
    for (let t = start; t <= end + 1e-9; t += step) xs.push(Math.round(t * 1000) / 1000);
    const index = new Map(xs.map((t, i) => [t.toFixed(3), i]));
    const series = data.result.map((s) => {
      const ys = new Array(xs.length).fill(null);
      for (const [t, v] of s.values || []) {
        const i = index.get(Number(t).toFixed(3));
        if (i !== undefined) ys[i] = Number(v);
      }
      return { name: seriesName(s.metric), ys };
    });
    const stacked = this.stacked.checked;
    if (stacked) {
      const acc = new Array(xs.length).fill(0);
      for (const s of series) {
        s.ys = s.ys.map((v, i) => (v === null ? null : (acc[i] += v)));
      }
    }
    const opts = {
      width: Math.max(400, this.graph.clientWidth || 900),
      height: 360,
      legend: { show: false },
      series: [{}].concat(series.map((s, i) => ({
        label: s.name, stroke: palette[i % palette.length], width: 1.5,
        fill: stacked ? palette[i % palette.length] + "33" : undefined,
      }))),
      axes: [{}, { size: 70 }],
    };
    this.plot = new uPlot(opts, [xs].concat(series.map((s) => s.ys)), this.graph);
    series.forEach((s, i) => {
      const div = document.createElement("div");
      const sw = document.createElement("span");
      sw.style.background = palette[i % palette.length];
      div.appendChild(sw);
      div.appendChild(text(s.name));
      this.legend.appendChild(div);
    });
  }

  // --- autocompletion: metric names, and label names inside braces or by ()

  currentToken() {
    const el = this.expr;
    const upto = el.value.slice(0, el.selectionStart);
    const m = /[a-zA-Z_:][a-zA-Z0-9_:.]*$/.exec(upto);
    if (!m) return null;
    const before = upto.slice(0, m.index);
    const open = before.lastIndexOf("{"), close = before.lastIndexOf("}");
    const inBraces = open > close;
    const inGrouping = /\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*$/.test(before);
    return { word: m[0], start: m.index, labels: inBraces || inGrouping };
  }

  showSuggest() {
    const tok = this.currentToken();
    if (!tok || tok.word.length < 1) return this.hideSuggest();
    const pool = tok.labels ? names.labels : names.metrics.concat(functions);
    const w = tok.word.toLowerCase();
    let found = pool.filter((n) => n.toLowerCase().startsWith(w) && n !== tok.word).slice(0, 50);
    if (!found.length) found = pool.filter((n) => n.toLowerCase().includes(w) && n !== tok.word).slice(0, 50);
    this.suggestions = found;
    clear(this.suggest);
    if (!found.length) return this.hideSuggest();
    this.selected = 0;
    found.forEach((s, i) => {
      const li = document.createElement("li");
      li.appendChild(text(s));
      if (i === 0) li.className = "sel";
      li.addEventListener("mousedown", (e) => { e.preventDefault(); this.accept(i); });
      this.suggest.appendChild(li);
    });
    this.suggest.hidden = false;
  }

  hideSuggest() { this.suggest.hidden = true; this.suggestions = []; }

  accept(i) {
    const tok = this.currentToken();
    if (!tok) return;
    const el = this.expr;
    const s = this.suggestions[i];
    el.value = el.value.slice(0, tok.start) + s + el.value.slice(el.selectionStart);
    el.selectionStart = el.selectionEnd = tok.start + s.length;
    this.hideSuggest();
    el.focus();
  }

  onKey(e) {
    const open = !this.suggest.hidden && this.suggestions.length;
    if (open && (e.key === "ArrowDown" || e.key === "ArrowUp")) {
      e.preventDefault();
      const n = this.suggestions.length;
      this.selected = (this.selected + (e.key === "ArrowDown" ? 1 : n - 1)) % n;
      [...this.suggest.children].forEach((li, i) => li.classList.toggle("sel", i === this.selected));
      return;
    }
    if (open && (e.key === "Tab" || e.key === "Enter")) {
      e.preventDefault();
      this.accept(this.selected);
      return;
    }
    if (e.key === "Escape") return this.hideSuggest();
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      this.run();
    }
  }
}

function histogramText(h) {
  return h ? "histogram count=" + h[1].count + " sum=" + h[1].sum : "";
}

const emptyPanel = () => ({ expr: "", tab: "graph", range: "1h", end: null, step: "", stacked: false });

function addPanel(st) {
  const p = new Panel(st || emptyPanel());
  panels.push(p);
  $("panels").appendChild(p.root);
  return p;
}

function removePanel(p) {
  panels.splice(panels.indexOf(p), 1);
  if (p.plot) p.plot.destroy();
  p.root.remove();
  if (!panels.length) addPanel();
  saveState();
}

// startPanels makes the panels of the URL, and runs those with an
// expression; without any, those of the last visit, or one empty one.
function startPanels() {
  let states = panelsFromURL(location.search);
  const fromURL = states.length > 0;
  if (!fromURL) {
    try {
      states = JSON.parse(localStorage.getItem("strata.panels") || "[]");
    } catch (e) { states = []; }
    if (!Array.isArray(states)) states = [];
    const old = localStorage.getItem("strata.expr"); // one panel's, as kept before
    if (!states.length && old) states = [{ ...emptyPanel(), expr: old }];
  }
  if (!states.length) states = [emptyPanel()];
  for (const st of states) addPanel({ ...emptyPanel(), ...st });
  if (fromURL) panels.filter((p) => p.expr.value.trim()).forEach((p) => p.run());
}

let names = { metrics: [], labels: [] };

async function loadNames() {
  try {
    const [m, l] = await Promise.all([api("api/v1/label/__name__/values"), api("api/v1/labels")]);
    names = { metrics: m.data, labels: l.data };
  } catch (e) { /* the server is not ready: no completion yet */ }
}

const functions = ["abs", "absent", "absent_over_time", "avg", "avg_over_time", "bottomk", "ceil", "changes", "clamp", "clamp_max", "clamp_min",
  "count", "count_over_time", "count_values", "delta", "deriv", "exp", "floor", "group", "histogram_avg", "histogram_count", "histogram_fraction",
  "histogram_quantile", "histogram_sum", "holt_winters", "idelta", "increase", "irate", "label_join", "label_replace", "last_over_time", "ln",
  "log10", "log2", "max", "max_over_time", "min", "min_over_time", "predict_linear", "present_over_time", "quantile", "quantile_over_time",
  "rate", "resets", "round", "scalar", "sort", "sort_desc", "sqrt", "stddev", "stddev_over_time", "stdvar", "sum", "sum_over_time", "time",
  "timestamp", "topk", "vector"];

// --- alerts and rules, from /api/v1/rules as Prometheus' UI reads them

function labelText(ls) {
  return Object.keys(ls || {}).sort().map((k) => k + "=" + JSON.stringify(ls[k])).join(", ");
}

function since(t) {
  if (!t || t.startsWith("0001-")) return "never";
  const s = Math.round((Date.now() - new Date(t).getTime()) / 1000);
  return new Date(t).toISOString() + " (" + s + "s ago)";
}

async function loadAlerts() {
  const tb = $("alerts-rules").tBodies[0];
  try {
    const groups = (await api("api/v1/rules", { type: "alert" })).data.groups;
    clear(tb);
    const counts = { firing: 0, pending: 0, inactive: 0 };
    for (const g of groups) {
      for (const r of g.rules) {
        counts[r.state] = (counts[r.state] || 0) + 1;
        const tr = tb.insertRow();
        tr.className = "rule-" + r.state;
        const head = tr.insertCell();
        head.colSpan = 6;
        head.appendChild(text(r.name + " (" + r.state + ", " + r.alerts.length + " active; " +
          g.file + " > " + g.name + "): " + r.query + (r.duration ? " for " + r.duration + "s" : "") +
          (r.lastError ? "; error: " + r.lastError : "")));
        for (const a of r.alerts) {
          row(tb, ["", a.state, labelText(a.labels), since(a.activeAt), a.value, labelText(a.annotations)]);
        }
      }
    }
    $("alerts-info").textContent = groups.length
      ? "Firing: " + counts.firing + ", pending: " + counts.pending + ", inactive: " + counts.inactive
      : "No alerting rules: give strata a configuration file (--config.file) with rule_files.";
  } catch (e) {
    $("alerts-info").textContent = "Alerts unavailable: " + e.message;
  }
}

async function loadRules() {
  const box = $("rules-groups");
  try {
    const groups = (await api("api/v1/rules")).data.groups;
    clear(box);
    for (const g of groups) {
      const h = document.createElement("h3");
      h.appendChild(text(g.name + " (" + g.file + "), every " + g.interval + "s; last evaluation " +
        since(g.lastEvaluation) + ", took " + g.evaluationTime.toFixed(6) + "s"));
      box.appendChild(h);
      const table = document.createElement("table");
      table.className = "rules";
      const tb = table.createTBody();
      row(tb, ["Rule", "Query", "Health", "Last error", "Last evaluation", "Took (s)"]);
      for (const r of g.rules) {
        row(tb, [(r.type === "alerting" ? "alert: " : "record: ") + r.name, r.query, r.health,
          r.lastError || "", since(r.lastEvaluation), r.evaluationTime.toFixed(6)]);
      }
      box.appendChild(table);
    }
    $("rules-info").textContent = groups.length ? groups.length + " groups"
      : "No rules: give strata a configuration file (--config.file) with rule_files.";
  } catch (e) {
    $("rules-info").textContent = "Rules unavailable: " + e.message;
  }
}

// --- targets and service discovery, from /api/v1/targets

// byPool groups targets by scrape pool, pools in order.
function byPool(targets) {
  const pools = {};
  for (const t of targets) (pools[t.scrapePool] = pools[t.scrapePool] || []).push(t);
  return Object.keys(pools).sort().map((p) => [p, pools[p]]);
}

function poolTable(box, title, header) {
  const h = document.createElement("h3");
  h.appendChild(text(title));
  box.appendChild(h);
  const table = document.createElement("table");
  table.className = "targets";
  const tb = table.createTBody();
  row(tb, header);
  box.appendChild(table);
  return tb;
}

async function loadTargets() {
  const box = $("targets-pools");
  try {
    const active = (await api("api/v1/targets", { state: "active" })).data.activeTargets;
    clear(box);
    let up = 0;
    for (const [pool, ts] of byPool(active)) {
      const healthy = ts.filter((t) => t.health === "up").length;
      up += healthy;
      const tb = poolTable(box, pool + " (" + healthy + "/" + ts.length + " up)",
        ["Endpoint", "State", "Labels", "Last scrape", "Took (s)", "Error"]);
      for (const t of ts) {
        const tr = row(tb, [t.scrapeUrl, t.health, labelText(t.labels), since(t.lastScrape),
          t.lastScrapeDuration.toFixed(3), t.lastError || ""]);
        tr.className = "target-" + t.health;
      }
    }
    $("targets-info").textContent = active.length
      ? up + " of " + active.length + " targets up"
      : "No targets: strata scrapes itself unless --self-scrape=false; a configuration file (--config.file) lists targets in scrape_configs.";
  } catch (e) {
    $("targets-info").textContent = "Targets unavailable: " + e.message;
  }
}

async function loadDiscovery() {
  const box = $("discovery-pools");
  try {
    const d = (await api("api/v1/targets")).data;
    clear(box);
    const all = d.activeTargets.concat(d.droppedTargets.map((t) => ({ ...t, dropped: true })));
    for (const [pool, ts] of byPool(all)) {
      const dropped = ts.filter((t) => t.dropped).length;
      const tb = poolTable(box, pool + " (" + (ts.length - dropped) + " active, " + (d.droppedTargetCounts[pool] || dropped) + " dropped)",
        ["Discovered labels", "Target labels"]);
      for (const t of ts) {
        const tr = row(tb, [labelText(t.discoveredLabels), t.dropped ? "dropped by relabelling" : labelText(t.labels)]);
        if (t.dropped) tr.className = "target-dropped";
      }
    }
    $("discovery-info").textContent = all.length
      ? all.length + " targets discovered in " + byPool(all).length + " scrape pools"
      : "Nothing discovered.";
  } catch (e) {
    $("discovery-info").textContent = "Service discovery unavailable: " + e.message;
  }
}

// --- cardinality

async function loadCardinality() {
  try {
    const d = (await api("api/v1/status/tsdb", { limit: 20 })).data;
    const h = d.headStats || {};
    $("card-head").textContent = "Series: " + h.numSeries + ", chunks: " + h.chunkCount +
      (h.minTime > 0 ? ", from " + new Date(h.minTime).toISOString() + " to " + new Date(h.maxTime).toISOString() : "");
    const fill = (id, list) => {
      const tb = $(id).tBodies[0];
      clear(tb);
      for (const e of list || []) row(tb, [e.name, e.value], [false, true]);
      if (!tb.rows.length) row(tb, ["none", ""]);
    };
    fill("card-metrics", d.seriesCountByMetricName);
    fill("card-labels", d.seriesCountByLabelName);
    fill("card-pairs", d.seriesCountByLabelValuePair);
    fill("card-values", d.labelValueCountByLabelName);
  } catch (e) {
    $("card-head").textContent = "Cardinality unavailable: " + e.message;
  }
}

// --- TSDB: the head, the blocks, compactions and retention

function bytesText(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + " " + units[i];
}

function timeText(ms) { return ms > 0 || ms < 0 ? new Date(ms).toISOString() : ""; }

async function loadTSDB() {
  const kv = (id, obj) => {
    const tb = $(id).tBodies[0];
    clear(tb);
    for (const k of Object.keys(obj)) row(tb, [k, obj[k]]);
  };
  try {
    const [st, blocks, runtime, metrics] = await Promise.all([
      api("api/v1/status/tsdb", { limit: 1 }), api("api/v1/status/blocks"), api("api/v1/status/runtimeinfo"),
      fetch("metrics").then((r) => r.text()),
    ]);
    const h = st.data.headStats || {};
    kv("tsdb-head", {
      series: h.numSeries, chunks: h.chunkCount, "label pairs": h.numLabelPairs,
      from: h.minTime <= h.maxTime ? timeText(h.minTime) : "", to: h.minTime <= h.maxTime ? timeText(h.maxTime) : "",
    });
    const m = {};
    for (const line of metrics.split("\n")) {
      const g = /^(strata_(?:compaction|compactions|retention|blocks)_[a-z_]+) (\S+)$/.exec(line);
      if (g) m[g[1]] = Number(g[2]);
    }
    kv("tsdb-compaction", {
      retention: runtime.data.storageRetention,
      compactions: m.strata_compactions_total, "compactions failed": m.strata_compactions_failed_total,
      "time compacting": (m.strata_compaction_duration_seconds_total || 0).toFixed(3) + " s",
      "blocks deleted by retention": m.strata_retention_deleted_blocks_total,
    });
    const tb = $("tsdb-blocks").tBodies[0];
    clear(tb);
    let total = 0;
    for (const b of blocks.data) {
      total += b.sizeBytes;
      row(tb, [b.ulid, timeText(b.minTime), timeText(b.maxTime), formatDuration(Math.round((b.maxTime - b.minTime + 1) / 1000)),
        b.numSeries, b.numSamples, b.numChunks, bytesText(b.sizeBytes), b.level], [false, false, false, false, true, true, true, true, true]);
    }
    $("tsdb-blocks-info").textContent = blocks.data.length
      ? blocks.data.length + " blocks, " + bytesText(total)
      : "No blocks yet: the head writes its oldest range to a block once it holds one and a half ranges (--storage.block-duration).";
  } catch (e) {
    kv("tsdb-head", { error: e.message });
  }
}

// --- status

async function loadStatus() {
  const kv = (id, obj) => {
    const tb = $(id).tBodies[0];
    clear(tb);
    for (const k of Object.keys(obj).sort()) row(tb, [k, obj[k]]);
  };
  try {
    kv("status-build", (await api("api/v1/status/buildinfo")).data);
    kv("status-runtime", (await api("api/v1/status/runtimeinfo")).data);
    kv("status-flags", (await api("api/v1/status/flags")).data);
    $("status-config").textContent = (await api("api/v1/status/config")).data.yaml;
    const ready = await fetch("-/ready");
    const head = (await api("api/v1/status/tsdb", { limit: 1 })).data.headStats || {};
    const store = {
      ready: ready.ok ? "yes" : "no (" + (await ready.text()).trim() + ")",
      "head series": head.numSeries, "head chunks": head.chunkCount,
      "head min time": head.minTime > 0 ? new Date(head.minTime).toISOString() : "",
      "head max time": head.maxTime > 0 ? new Date(head.maxTime).toISOString() : "",
    };
    // The WAL's and the head's own counters, from strata's metrics.
    const metrics = await (await fetch("metrics")).text();
    for (const line of metrics.split("\n")) {
      const m = /^(strata_(?:wal|head)_[a-z_]+) (\S+)$/.exec(line);
      if (m) store[m[1]] = m[2];
    }
    kv("status-store", store);
  } catch (e) {
    kv("status-store", { error: e.message });
  }
}

// --- start

$("add-panel").addEventListener("click", () => { addPanel().expr.focus(); saveState(); });
window.addEventListener("hashchange", showPage);
startPanels();
loadNames();
showPage();
