// trainer ui: the job list, job pages (steps, conditions, events, live logs, metric charts,
// YAML, stop/delete) and the runtimes page, over the JSON API of server.py. No build step.
"use strict";

const REFRESH_MS = 2000;
const STATUSES = ["Created", "Running", "Complete", "Failed"];
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
function jobList(main) {
  const status = el("select", { id: "filter-status" }, el("option", { value: "" }, "All statuses"),
    STATUSES.map((s) => el("option", { value: s }, s)));
  const runtime = el("select", { id: "filter-runtime" }, el("option", { value: "" }, "All runtimes"));
  const body = el("tbody");
  const table = el("table", { id: "jobs" },
    el("thead", {}, el("tr", {}, ["Name", "Status", "Runtime", "Nodes", "Progress", "Age", "Duration"].map((h) => el("th", {}, h)))),
    body);
  main.replaceChildren(el("h1", {}, "TrainJobs"), el("div", { className: "filters" }, status, runtime), table);
  let jobs = [];
  const render = () => {
    const runtimes = [...new Set(jobs.map((job) => job.runtime))].sort();
    const chosen = runtime.value;
    runtime.replaceChildren(el("option", { value: "" }, "All runtimes"), ...runtimes.map((r) => el("option", { value: r }, r)));
    runtime.value = runtimes.includes(chosen) ? chosen : "";
    const shown = jobs.filter((job) => (!status.value || job.status === status.value) && (!runtime.value || job.runtime === runtime.value));
    body.replaceChildren(...shown.slice().reverse().map((job) => el("tr", { "data-job": job.name },
      el("td", {}, el("a", { href: `#/jobs/${encodeURIComponent(job.name)}` }, job.name)),
      el("td", { className: "status" }, badge(job.status)),
      el("td", {}, job.runtime),
      el("td", {}, job.nodes),
      el("td", {}, progressCell(job)),
      el("td", {}, seconds(job.age)),
      el("td", {}, seconds(job.duration)))));
    if (!shown.length) body.append(el("tr", {}, el("td", { colspan: 7, className: "empty" }, "No TrainJobs")));
  };
  status.addEventListener("change", render);
  runtime.addEventListener("change", render);
  return { stop: poll(async () => { jobs = await api("/api/jobs"); render(); }) };
}

// -- logs -----------------------------------------------------------------------------------
function logPanel(name, steps) {
  const select = el("select", { id: "log-step" }, steps.map((step) => el("option", { value: step }, step)));
  const follow = el("input", { type: "checkbox", id: "log-follow", checked: true });
  const search = el("input", { type: "search", id: "log-search", placeholder: "Search" });
  const count = el("span", { id: "log-count" });
  const download = el("a", { id: "log-download", download: "" }, "Download");
  const lines = el("div", { id: "log", className: "log" });
  let source = null;
  const filter = () => {
    const needle = search.value.toLowerCase();
    let matches = 0;
    for (const line of lines.children) {
      const hit = !needle || line.textContent.toLowerCase().includes(needle);
      line.hidden = !hit;
      if (needle && hit) matches += 1;
    }
    count.textContent = needle ? `${matches} matching` : `${lines.children.length} lines`;
  };
  const open = () => {
    if (source) source.close();
    lines.replaceChildren();
    const step = encodeURIComponent(select.value);
    download.href = `/api/jobs/${encodeURIComponent(name)}/logs?step=${step}&download=1`;
    source = new EventSource(`/api/jobs/${encodeURIComponent(name)}/logs/stream?step=${step}`);
    source.onmessage = (event) => {
      const text = JSON.parse(event.data);
      const needle = search.value.toLowerCase();
      const line = el("div", { className: "line" }, text);
      line.hidden = Boolean(needle) && !text.toLowerCase().includes(needle);
      lines.append(line);
      filter();
      if (follow.checked) lines.scrollTop = lines.scrollHeight;
    };
    source.addEventListener("end", () => { source.close(); count.textContent += " (ended)"; });
  };
  select.addEventListener("change", open);
  search.addEventListener("input", filter);
  if (steps.length) open();
  const panel = el("section", { className: "logs" }, el("h2", {}, "Logs"),
    el("div", { className: "filters" }, select, el("label", {}, follow, " Follow"), search, count, download), lines);
  return { panel, stop: () => source && source.close() };
}

// -- charts ---------------------------------------------------------------------------------
function chartPanel(name) {
  const compare = el("select", { id: "compare", multiple: true, size: 3, title: "Overlay other jobs" });
  const empty = el("p", { className: "empty" }, "No metrics logged (trainer_sdk.log_metrics)");
  const grid = el("div", { className: "charts", id: "charts" }, empty);
  const panel = el("section", {}, el("h2", {}, "Metrics"),
    el("div", { className: "filters" }, el("label", { for: "compare" }, "Compare with "), compare,
      el("span", { className: "hint" }, "drag to zoom, double-click to reset")), grid);
  const charts = new Map(); // metric -> { plot, key, node }
  const known = new Set();
  const refresh = async () => {
    const others = [...compare.selectedOptions].map((option) => option.value);
    const all = await Promise.all([name, ...others].map(async (job) => [job, await api(`/api/jobs/${encodeURIComponent(job)}/metrics`)]));
    const metrics = new Set(all.flatMap(([, series]) => Object.keys(series.metrics)));
    empty.hidden = metrics.size > 0;
    for (const metric of [...metrics].sort()) drawChart(metric, all);
  };
  const drawChart = (metric, all) => {
    const lines = [];
    for (const [job, series] of all) {
      for (const [rank, line] of Object.entries(series.metrics[metric] || {})) {
        lines.push({ label: job === name ? `rank ${rank}` : `${job} r${rank}`, job, line });
      }
    }
    const xs = [...new Set(lines.flatMap((entry) => entry.line.x))].sort((a, b) => a - b);
    const data = [xs, ...lines.map((entry) => {
      const byStep = new Map(entry.line.x.map((x, i) => [x, entry.line.y[i]]));
      return xs.map((x) => (byStep.has(x) ? byStep.get(x) : null));
    })];
    const own = lines.filter((entry) => entry.job === name).reduce((total, entry) => total + entry.line.x.length, 0);
    const key = lines.map((entry) => entry.label).join("|");
    let chart = charts.get(metric);
    if (!chart || chart.key !== key) {
      if (chart) chart.plot.destroy();
      const node = chart ? chart.node : el("div", { className: "chart", "data-metric": metric });
      if (!chart) grid.append(node);
      node.replaceChildren();
      const state = { zoomed: false };
      const plot = new uPlot({
        title: metric,
        width: Math.max(320, Math.min(560, grid.clientWidth - 16)),
        height: 240,
        scales: { x: { time: false } },
        axes: [{ label: "step" }, {}],
        series: [{ label: "step" }, ...lines.map((entry, i) => ({ label: entry.label, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: true, points: { show: xs.length < 60 } }))],
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
  const loadJobs = async () => {
    const jobs = await api("/api/jobs");
    const chosen = new Set([...compare.selectedOptions].map((option) => option.value));
    compare.replaceChildren(...jobs.filter((job) => job.name !== name).map((job) => el("option", { value: job.name, selected: chosen.has(job.name) }, job.name)));
  };
  compare.addEventListener("change", refresh);
  return { panel, refresh, loadJobs, stop: () => charts.forEach((chart) => chart.plot.destroy()) };
}

// -- job page -------------------------------------------------------------------------------
function table(id, headers, rows) {
  return el("table", { id }, el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.length ? rows.map((row) => el("tr", {}, row.map((cell) => el("td", {}, cell))))
      : el("tr", {}, el("td", { colspan: headers.length, className: "empty" }, "None"))));
}

function jobPage(main, name) {
  const title = el("h1", {}, name, " ", el("span", { id: "job-status" }));
  const summary = el("div", { className: "summary", id: "job-summary" });
  const actions = el("div", { className: "actions" });
  const steps = el("section", {}, el("h2", {}, "Steps"));
  const conditions = el("section", {}, el("h2", {}, "Conditions"));
  const events = el("section", {}, el("h2", {}, "Events"));
  const yamls = el("section", {}, el("h2", {}, "Objects"));
  const charts = chartPanel(name);
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
  main.replaceChildren(el("p", {}, el("a", { href: "#/" }, "← Jobs")), title, actions, summary, steps, charts.panel, placeholder, conditions, events, yamls);
  let yamlShown = "";
  const refresh = async () => {
    const job = await api(`/api/jobs/${encodeURIComponent(name)}`);
    document.getElementById("job-status").replaceChildren(badge(job.status));
    stopButton.disabled = job.status === "Complete" || job.status === "Failed";
    summary.replaceChildren(...[
      el("span", {}, `Runtime ${job.runtime}`), el("span", {}, `Nodes ${job.nodes}`),
      el("span", {}, `Age ${seconds(job.age)}`), el("span", {}, `Duration ${seconds(job.duration)}`),
      job.progress !== null ? progressCell(job) : null,
      ...Object.entries(job.metrics).map(([key, value]) => el("span", {}, `${key}=${value}`)),
      job.message ? el("div", { className: "message" }, job.message) : null].filter(Boolean));
    steps.replaceChildren(el("h2", {}, "Steps"), table("steps", ["Step", "Status", "Pod", "Device"],
      job.steps.map((step) => [step.name, badge(step.status), step.pod, `${step.device} × ${step.deviceCount}`])));
    conditions.replaceChildren(el("h2", {}, "Conditions"), table("conditions", ["Type", "Status", "Reason", "Message", "Time"],
      job.conditions.map((c) => [c.type, c.status, c.reason, c.message, c.time])));
    events.replaceChildren(el("h2", {}, "Events"), table("events", ["Time", "Object", "Reason", "Message"],
      job.events.map((e) => [e.time.replace("T", " ").slice(0, 19), `${e.kind}/${e.object}`, e.reason, e.message])));
    if (!logs && job.steps.length) {
      logs = logPanel(name, job.steps.map((step) => step.name));
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
  };
  charts.loadJobs().catch((error) => showError(String(error.message || error)));
  const stopPolling = poll(refresh);
  return { stop: () => { stopPolling(); charts.stop(); if (logs) logs.stop(); } };
}

// -- runtimes -------------------------------------------------------------------------------
function runtimesPage(main) {
  const list = el("div", { id: "runtimes" });
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
  if (job) page = jobPage(main, decodeURIComponent(job[1]));
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
