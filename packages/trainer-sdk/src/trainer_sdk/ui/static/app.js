// trainer ui: the job list, job pages (steps, conditions, events, live logs, metric charts,
// YAML, stop/delete) and the runtimes page, over the JSON API of server.py. No build step.
"use strict";

const REFRESH_MS = 2000;
const STATUSES = ["Created", "Running", "Complete", "Failed", "Stopped", "Suspended", "Preempted"];
const ACTIVE = new Set(["Created", "Running"]); // a job whose duration still grows and that can be stopped
const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563"];
let info = { backend: "", canStop: false, canDelete: false };
let page = null; // the current page: { stop() }

// -- helpers --------------------------------------------------------------------------------
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "className") node.className = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

async function api(path, options = {}) {
  const response = await fetch(path, {
    ...options,
    headers: { "X-Trainer-UI": "1", ...(options.headers || {}) },
    credentials: "same-origin",
  });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message;
  box.hidden = !message;
}

function seconds(value) {
  if (value === null || value === undefined) return "";
  const s = Math.round(value);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600)}h`;
}

function badge(status) {
  return el("span", { className: `badge ${String(status).toLowerCase()}`, "data-status": status }, status);
}

function fill(percent) {
  const node = el("div", { className: "fill" });
  node.style.width = `${percent}%`; // a CSSOM write: the page's CSP allows no inline style
  return node;
}

function progressCell(job) {
  if (job.progress === null || job.progress === undefined) return "";
  const eta = job.eta !== null && job.eta !== undefined && job.status === "Running" ? ` ETA ${seconds(job.eta)}` : "";
  return el("div", { className: "progress" },
    el("div", { className: "bar" }, fill(job.progress)),
    el("span", {}, `${job.progress}%${eta}`));
}

function poll(task) {
  let timer = null;
  let stopped = false;
  const run = async () => {
    try {
      await task();
      showError("");
    } catch (error) {
      showError(String(error.message || error));
    }
    if (!stopped) timer = setTimeout(run, REFRESH_MS);
  };
  run();
  return () => { stopped = true; clearTimeout(timer); };
}

// -- job list -------------------------------------------------------------------------------
// The server searches, sorts and pages (GET /api/jobs?q=&status=&sort=&order=&offset=&limit=);
// the page revalidates with If-None-Match and, on 304, only advances the ages it shows.
const PAGE_SIZE = 50;
const MAX_VALUE_COLUMNS = 6; // func_args and metric columns each, the most seen on a page

function shortValue(value) {
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toPrecision(4);
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > 24 ? `${text.slice(0, 23)}…` : text;
}

function columnsOf(jobs, field) {
  const counts = new Map();
  for (const job of jobs) for (const key of Object.keys(job[field] || {})) counts.set(key, (counts.get(key) || 0) + 1);
  return [...counts.keys()].sort((a, b) => counts.get(b) - counts.get(a) || a.localeCompare(b)).slice(0, MAX_VALUE_COLUMNS).sort();
}

function jobList(main) {
  document.title = "TrainJobs · Trainer";
  const status = el("select", { id: "filter-status" }, el("option", { value: "" }, "All statuses"),
    STATUSES.map((s) => el("option", { value: s }, s)));
  const search = el("input", { type: "search", id: "job-search", placeholder: "Search: name, status, runtime, lr=0.1, team=nlp" });
  const head = el("thead");
  const body = el("tbody");
  const table = el("table", { id: "jobs" }, head, body);
  const pager = el("div", { className: "filters", id: "pager" });
  const compareButton = el("button", { id: "compare-selected", disabled: true }, "Compare selected");
  const deleteButton = el("button", { id: "delete-selected", className: "danger", disabled: true }, "Delete selected");
  const actions = el("div", { className: "actions" }, compareButton, info.canDelete ? deleteButton : null);
  main.replaceChildren(el("h1", {}, "TrainJobs"), el("div", { className: "filters" }, search, status), actions, table, pager);
  const view = { sort: "created", order: "desc", offset: 0 };
  const selected = new Set();
  let jobs = [];
  let total = 0;
  let etag = null;
  let fetchedAt = performance.now();
  const sortHeader = (label, key) => {
    const mark = view.sort === key ? (view.order === "desc" ? " ▼" : " ▲") : "";
    return el("th", { className: "sortable", "data-sort": key, onclick: () => {
      view.order = view.sort === key && view.order === "desc" ? "asc" : "desc";
      view.sort = key; view.offset = 0; reload();
    } }, label + mark);
  };
  const updateActions = () => {
    compareButton.disabled = selected.size < 1;
    deleteButton.disabled = selected.size < 1;
    compareButton.textContent = `Compare selected (${selected.size})`;
    deleteButton.textContent = `Delete selected (${selected.size})`;
  };
  const render = () => {
    const args = columnsOf(jobs, "funcArgs");
    const metrics = columnsOf(jobs, "latest");
    const elapsed = (performance.now() - fetchedAt) / 1000;
    const all = el("input", { type: "checkbox", id: "select-all", title: "Select this page", checked: jobs.length > 0 && jobs.every((job) => selected.has(job.name)),
      onchange: (event) => { jobs.forEach((job) => (event.target.checked ? selected.add(job.name) : selected.delete(job.name))); render(); } });
    head.replaceChildren(el("tr", {}, el("th", {}, all), sortHeader("Name", "name"), sortHeader("Status", "status"),
      sortHeader("Runtime", "runtime"), sortHeader("Nodes", "nodes"),
      args.map((key) => sortHeader(key, `arg:${key}`)), el("th", {}, "Labels"),
      metrics.map((key) => sortHeader(`${key} (last)`, `metric:${key}`)),
      sortHeader("Progress", "progress"), sortHeader("Age", "created"), sortHeader("Duration", "duration")));
    const running = (job) => ACTIVE.has(job.status);
    body.replaceChildren(...jobs.map((job) => el("tr", { "data-job": job.name },
      el("td", {}, el("input", { type: "checkbox", className: "select", "data-job": job.name, checked: selected.has(job.name),
        onchange: (event) => { if (event.target.checked) selected.add(job.name); else selected.delete(job.name); updateActions(); } })),
      el("td", {}, el("a", { href: `#/jobs/${encodeURIComponent(job.name)}` }, job.name)),
      el("td", { className: "status" }, badge(job.status)),
      el("td", {}, job.runtime),
      el("td", {}, job.nodes),
      args.map((key) => el("td", { className: "arg", "data-arg": key }, key in job.funcArgs ? shortValue(job.funcArgs[key]) : "")),
      el("td", { className: "labels" }, Object.entries(job.labels).map(([key, value]) => el("span", { className: "chip" }, `${key}=${value}`))),
      metrics.map((key) => el("td", { className: "metric", "data-metric": key }, key in job.latest ? shortValue(job.latest[key]) : "")),
      el("td", {}, progressCell(job)),
      el("td", { className: "age" }, seconds(job.age + elapsed)),
      el("td", { className: "duration" }, seconds(job.duration === null ? null : job.duration + (running(job) ? elapsed : 0))))));
    const columns = 10 + args.length + metrics.length;
    if (!jobs.length) body.append(el("tr", {}, el("td", { colspan: columns, className: "empty" }, "No TrainJobs found")));
    const last = Math.min(total, view.offset + jobs.length);
    pager.replaceChildren(
      el("button", { id: "page-previous", disabled: view.offset === 0, onclick: () => { view.offset = Math.max(0, view.offset - PAGE_SIZE); reload(); } }, "← Newer"),
      el("span", { id: "page-range" }, total ? `${view.offset + 1}–${last} of ${total}` : "0 of 0"),
      el("button", { id: "page-next", disabled: last >= total, onclick: () => { view.offset += PAGE_SIZE; reload(); } }, "Older →"));
    updateActions();
  };
  const tick = () => { // the clock moved, nothing else: advance ages and running durations in place
    const elapsed = (performance.now() - fetchedAt) / 1000;
    jobs.forEach((job, index) => {
      const row = body.children[index];
      if (!row || row.dataset.job !== job.name) return;
      row.querySelector("td.age").textContent = seconds(job.age + elapsed);
      const running = ACTIVE.has(job.status);
      if (job.duration !== null) row.querySelector("td.duration").textContent = seconds(job.duration + (running ? elapsed : 0));
    });
  };
  const load = async () => {
    const query = new URLSearchParams({ q: search.value, status: status.value, sort: view.sort, order: view.order, offset: view.offset, limit: PAGE_SIZE });
    const response = await fetch(`/api/jobs?${query}`, { headers: etag ? { "If-None-Match": etag } : {}, credentials: "same-origin" });
    if (response.status === 304) { tick(); return; }
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.error || response.statusText);
    jobs = answer;
    total = Number(response.headers.get("X-Total-Count") || jobs.length);
    etag = response.headers.get("ETag");
    fetchedAt = performance.now();
    render();
  };
  const reload = () => { etag = null; load().catch((error) => showError(String(error.message || error))); };
  status.addEventListener("change", () => { view.offset = 0; reload(); });
  let typing = 0;
  search.addEventListener("input", () => { // one request when typing pauses, not one per key
    clearTimeout(typing);
    typing = setTimeout(() => { view.offset = 0; reload(); }, 200);
  });
  compareButton.addEventListener("click", () => { location.hash = `#/compare/${[...selected].map(encodeURIComponent).join(",")}`; });
  deleteButton.addEventListener("click", async () => {
    const names = [...selected];
    if (!window.confirm(`Delete ${names.length} TrainJob(s)? ${names.join(", ")}. This cannot be undone.`)) return;
    try {
      for (const job of names) await api(`/api/jobs/${encodeURIComponent(job)}/delete`, { method: "POST" });
    } catch (error) {
      showError(String(error.message || error));
    }
    names.forEach((job) => selected.delete(job));
    reload();
  });
  return { stop: poll(load) };
}

// -- logs -----------------------------------------------------------------------------------
// The panel opens on the log's tail: the stream starts LOG_WINDOW lines before the end (a first
// "skipped" event says how many lines come before them) and follows. Lines arrive in batches (a
// server-sent event each), are queued and taken in once per frame; only new lines are matched
// against the filter. The lines are held in memory (while following, the last LOG_WINDOW) and
// the DOM holds only the rows in sight (logView): a frame's work does not grow with the log.
// Scrolling to the top loads the EARLIER_LINES before the first one held (by line range) and
// stops following; then MAX_LINES are held at most. The whole log is one Download or one
// server-side search away.
const LOG_WINDOW = 5000;
const EARLIER_LINES = 2000;
const MAX_LINES = 20000;
const ALL_STEPS = "*";
const OVERSCAN_ROWS = 10; // rows drawn above and below the ones in sight, for smooth scrolling

// A scrolling view of many lines that keeps only the rows in sight in the DOM: every row is one
// line (no wrapping: long lines scroll sideways) and as tall as any other, so a row's place is
// its index times the line height. `show(lines, follow)` sets what the view holds;
// `onScroll(fn)` is called when the user scrolls.
function logView() {
  const rows = el("div", { className: "rows" });
  const sizer = el("div", { className: "sizer" }, rows);
  const box = el("div", { id: "log", className: "log" }, sizer);
  let lines = [];
  let rowHeight = 0;
  let frame = 0;
  const draw = () => {
    frame = 0;
    rowHeight = rowHeight || parseFloat(getComputedStyle(box).lineHeight) || 17;
    sizer.style.height = `${lines.length * rowHeight}px`;
    const first = Math.max(0, Math.floor(box.scrollTop / rowHeight) - OVERSCAN_ROWS);
    const count = Math.max(0, Math.min(lines.length - first, Math.ceil(box.clientHeight / rowHeight) + 2 * OVERSCAN_ROWS));
    rows.style.transform = `translateY(${first * rowHeight}px)`;
    while (rows.childElementCount < count) rows.append(el("div", { className: "line" }));
    while (rows.childElementCount > count) rows.lastElementChild.remove();
    for (let index = 0; index < count; index += 1) {
      const row = rows.children[index];
      if (row.textContent !== lines[first + index]) row.textContent = lines[first + index];
    }
  };
  const redraw = () => { if (!frame) frame = requestAnimationFrame(draw); };
  box.addEventListener("scroll", redraw);
  return {
    element: box,
    show(held, follow) {
      lines = held;
      rowHeight = rowHeight || parseFloat(getComputedStyle(box).lineHeight) || 17;
      sizer.style.height = `${lines.length * rowHeight}px`;
      if (follow) box.scrollTop = box.scrollHeight;
      draw();
    },
    // Keeps the row at the top in place when `added` rows are put above it.
    prepended(added) { box.scrollTop += added * (rowHeight || 17); },
    onScroll(handler) { box.addEventListener("scroll", () => handler(box.scrollTop)); },
    stop() { if (frame) cancelAnimationFrame(frame); },
  };
}

function logPanel(name, steps, firstStep) {
  const options = steps.map((step) => el("option", { value: step }, step));
  if (steps.length > 1) options.push(el("option", { value: ALL_STEPS }, "All steps"));
  const select = el("select", { id: "log-step" }, options);
  select.value = steps.includes(firstStep) ? firstStep : steps[0];
  const follow = el("input", { type: "checkbox", id: "log-follow", checked: true });
  const search = el("input", { type: "search", id: "log-search", placeholder: "Filter (Enter: search the whole log)" });
  const count = el("span", { id: "log-count" });
  const download = el("a", { id: "log-download", download: "" }, "Download");
  const view = logView();
  const results = el("div", { id: "log-results", className: "log results", hidden: true });
  const job = encodeURIComponent(name);
  let sources = [];
  let pending = [];
  let frame = 0;
  let lines = []; // the lines held, oldest first
  let shown = lines; // those matching the filter (the same array without one)
  let total = 0; // lines of the log, held or not
  let first = 0; // the number of the first line held (one step only)
  let loading = false;
  let ended = 0;
  const needle = () => search.value.toLowerCase();
  const matching = (wanted) => (wanted ? lines.filter((line) => line.toLowerCase().includes(wanted)) : lines);
  const showCount = () => {
    const held = lines.length;
    const range = select.value === ALL_STEPS ? `the last ${held}` : `lines ${first + 1}-${first + held}`;
    const heldText = total > held ? `, ${range} shown` : "";
    const done = sources.length && ended === sources.length ? " (ended)" : "";
    count.textContent = (needle() ? `${shown.length} matching` : `${total} lines`) + heldText + done;
    view.element.dataset.held = String(held);
    view.element.dataset.first = String(first);
  };
  const flush = () => {
    frame = 0;
    const wanted = needle();
    const limit = follow.checked ? LOG_WINDOW : MAX_LINES;
    total += pending.length;
    const arrived = pending.length > limit ? pending.slice(-limit) : pending;
    pending = [];
    lines.push(...arrived);
    if (wanted) shown.push(...arrived.filter((line) => line.toLowerCase().includes(wanted)));
    if (lines.length > limit) {
      lines = lines.slice(lines.length - limit);
      shown = matching(wanted);
    }
    first = total - lines.length;
    showCount();
    view.show(shown, follow.checked);
  };
  const receive = (batch, prefix) => { // a JSON list of lines per event (empty: keep-alive)
    for (const text of batch) pending.push(prefix + text);
    if (batch.length && !frame) frame = requestAnimationFrame(flush);
  };
  const loadEarlier = async () => { // the lines before the first one held, above it
    if (loading || first === 0 || select.value === ALL_STEPS || lines.length >= MAX_LINES) return;
    loading = true;
    follow.checked = false;
    const start = Math.max(0, first - EARLIER_LINES);
    try {
      const response = await fetch(`/api/jobs/${job}/logs?step=${encodeURIComponent(select.value)}&start=${start}&count=${first - start}`,
        { credentials: "same-origin" });
      if (!response.ok) throw new Error(response.statusText);
      const text = await response.text();
      const earlier = text.endsWith("\n") ? text.slice(0, -1).split("\n") : text.split("\n");
      const before = shown.length;
      lines = [...earlier, ...lines];
      shown = matching(needle());
      first = start;
      showCount();
      view.show(shown, false);
      view.prepended(shown.length - before); // the line that was on top stays there
    } finally {
      loading = false;
    }
  };
  view.onScroll((top) => {
    if (top === 0) loadEarlier().catch((error) => showError(String(error.message || error)));
  });
  const refilter = () => {
    shown = matching(needle());
    results.hidden = true;
    showCount();
    view.show(shown, follow.checked);
  };
  const chosenSteps = () => (select.value === ALL_STEPS ? steps : [select.value]);
  const searchWholeLog = async () => {
    const text = search.value;
    if (!text) return;
    const found = await Promise.all(chosenSteps().map(async (step) => [step,
      await api(`/api/jobs/${job}/logs/search?step=${encodeURIComponent(step)}&q=${encodeURIComponent(text)}`)]));
    const rows = found.flatMap(([step, answer]) => answer.matches.map((match) =>
      el("div", { className: "line" }, `${select.value === ALL_STEPS ? `[${step}] ` : ""}${match.line}: ${match.text}`)));
    const truncated = found.some(([, answer]) => answer.truncated) ? " (the first ones)" : "";
    results.replaceChildren(el("div", { className: "hint" }, `${rows.length} matches in the whole log${truncated}`), ...rows);
    results.hidden = false;
  };
  const open = () => {
    sources.forEach((source) => source.close());
    if (frame) cancelAnimationFrame(frame);
    pending = []; frame = 0; total = 0; first = 0; ended = 0;
    lines = []; shown = lines;
    view.show(shown, true);
    results.hidden = true;
    const prefixed = select.value === ALL_STEPS;
    download.hidden = prefixed;
    download.href = `/api/jobs/${job}/logs?step=${encodeURIComponent(select.value)}&download=1`;
    sources = chosenSteps().map((step) => {
      const source = new EventSource(`/api/jobs/${job}/logs/stream?step=${encodeURIComponent(step)}&tail=${LOG_WINDOW}`);
      source.addEventListener("skipped", (event) => { total += Number(event.data); first = total; showCount(); });
      source.onmessage = (event) => receive(JSON.parse(event.data), prefixed ? `[${step}] ` : "");
      source.addEventListener("end", () => { source.close(); ended += 1; flush(); });
      return source;
    });
    showCount();
  };
  select.addEventListener("change", open);
  search.addEventListener("input", refilter);
  search.addEventListener("keydown", (event) => {
    if (event.key === "Enter") searchWholeLog().catch((error) => showError(String(error.message || error)));
  });
  if (steps.length) open();
  const panel = el("section", { className: "logs" }, el("h2", {}, "Logs"),
    el("div", { className: "filters" }, select, el("label", {}, follow, " Follow"), search, count, download), view.element, results);
  return { panel, stop: () => { sources.forEach((source) => source.close()); if (frame) cancelAnimationFrame(frame); view.stop(); } };
}

// -- charts ---------------------------------------------------------------------------------
// One colour per job, the same in every chart and in the summary (its place among the compared
// jobs, from a palette of ten; a hash of its name beyond), one dash pattern per rank;
// smoothing is an exponential moving average; x is the step, the wall time or the seconds since
// the job's first point.
const DASHES = [[], [6, 3], [2, 3], [10, 3, 2, 3]];

const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

function jobColor(name, names = []) {
  const place = names.indexOf(name);
  if (place >= 0 && place < PALETTE.length) return PALETTE[place];
  let hash = 2166136261; // FNV-1a
  for (const char of name) hash = Math.imul(hash ^ char.codePointAt(0), 16777619) >>> 0;
  return `hsl(${Math.round((hash % 1000) * 137.508) % 360}, 65%, 42%)`;
}

function smooth(values, weight) {
  if (!weight) return values;
  let last = null;
  return values.map((value) => (value === null ? null : (last = last === null ? value : last * weight + value * (1 - weight))));
}

// What a chart panel shows: the job's metrics (per rank), or a local job's CPU and memory (per pod).
const METRICS = { path: "metrics", title: "Metrics", id: "charts", prefix: "chart", summaries: true,
  empty: "No metrics logged (trainer_sdk.log_metrics)", label: (rank) => `rank ${rank}` };
const RESOURCES = { path: "resources", title: "CPU and memory per pod", id: "resource-charts", prefix: "resource", summaries: false,
  empty: "No samples yet (a running local job's pods, every 2 s)", label: (pod) => pod };

function chartControls(prefix) {
  const smoothing = el("input", { type: "range", id: `${prefix}-smoothing`, min: 0, max: 0.99, step: 0.01, value: 0 });
  const logScale = el("input", { type: "checkbox", id: `${prefix}-log` });
  const axis = el("select", { id: `${prefix}-x` }, el("option", { value: "step" }, "Step"),
    el("option", { value: "relative" }, "Relative time (s)"), el("option", { value: "wall" }, "Wall time"));
  const node = el("div", { className: "filters" }, el("label", {}, "Smoothing ", smoothing),
    el("label", {}, logScale, " Log scale"), el("label", {}, "X axis ", axis),
    el("span", { className: "hint" }, "drag to zoom, double-click to reset"));
  return { node, smoothing, logScale, axis, state: () => ({ weight: Number(smoothing.value), log: logScale.checked, x: axis.value }) };
}

function chartPanel(owner, chosenJobs, source = METRICS) {
  const controls = chartControls(source.prefix);
  const empty = el("p", { className: "empty" }, source.empty);
  const summaries = el("div", { id: source.summaries ? "metric-summaries" : null });
  const grid = el("div", { className: "charts", id: source.id }, empty);
  const panel = el("section", {}, el("h2", {}, source.title), controls.node, grid, summaries);
  const charts = new Map(); // metric -> { plot, key, node, state }
  let last = [];
  const refresh = async () => {
    const names = chosenJobs();
    last = await Promise.all(names.map(async (job) => [job, await api(`/api/jobs/${encodeURIComponent(job)}/${source.path}`)]));
    draw();
  };
  const draw = () => {
    const metrics = new Set(last.flatMap(([, series]) => Object.keys(series.metrics)));
    empty.hidden = metrics.size > 0;
    for (const metric of [...metrics].sort()) drawChart(metric, last);
    summaries.replaceChildren(metrics.size && source.summaries ? summaryTable(last, [...metrics].sort()) : "");
  };
  const xOf = (line, job, first, axis) => (axis === "step" ? line.x : axis === "wall" ? line.t : line.t.map((t) => t - first.get(job)));
  const drawChart = (metric, all) => {
    const view = controls.state();
    const names = all.map(([job]) => job);
    const first = new Map(all.map(([job, series]) => [job, Math.min(...Object.values(series.metrics).flatMap((ranks) => Object.values(ranks).flatMap((line) => line.t)))]));
    const lines = [];
    for (const [job, series] of all) {
      Object.entries(series.metrics[metric] || {}).forEach(([rank, line], index) => {
        const label = source.label(rank);
        lines.push({ label: all.length === 1 ? label : `${job} ${label}`, job, rank: Number.isInteger(Number(rank)) ? Number(rank) : index,
          xs: xOf(line, job, first, view.x), ys: line.y });
      });
    }
    const xs = [...new Set(lines.flatMap((entry) => entry.xs))].sort((a, b) => a - b);
    const data = [xs, ...lines.map((entry) => {
      const byX = new Map(entry.xs.map((x, i) => [x, entry.ys[i]]));
      return smooth(xs.map((x) => (byX.has(x) ? byX.get(x) : null)), view.weight);
    })];
    const own = lines.filter((entry) => entry.job === owner).reduce((total, entry) => total + entry.xs.length, 0);
    const key = `${view.log}|${view.x}|${lines.map((entry) => entry.label).join("|")}`;
    let chart = charts.get(metric);
    if (!chart || chart.key !== key) {
      if (chart) chart.plot.destroy();
      const node = chart ? chart.node : el("div", { className: "chart", "data-metric": metric });
      if (!chart) grid.append(node);
      node.replaceChildren();
      const state = { zoomed: false };
      const single = all.length === 1;
      const plot = new uPlot({
        title: metric,
        width: Math.max(320, Math.min(560, grid.clientWidth - 16)),
        height: 240,
        scales: { x: { time: view.x === "wall" }, y: view.log ? { distr: 3 } : {} },
        axes: [{ label: { step: "step", wall: "time", relative: "seconds" }[view.x] }, {}],
        series: [{ label: view.x }, ...lines.map((entry) => ({
          label: entry.label,
          stroke: single ? COLORS[entry.rank % COLORS.length] : jobColor(entry.job, names),
          dash: single ? [] : DASHES[entry.rank % DASHES.length],
          width: 1.5, spanGaps: true, points: { show: xs.length < 60 } }))],
        cursor: { drag: { x: true, y: false } },
        hooks: { setSelect: [(u) => { if (u.select.width > 0) state.zoomed = true; }] },
      }, data, node);
      node.addEventListener("dblclick", () => { state.zoomed = false; });
      chart = { plot, key, node, state };
      charts.set(metric, chart);
    } else {
      chart.plot.setData(data, !chart.state.zoomed); // a zoomed chart keeps its range
    }
    chart.node.setAttribute("data-points", String(own));
  };
  [controls.smoothing, controls.logScale, controls.axis].forEach((input) => input.addEventListener("input", draw));
  return { panel, refresh, stop: () => charts.forEach((chart) => chart.plot.destroy()) };
}

// Per job and metric: the last value, the minimum and the maximum over every rank's points.
function summaryTable(all, metrics) {
  const rows = [];
  for (const [job, series] of all) {
    for (const metric of metrics) {
      const ranks = Object.values(series.metrics[metric] || {});
      if (!ranks.length) continue;
      const values = ranks.flatMap((line) => line.y);
      const lastRank = ranks.reduce((best, line) => (line.x[line.x.length - 1] >= best.x[best.x.length - 1] ? line : best));
      rows.push([el("span", { className: "swatch-label" }, el("span", { className: "swatch", "data-color": jobColor(job, all.map(([name]) => name)) }), job), metric,
        shortValue(lastRank.y[lastRank.y.length - 1]), shortValue(Math.min(...values)), shortValue(Math.max(...values))]);
    }
  }
  const node = table("summaries", ["Job", "Metric", "Last", "Min", "Max"], rows);
  node.querySelectorAll(".swatch").forEach((swatch) => { swatch.style.background = swatch.dataset.color; });
  return node;
}

// -- compare --------------------------------------------------------------------------------
function comparePage(main, names) {
  document.title = `Compare ${names.length} runs · Trainer`;
  const legend = el("div", { className: "filters", id: "compare-jobs" }, names.map((name) => {
    const swatch = el("span", { className: "swatch" });
    swatch.style.background = jobColor(name, names);
    return el("a", { href: `#/jobs/${encodeURIComponent(name)}`, className: "swatch-label", "data-job": name }, swatch, name);
  }));
  const charts = chartPanel(null, () => names);
  main.replaceChildren(el("p", {}, el("a", { href: "#/" }, "← Jobs")), el("h1", {}, `Compare ${names.length} runs`), legend, charts.panel);
  const stopPolling = poll(charts.refresh);
  return { stop: () => { stopPolling(); charts.stop(); } };
}

// -- job page -------------------------------------------------------------------------------
function table(id, headers, rows) {
  return el("table", { id }, el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.length ? rows.map((row) => el("tr", {}, row.map((cell) => el("td", {}, cell))))
      : el("tr", {}, el("td", { colspan: headers.length, className: "empty" }, "None"))));
}

function deviceText(step) {
  return step.device && step.device !== "Unknown" ? `${step.device} × ${step.deviceCount}` : "";
}

// A failed job's page leads with the user's exception, where it was raised, and its traceback.
function showFailure(box, failure) {
  const where = [failure.rank !== null ? `rank ${failure.rank}` : null, failure.step ? `step ${failure.step}` : null,
    failure.trainingStep !== null ? `after training step ${failure.trainingStep}` : null].filter(Boolean).join(", ");
  box.replaceChildren(
    el("h2", {}, "Failed: ", el("code", { id: "failure-exception" }, failure.exception || failure.reason)),
    where ? el("p", { id: "failure-where" }, `Raised on ${where}`) : null,
    failure.exception ? el("p", { className: "hint" }, `Job status: ${failure.reason}`) : null,
    failure.traceback.length ? el("pre", { id: "failure-traceback" }, failure.traceback.join("\n")) : null);
  box.hidden = false;
}

function checkpointText(found) {
  const age = found.age === null ? "" : `, ${seconds(found.age)} ago`;
  const origin = found.resumedFrom === null ? "" : `, resumed from step ${found.resumedFrom}`;
  return `Checkpoint step ${found.step}${age} (attempt ${found.attempt}${origin})`;
}

function jobPage(main, name) {
  const title = el("h1", {}, name, " ", el("span", { id: "job-status" }));
  const summary = el("div", { className: "summary", id: "job-summary" });
  const actions = el("div", { className: "actions" });
  const steps = el("section", {}, el("h2", {}, "Steps"));
  const conditions = el("section", {}, el("h2", {}, "Conditions"));
  const events = el("section", {}, el("h2", {}, "Events"));
  const yamls = el("section", {}, el("h2", {}, "Objects"));
  const charts = chartPanel(name, () => [name]);
  const usage = info.backend === "local" ? chartPanel(name, () => [name], RESOURCES) : null;
  let logs = null;
  const stopButton = el("button", { id: "stop", onclick: () => act("stop", `Stop ${name}? Its processes end; the job and its logs are kept.`) }, "Stop");
  const deleteButton = el("button", { id: "delete", className: "danger", onclick: () => act("delete", `Delete ${name}? This cannot be undone.`) }, "Delete");
  if (info.canStop) actions.append(stopButton);
  if (info.canDelete) actions.append(deleteButton);
  const act = async (what, question) => {
    if (!window.confirm(question)) return;
    try {
      await api(`/api/jobs/${encodeURIComponent(name)}/${what}`, { method: "POST" });
      if (what === "delete") location.hash = "#/";
    } catch (error) {
      showError(String(error.message || error));
    }
  };
  const placeholder = el("section", {}, el("h2", {}, "Logs"), el("p", { className: "empty" }, "Waiting for the job's steps"));
  const failure = el("section", { id: "failure", className: "failure", hidden: true });
  main.replaceChildren(el("p", {}, el("a", { href: "#/" }, "← Jobs")), title, actions, failure, summary, steps, charts.panel, ...(usage ? [usage.panel] : []), placeholder, conditions, events, yamls);
  let yamlShown = "";
  const refresh = async () => {
    const job = await api(`/api/jobs/${encodeURIComponent(name)}`);
    document.getElementById("job-status").replaceChildren(badge(job.status));
    document.title = `${name} · ${job.status} · Trainer`;
    stopButton.disabled = !ACTIVE.has(job.status);
    summary.replaceChildren(...[
      el("span", {}, `Runtime ${job.runtime}`), el("span", {}, `Nodes ${job.nodes}`),
      el("span", {}, `Age ${seconds(job.age)}`), el("span", {}, `Duration ${seconds(job.duration)}`),
      job.progress !== null ? progressCell(job) : null,
      ...Object.entries(job.metrics).map(([key, value]) => el("span", {}, `${key}=${value}`)),
      job.gemsKernels ? el("span", { id: "gems-kernels" }, "gems kernels on") : null,
      job.checkpoint ? el("span", { id: "checkpoint" }, checkpointText(job.checkpoint)) : null,
      job.message && !job.failure ? el("div", { className: "message" }, job.message) : null].filter(Boolean));
    if (job.failure) showFailure(failure, job.failure);
    steps.replaceChildren(el("h2", {}, "Steps"), table("steps", ["Step", "Status", "Pod", "Device"],
      job.steps.map((step) => [step.name,
        el("span", {}, badge(step.status), step.endedBy ? el("span", { className: "hint ended-by" }, ` ended because ${step.endedBy} failed`) : null),
        step.pod, deviceText(step)])));
    conditions.replaceChildren(el("h2", {}, "Conditions"), table("conditions", ["Type", "Status", "Reason", "Message", "Time"],
      job.conditions.map((c) => [c.type, c.status, c.reason, c.message, c.time])));
    events.replaceChildren(el("h2", {}, "Events"), table("events", ["Time", "Object", "Reason", "Message"],
      job.events.map((e) => [e.time.replace("T", " ").slice(0, 19), `${e.kind}/${e.object}`, e.reason, e.message])));
    if (!logs && job.steps.length) {
      logs = logPanel(name, job.steps.map((step) => step.name), job.failure ? job.failure.step : null);
      placeholder.replaceWith(logs.panel);
    }
    const yamlNow = job.trainjobYaml + (job.jobsetYaml || "");
    if (yamlNow !== yamlShown) {
      const open = [...yamls.querySelectorAll("details")].map((d) => d.open);
      yamlShown = yamlNow;
      yamls.replaceChildren(el("h2", {}, "Objects"),
        el("details", { id: "trainjob-yaml", open: open[0] }, el("summary", {}, "TrainJob"), el("pre", {}, job.trainjobYaml)),
        el("details", { id: "jobset-yaml", open: open[1] }, el("summary", {}, "JobSet"), el("pre", {}, job.jobsetYaml || "No JobSet yet")));
    }
    await charts.refresh();
    if (usage) await usage.refresh();
  };
  const stopPolling = poll(refresh);
  return { stop: () => { stopPolling(); charts.stop(); if (usage) usage.stop(); if (logs) logs.stop(); } };
}

// -- runtimes -------------------------------------------------------------------------------
function runtimesPage(main) {
  const list = el("div", { id: "runtimes" });
  document.title = "Runtimes · Trainer";
  main.replaceChildren(el("h1", {}, "Runtimes"), list);
  api("/api/runtimes").then((runtimes) => {
    list.replaceChildren(...runtimes.map((runtime) => el("section", { className: "runtime", "data-runtime": runtime.name },
      el("h2", {}, runtime.name, " ", el("small", {}, runtime.kind)),
      el("div", { className: "summary" },
        el("span", {}, `Framework ${runtime.framework}`), el("span", {}, `Trainer ${runtime.trainerType}`),
        el("span", {}, `Nodes ${runtime.nodes}`), el("span", {}, `Device ${runtime.device} × ${runtime.deviceCount}`),
        el("span", {}, `ML policy ${runtime.mlPolicy.join(", ") || "plain"}`),
        runtime.podGroupPolicy.length ? el("span", {}, `Pod groups ${runtime.podGroupPolicy.join(", ")}`) : null),
      table(null, ["Replicated job", "Replicas", "Depends on", "Containers"], runtime.replicatedJobs.map((job) => [
        job.name, job.replicas, job.dependsOn.join(", "), job.containers.map((c) => `${c.name} (${c.image})`).join(", ")])),
      el("details", {}, el("summary", {}, "YAML"), el("pre", {}, runtime.yaml)))));
  }).catch((error) => showError(String(error.message || error)));
  return { stop: () => {} };
}

// -- routing --------------------------------------------------------------------------------
function route() {
  if (page) page.stop();
  showError("");
  const main = document.getElementById("main");
  const hash = location.hash || "#/";
  const job = hash.match(/^#\/jobs\/(.+)$/);
  const compare = hash.match(/^#\/compare\/(.+)$/);
  const optimization = optimizationRoute(main, hash); // optimization.js
  if (optimization) page = optimization;
  else if (job) page = jobPage(main, decodeURIComponent(job[1]));
  else if (compare) page = comparePage(main, compare[1].split(",").map(decodeURIComponent));
  else if (hash === "#/runtimes") page = runtimesPage(main);
  else page = jobList(main);
}

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", async () => {
  try {
    info = await api("/api/info");
    document.getElementById("backend").textContent = `${info.backend} backend`;
  } catch (error) {
    showError(String(error.message || error));
  }
  route();
});
