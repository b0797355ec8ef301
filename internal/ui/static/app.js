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
  cardinality: loadCardinality, status: loadStatus,
};

function showPage() {
  const page = (location.hash || "#query").slice(1);
  const known = page in loaders ? page : "query";
  for (const id of Object.keys(loaders)) $("page-" + id).hidden = id !== known;
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.page === known));
  loaders[known]();
}

// --- query

let plot = null;
const palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

function endTime() {
  const v = $("end").value;
  return v ? new Date(v).getTime() / 1000 : Date.now() / 1000;
}

function autoStep(range) {
  return Math.max(1, Math.round(range / 250));
}

async function runQuery(ev) {
  if (ev) ev.preventDefault();
  const expr = $("expr").value.trim();
  if (!expr) return;
  hideSuggest();
  history.replaceState(null, "", "#query");
  localStorage.setItem("strata.expr", expr);
  $("query-error").hidden = true;
  const started = performance.now();
  try {
    if (document.querySelector("input[name=mode]:checked").value === "graph") {
      const range = Number($("range").value);
      const end = endTime();
      const step = $("step").value.trim() || String(autoStep(range));
      const body = await api("api/v1/query_range", { query: expr, start: end - range, end: end, step: step });
      drawGraph(body.data, end - range, end, Number(step) || autoStep(range));
      info(body, started);
    } else {
      const params = { query: expr };
      if ($("end").value) params.time = endTime();
      const body = await api("api/v1/query", params);
      drawTable(body.data);
      info(body, started);
    }
  } catch (e) {
    $("query-error").hidden = false;
    $("query-error").textContent = e.message;
  }
}

function info(body, started) {
  const n = Array.isArray(body.data.result) ? body.data.result.length : 1;
  let msg = "Load time: " + Math.round(performance.now() - started) + "ms, result series: " + n;
  if (body.warnings) msg += ", warnings: " + body.warnings.join("; ");
  $("query-info").textContent = msg;
}

function drawTable(data) {
  $("table").hidden = false;
  $("graph").hidden = true;
  $("legend").hidden = true;
  const tbody = $("table").tBodies[0];
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

function histogramText(h) {
  return h ? "histogram count=" + h[1].count + " sum=" + h[1].sum : "";
}

function drawGraph(data, start, end, step) {
  $("table").hidden = true;
  $("graph").hidden = false;
  $("legend").hidden = false;
  if (plot) { plot.destroy(); plot = null; }
  clear($("legend"));
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
  if ($("stacked").checked) {
    const acc = new Array(xs.length).fill(0);
    for (const s of series) {
      s.ys = s.ys.map((v, i) => (v === null ? null : (acc[i] += v)));
    }
  }
  const opts = {
    width: Math.max(400, $("graph").clientWidth || 900),
    height: 360,
    legend: { show: false },
    series: [{}].concat(series.map((s, i) => ({
      label: s.name, stroke: palette[i % palette.length], width: 1.5,
      fill: $("stacked").checked ? palette[i % palette.length] + "33" : undefined,
    }))),
    axes: [{}, { size: 70 }],
  };
  plot = new uPlot(opts, [xs].concat(series.map((s) => s.ys)), $("graph"));
  series.forEach((s, i) => {
    const div = document.createElement("div");
    const sw = document.createElement("span");
    sw.style.background = palette[i % palette.length];
    div.appendChild(sw);
    div.appendChild(text(s.name));
    $("legend").appendChild(div);
  });
}

// --- autocompletion: metric names, and label names inside braces or by ()

let names = { metrics: [], labels: [] };
let suggestions = [];
let selected = 0;

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

function currentToken() {
  const el = $("expr");
  const upto = el.value.slice(0, el.selectionStart);
  const m = /[a-zA-Z_:][a-zA-Z0-9_:.]*$/.exec(upto);
  if (!m) return null;
  const before = upto.slice(0, m.index);
  const open = before.lastIndexOf("{"), close = before.lastIndexOf("}");
  const inBraces = open > close;
  const inGrouping = /\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*$/.test(before);
  return { word: m[0], start: m.index, labels: inBraces || inGrouping };
}

function showSuggest() {
  const tok = currentToken();
  if (!tok || tok.word.length < 1) return hideSuggest();
  const pool = tok.labels ? names.labels : names.metrics.concat(functions);
  const w = tok.word.toLowerCase();
  suggestions = pool.filter((n) => n.toLowerCase().startsWith(w) && n !== tok.word).slice(0, 50);
  if (!suggestions.length) {
    suggestions = pool.filter((n) => n.toLowerCase().includes(w) && n !== tok.word).slice(0, 50);
  }
  const ul = $("suggest");
  clear(ul);
  if (!suggestions.length) return hideSuggest();
  selected = 0;
  suggestions.forEach((s, i) => {
    const li = document.createElement("li");
    li.appendChild(text(s));
    if (i === 0) li.className = "sel";
    li.addEventListener("mousedown", (e) => { e.preventDefault(); accept(i); });
    ul.appendChild(li);
  });
  ul.hidden = false;
}

function hideSuggest() { $("suggest").hidden = true; suggestions = []; }

function accept(i) {
  const tok = currentToken();
  if (!tok) return;
  const el = $("expr");
  const s = suggestions[i];
  el.value = el.value.slice(0, tok.start) + s + el.value.slice(el.selectionStart);
  el.selectionStart = el.selectionEnd = tok.start + s.length;
  hideSuggest();
  el.focus();
}

function onKey(e) {
  const open = !$("suggest").hidden && suggestions.length;
  if (open && (e.key === "ArrowDown" || e.key === "ArrowUp")) {
    e.preventDefault();
    selected = (selected + (e.key === "ArrowDown" ? 1 : suggestions.length - 1)) % suggestions.length;
    [...$("suggest").children].forEach((li, i) => li.classList.toggle("sel", i === selected));
    return;
  }
  if (open && (e.key === "Tab" || e.key === "Enter")) {
    e.preventDefault();
    accept(selected);
    return;
  }
  if (e.key === "Escape") return hideSuggest();
  if (e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    runQuery();
  }
}

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

$("query-form").addEventListener("submit", runQuery);
$("expr").addEventListener("input", showSuggest);
$("expr").addEventListener("keydown", onKey);
$("expr").addEventListener("blur", () => setTimeout(hideSuggest, 100));
window.addEventListener("hashchange", showPage);
$("expr").value = localStorage.getItem("strata.expr") || "";
loadNames();
showPage();
