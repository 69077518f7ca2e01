/* streamvisor dashboard — a client of the HTTP API (docs/api.md) and
 * nothing else: the jobs table (GET /v1/jobs and each job's status), a job
 * page (status, GET /v1/jobs/{id}/history for the plots, checkpoints,
 * observations) and the lifecycle buttons (POST .../drain, resume, restart,
 * cancel). Hash routes: #/ and #/jobs/{id}. Every value from the API goes
 * into the page as text, never as HTML. Plots are uPlot (web/package.json),
 * embedded in the binary with this file. */
"use strict";

const REFRESH_MS = 2000;
const app = document.getElementById("app");
let timer = null;
let plots = [];
let view = null; // what the current page keeps between refreshes

function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

// A supervisor with authentication (auth.tokens_file) answers 401 without
// 'Authorization: Bearer <token>': the page then asks for a token and keeps
// it for this tab only (sessionStorage), never in the URL.
const TOKEN_KEY = "streamvisor-token";
function token() { return sessionStorage.getItem(TOKEN_KEY); }

async function api(path, opts) {
  const o = Object.assign({ cache: "no-store" }, opts);
  if (token()) o.headers = Object.assign({}, o.headers, { Authorization: "Bearer " + token() });
  const r = await fetch(path, o);
  const text = await r.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = { error: { message: text } }; }
  if (!r.ok) {
    const m = body && body.error ? body.error.message : r.statusText;
    const err = new Error(m || ("HTTP " + r.status));
    err.status = r.status;
    throw err;
  }
  return body;
}

function fmtNum(v, digits) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  const d = digits === undefined ? (Math.abs(v) >= 100 ? 0 : 1) : digits;
  return Number(v).toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: 0 });
}
function fmtSecs(s) {
  if (s === null || s === undefined) return "–";
  if (s < 60) return fmtNum(s, s < 10 ? 1 : 0) + " s";
  if (s < 3600) return Math.floor(s / 60) + " m " + Math.round(s % 60) + " s";
  return Math.floor(s / 3600) + " h " + Math.round((s % 3600) / 60) + " m";
}
function fmtBytes(b) {
  if (b === null || b === undefined) return "–";
  const u = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return fmtNum(b, i ? 1 : 0) + " " + u[i];
}
function ckAge(st) {
  const c = st.last_checkpoint;
  if (!c || !c.completed_at) return null;
  return Math.max(0, (Date.now() - Date.parse(c.completed_at)) / 1000);
}
function stateBadge(s) { return h("span", { class: "state " + s, "data-state": s }, s); }
function progressBar(p) {
  if (!p || p.percent === null || p.percent === undefined) return "–";
  return h("span", { class: "progress", "data-percent": p.percent.toFixed(1) },
    h("span", { class: "bar" }, h("span", { style: "width:" + Math.min(100, p.percent).toFixed(1) + "%" })),
    " " + p.percent.toFixed(1) + "%",
    p.eta_s !== null && p.eta_s > 0 ? " · ETA " + fmtSecs(p.eta_s) : "");
}
function stamp() {
  document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
}

/* ---- jobs page ---- */

async function renderJobs() {
  const list = await api("/v1/jobs");
  const jobs = await Promise.all(list.jobs.map((j) =>
    api("/v1/jobs/" + encodeURIComponent(j.id)).catch(() => j)));
  const head = ["job", "id", "mode", "state", "attempt", "lag (records)", "watermark lag",
                "in /s", "out /s", "last checkpoint", "progress"];
  const rows = jobs.map((s) => {
    const lag = s.lag || {};
    const rates = s.rates || {};
    const age = ckAge(s);
    return h("tr", { "data-job-id": s.id },
      h("td", null, h("a", { href: "#/jobs/" + encodeURIComponent(s.id) }, s.name)),
      h("td", { class: "muted" }, s.id),
      h("td", null, s.mode),
      h("td", { class: "job-state" }, stateBadge(s.state)),
      h("td", { class: "num" }, s.attempt),
      h("td", { class: "num" }, fmtNum(lag.records, 0)),
      h("td", { class: "num" }, fmtSecs(lag.seconds)),
      h("td", { class: "num" }, fmtNum(rates.records_in_per_s)),
      h("td", { class: "num" }, fmtNum(rates.records_out_per_s)),
      h("td", { class: "num" }, age === null ? "–" : fmtSecs(age) + " ago"),
      h("td", null, s.progress ? progressBar(s.progress)
                   : s.catch_up && s.catch_up.eta_s > 0 ? "catch-up ETA " + fmtSecs(s.catch_up.eta_s) : "–"));
  });
  const table = jobs.length
    ? h("table", { id: "jobs" }, h("thead", null, h("tr", null, head.map((c, i) =>
        h("th", { class: i >= 4 && i <= 9 ? "num" : null }, c)))), h("tbody", null, rows))
    : h("div", { class: "card empty" }, "no jobs yet: submit one with POST /v1/jobs (docs/api.md)");
  const byState = {};
  for (const j of jobs) byState[j.state] = (byState[j.state] || 0) + 1;
  const summary = h("p", { id: "summary" }, Object.keys(byState).sort().map((st) =>
    h("span", { class: "count" }, stateBadge(st), " " + byState[st])));
  app.replaceChildren(...[h("h1", null, "Jobs ", h("span", { class: "muted" }, "(" + jobs.length + ")")),
    jobs.length ? summary : null, table].filter((e) => e !== null));
  stamp();
}

/* ---- job page ---- */

// axis labels: 3.6M rather than 3,600,000 (keeps the axes narrow)
function compact(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return +(v / 1e9).toFixed(2) + "G";
  if (a >= 1e6) return +(v / 1e6).toFixed(2) + "M";
  if (a >= 1e4) return +(v / 1e3).toFixed(1) + "k";
  return +v.toFixed(3) + "";
}
const compactAxis = (u, splits) => splits.map((v) => (v === null ? "" : compact(v)));

function plot(el, title, series, data, opts) {
  const width = Math.max(320, el.clientWidth - 10);
  const u = new uPlot(Object.assign({
    title, width, height: 220,
    // a lone point gets a minute either side instead of uPlot's years
    scales: { x: { time: true, range: (u, lo, hi) => lo === hi ? [lo - 60, hi + 60] : [lo, hi] } },
    series: [{}].concat(series),
    axes: [{}, { scale: series[0].scale || "y", size: 60, values: compactAxis }]
      .concat((opts && opts.axes ? opts.axes : []).map((a) => Object.assign({ values: compactAxis }, a))),
  }, opts && opts.extra), data, el);
  el.dataset.points = String(data[0].length);
  plots.push(u);
  return u;
}

function jobFacts(s) {
  const lag = s.lag || {};
  const rates = s.rates || {};
  const age = ckAge(s);
  const f = (k, v) => h("div", null, h("span", null, k), v);
  return h("div", { class: "facts" },
    f("state", stateBadge(s.state)), f("mode", s.mode), f("delivery", s.delivery),
    f("attempt", s.attempt), f("restarts", s.restarts),
    f("lag", fmtNum(lag.records, 0) + " records · " + fmtSecs(lag.seconds)),
    f("in / out", fmtNum(rates.records_in_per_s) + " / " + fmtNum(rates.records_out_per_s) + " records/s"),
    f("records in / out", fmtNum(s.records_in, 0) + " / " + fmtNum(s.records_out, 0)),
    f("invalid / late", fmtNum(s.records_invalid, 0) + " / " + fmtNum(s.records_late, 0)),
    f("state size", fmtBytes(s.state_size ? s.state_size.bytes : null)),
    f("last checkpoint", age === null ? "none" : "#" + s.last_checkpoint.id + ", " + fmtSecs(age) + " ago"),
    s.progress ? f("progress", progressBar(s.progress)) : null,
    s.catch_up && s.catch_up.eta_s > 0 ? f("catch-up ETA", fmtSecs(s.catch_up.eta_s)) : null,
    f("plan", h("span", { class: "muted", title: s.plan_id }, (s.plan_id || "").slice(0, 12))));
}

async function act(id, action, body) {
  const out = document.getElementById("action-result");
  out.textContent = action + "…";
  try {
    const r = await api("/v1/jobs/" + encodeURIComponent(id) + "/" + action, {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: body ? JSON.stringify(body) : "{}",
    });
    out.textContent = action + ": " + (r && r.state ? r.state : "ok");
  } catch (e) {
    out.textContent = action + " refused: " + e.message;
  }
  refresh();
}

function actions(s) {
  const run = s.state === "running" || s.state === "lagging";
  const live = !["failed", "cancelled", "completed"].includes(s.state);
  const b = (name, enabled, body, confirmText) => h("button", {
    id: "btn-" + name, disabled: !enabled,
    onclick: () => { if (!confirmText || window.confirm(confirmText)) act(s.id, name, body); },
  }, name);
  return h("div", { class: "actions" },
    b("drain", run, { final_watermark: false }), b("resume", s.state === "checkpointed"),
    b("restart", live, { from_checkpoint: "latest" }),
    b("cancel", live, null, "Cancel job " + s.name + "? It ends without a final checkpoint."),
    h("span", { id: "action-result", class: "muted" }));
}

function table(id, head, rows, empty) {
  if (!rows.length) return h("div", { id, class: "card empty" }, empty);
  return h("table", { id }, h("thead", null, h("tr", null, head.map((c) => h("th", null, c)))),
    h("tbody", null, rows.map((r) => h("tr", null, r.map((c) => h("td", null, c))))));
}

async function renderJob(id) {
  const enc = encodeURIComponent(id);
  let s;
  try {
    s = await api("/v1/jobs/" + enc);
  } catch (e) {
    app.replaceChildren(h("p", null, h("a", { href: "#/" }, "← jobs")), h("div", { class: "error" }, e.message));
    return;
  }
  const [hist, cks] = await Promise.all([
    api("/v1/jobs/" + enc + "/history"),
    api("/v1/jobs/" + enc + "/checkpoints?limit=100").catch(() => ({ checkpoints: [] })),
  ]);
  if (!view || view.id !== id) view = { id, obs: [], after: 0 };
  const page = await api("/v1/jobs/" + enc + "/observations?after=" + view.after + "&limit=500");
  view.obs = view.obs.concat(page.observations).slice(-300);
  view.after = page.next_after;

  plots.forEach((p) => p.destroy());
  plots = [];
  const t = hist.series.t;
  const lagBox = h("div", { class: "card plot", id: "plot-lag" });
  const tputBox = h("div", { class: "card plot", id: "plot-throughput" });
  const ckBox = h("div", { class: "card plot", id: "plot-checkpoints" });
  const ckRows = cks.checkpoints.slice().reverse();
  app.replaceChildren(...[
    h("p", null, h("a", { href: "#/" }, "← jobs")),
    h("h1", null, s.name + " ", h("span", { class: "muted" }, s.id)),
    jobFacts(s),
    actions(s),
    s.error ? h("div", { class: "error", id: "job-error" },
      h("b", null, s.error.category), " (attempt " + s.error.attempt + "): " + s.error.message,
      s.error.field ? " [" + s.error.field + "]" : "") : null,
    h("h2", null, "Last hour ", h("span", { class: "muted" }, "(a sample every " + hist.interval_ms / 1000 + " s)")),
    h("div", { class: "grid" }, lagBox, tputBox),
    h("h2", null, "Checkpoints"),
    h("div", { class: "grid" }, ckBox,
      table("checkpoints", ["id", "attempt", "completed", "duration", "bytes", "watermark"],
        cks.checkpoints.slice(0, 20).map((c) => [c.id, c.attempt, c.completed_at || "–",
          fmtNum(c.duration_ms, 0) + " ms", fmtBytes(c.bytes),
          c.watermark_ms ? new Date(c.watermark_ms).toISOString() : "–"]),
        "no checkpoints stored")),
    h("h2", null, "Partitions"),
    table("partitions", ["topic", "partition", "next offset", "end offset", "lag (records)"],
      (s.partitions || []).map((p) => [p.topic || "–", p.partition, fmtNum(p.next_offset, 0),
        p.end_offset < 0 ? "–" : fmtNum(p.end_offset, 0), fmtNum(p.lag_records, 0)]),
      "no partitions (no attempt running)"),
    h("h2", null, "Observations ", h("span", { class: "muted" }, "(newest first)")),
    h("div", { class: "card obs" }, table("observations", ["seq", "time", "attempt", "kind", "facts"],
      view.obs.slice().reverse().slice(0, 100).map((o) => {
        const rest = Object.assign({}, o);
        for (const k of ["seq", "time", "time_ms", "job_id", "attempt", "kind"]) delete rest[k];
        return [o.seq, o.time, o.attempt, o.kind, JSON.stringify(rest)];
      }), "no observations"))].filter((e) => e !== null));
  plot(lagBox, "Lag", [
    { label: "records", stroke: "#2b6cb0", width: 2, scale: "rec" },
    { label: "watermark lag (s)", stroke: "#b7791f", width: 2, scale: "s" },
  ], [t, hist.series.lag_records, hist.series.lag_seconds], {
    axes: [{ scale: "s", side: 1, grid: { show: false }, size: 50 }],
  });
  plot(tputBox, "Throughput (records/s)", [
    { label: "in", stroke: "#1f8f4e", width: 2 },
    { label: "out", stroke: "#805ad5", width: 2 },
  ], [t, hist.series.records_in_per_s, hist.series.records_out_per_s]);
  plot(ckBox, "Checkpoint duration and size", [
    { label: "duration (ms)", stroke: "#c53030", width: 2, scale: "ms", points: { show: true } },
    { label: "bytes", stroke: "#2b6cb0", width: 1, scale: "b", points: { show: true } },
  ], [ckRows.map((c) => Date.parse(c.completed_at || c.started_at) / 1000),
      ckRows.map((c) => c.duration_ms), ckRows.map((c) => c.bytes)], {
    axes: [{ scale: "b", side: 1, grid: { show: false }, size: 60 }],
  });
  stamp();
}

/* ---- routing ---- */

async function refresh() {
  clearTimeout(timer);
  const m = location.hash.match(/^#\/jobs\/([^/?]+)/);
  try {
    if (m) await renderJob(decodeURIComponent(m[1]));
    else { view = null; await renderJobs(); }
    document.body.dataset.ready = "1";
  } catch (e) {
    if (e.status === 401) {
      askToken(e.message);
      return; // no refresh until a token is given
    }
    app.replaceChildren(h("div", { class: "error" }, "cannot reach the API: " + e.message));
  }
  timer = setTimeout(refresh, REFRESH_MS);
}

function askToken(why) {
  const input = h("input", { type: "password", id: "token", size: 40, autocomplete: "off" });
  const use = () => { sessionStorage.setItem(TOKEN_KEY, input.value.trim()); refresh(); };
  input.addEventListener("keydown", (ev) => { if (ev.key === "Enter") use(); });
  app.replaceChildren(h("div", { class: "card" },
    h("h1", null, "This supervisor needs a token"),
    h("p", { class: "muted" }, why),
    h("p", null, "API token: ", input, " ", h("button", { onclick: use }, "use")),
    h("p", { class: "muted" }, "Kept in this tab only; a viewer token shows the jobs, an operator token also drains, resumes, restarts and cancels.")));
  input.focus();
}

window.addEventListener("hashchange", () => { plots.forEach((p) => p.destroy()); plots = []; refresh(); });
api("/v1/info").then((i) => {
  document.getElementById("identity").textContent = i.supervisor_identity + " · v" + i.backend_version;
}).catch(() => {});
refresh();
