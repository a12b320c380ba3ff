// trainer ui: the optimization pages (#/optimizations, #/optimizations/NAME) over
// GET /api/optimizations[/NAME] (ui/optimization.py). Loaded after app.js, whose helpers
// (el, api, poll, badge, table, shortValue, seconds, jobColor, fill) it uses.
"use strict";

// A non-finite objective (a diverged run) arrives as null with its name beside it
// ("objectiveNonFinite": "NaN", the server's strict JSON): shown as such.
function objectiveText(value, nonFinite) {
  if (nonFinite) return nonFinite;
  return value === null || value === undefined ? "" : shortValue(value);
}

function optimizationList(main) {
  document.title = "Optimization jobs · Trainer";
  const body = el("tbody", {});
  const empty = el("p", { className: "empty", hidden: true }, "No optimization jobs (OptimizerClient().optimize, trainer optimize)");
  main.replaceChildren(el("h1", {}, "Optimization jobs"), empty,
    el("table", { id: "optimizations" }, el("thead", {}, el("tr", {},
      ["Name", "Status", "Algorithm", "Trials", "Best", "Age"].map((h) => el("th", {}, h)))), body));
  const stop = poll(async () => {
    const rows = await api("/api/optimizations");
    empty.hidden = rows.length > 0;
    body.replaceChildren(...rows.map((row) => el("tr", { "data-optimization": row.name },
      el("td", {}, el("a", { href: `#/optimizations/${encodeURIComponent(row.name)}` }, row.name)),
      el("td", { className: "status" }, badge(row.status)),
      el("td", {}, row.algorithm),
      el("td", {}, `${row.trials} / ${row.numTrials}`),
      el("td", { className: "best" }, row.best === null ? "" : `${row.metric} ${objectiveText(row.best, row.bestNonFinite)}`),
      el("td", {}, seconds(row.age)))));
  });
  return { stop };
}

// Objective against trial number (each finished trial a point, the best so far a line), and
// the objective by step of every trial overlaid (pruned ones end where they were stopped).
function objectivePlots(holder, job) {
  holder.replaceChildren();
  const width = Math.max(320, Math.min(560, holder.clientWidth / 2 - 24));
  const sign = job.direction === "maximize" ? -1 : 1;
  const numbers = job.trialList.map((trial) => trial.number);
  const values = job.trialList.map((trial) => (trial.state === "Complete" ? trial.objective : null)); // null: none, or non-finite
  let best = null;
  const bestSoFar = values.map((value) => (best = value !== null && (best === null || sign * value < sign * best) ? value : best));
  const byTrial = el("div", { className: "chart", id: "objective-by-trial", "data-points": String(values.filter((v) => v !== null).length) });
  const curves = el("div", { className: "chart", id: "trial-curves", "data-curves": String(Object.keys(job.curves).length) });
  holder.append(byTrial, curves);
  const plots = [new uPlot({
    title: `${job.metric} by trial`, width, height: 240,
    scales: { x: { time: false } }, axes: [{ label: "trial" }, {}],
    series: [{ label: "trial" },
      { label: job.metric, stroke: "#2563eb", paths: () => null, points: { show: true, size: 7 } },
      { label: "best so far", stroke: "#16a34a", width: 1.5 }],
  }, [numbers, values, bestSoFar], byTrial)];
  const names = Object.keys(job.curves);
  const steps = [...new Set(names.flatMap((name) => job.curves[name].x))].sort((a, b) => a - b);
  if (names.length) {
    const data = [steps, ...names.map((name) => {
      const byStep = new Map(job.curves[name].x.map((x, i) => [x, job.curves[name].y[i]]));
      return steps.map((step) => (byStep.has(step) ? byStep.get(step) : null));
    })];
    plots.push(new uPlot({
      title: `${job.metric} by step, per trial`, width, height: 240,
      scales: { x: { time: false } }, axes: [{ label: "step" }, {}],
      series: [{ label: "step" }, ...names.map((name) => ({
        label: name, stroke: jobColor(name, names), width: name === job.bestTrial ? 3 : 1.2, spanGaps: true, points: { show: steps.length < 40 } }))],
    }, data, curves));
  }
  return plots;
}

// Parallel coordinates (SVG, no library): an axis per parameter and one for the objective, a
// line per trial that reported one. Ranges are linear or logarithmic as the search space says,
// choices evenly spaced; a non-finite objective sits on a "NaN" mark above its axis, in red.
const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) if (value !== null && value !== undefined) node.setAttribute(key, value);
  node.append(...children.flat());
  return node;
}

function axisPosition(space, value) {
  if (space.kind === "choice") {
    const index = space.choices.indexOf(String(value));
    return space.choices.length === 1 ? 0.5 : Math.max(index, 0) / (space.choices.length - 1);
  }
  const scale = space.kind === "log" ? Math.log : (x) => x;
  const low = scale(space.min), high = scale(space.max);
  return Math.min(Math.max((scale(Number(value)) - low) / (high - low), 0), 1);
}

function parallelCoordinates(job) {
  const trials = job.trialList.filter((trial) => trial.objective !== null || trial.objectiveNonFinite);
  const finite = trials.filter((trial) => trial.objective !== null).map((trial) => trial.objective);
  const objective = finite.length
    ? { kind: "linear", min: Math.min(...finite), max: Math.max(...finite) === Math.min(...finite) ? Math.min(...finite) + 1 : Math.max(...finite) }
    : { kind: "linear", min: 0, max: 1 };
  const axes = [...job.parameters.map((name) => ({ name, space: job.parameterSpaces[name] })), { name: job.metric, space: objective }];
  const width = Math.max(360, 140 * axes.length), height = 260, top = 34, bottom = 24, left = 50;
  const step = (width - 2 * left) / Math.max(axes.length - 1, 1);
  const x = (i) => left + i * step;
  const y = (fraction) => top + (1 - fraction) * (height - top - bottom);
  const sign = job.direction === "maximize" ? -1 : 1;
  const color = (trial) => {
    if (trial.objectiveNonFinite) return "#dc2626";
    const span = objective.max - objective.min;
    const goodness = span ? (sign > 0 ? objective.max - trial.objective : trial.objective - objective.min) / span : 1;
    return `hsl(${Math.round(220 - 180 * goodness)}, 70%, 45%)`;
  };
  const lines = trials.map((trial) => {
    const points = axes.map((axis, i) => {
      const value = i === axes.length - 1 ? trial.objective : trial.parameters[axis.name];
      const fraction = i === axes.length - 1 && trial.objectiveNonFinite ? 1.09 : axisPosition(axis.space, value);
      return `${x(i).toFixed(1)},${y(fraction).toFixed(1)}`;
    });
    const best = trial.name === job.bestTrial;
    return svg("polyline", { points: points.join(" "), fill: "none", stroke: color(trial), "stroke-width": best ? 3 : 1.3,
      "stroke-dasharray": trial.objectiveNonFinite ? "4 3" : null, class: best ? "best" : null, "data-trial": trial.name },
    svg("title", {}, `${trial.name}: ${objectiveText(trial.objective, trial.objectiveNonFinite)}`));
  });
  const drawnAxes = axes.map((axis, i) => {
    const space = axis.space;
    const ends = space.kind === "choice" ? [space.choices[0], space.choices[space.choices.length - 1]] : [shortValue(space.min), shortValue(space.max)];
    return svg("g", { class: "axis", "data-axis": axis.name },
      svg("line", { x1: x(i), x2: x(i), y1: y(0), y2: y(1), stroke: "#6b7280" }),
      svg("text", { x: x(i), y: 14, "text-anchor": "middle", class: "axis-name" }, axis.name),
      svg("text", { x: x(i) + 4, y: y(0) + 14, class: "axis-end" }, String(ends[0])),
      svg("text", { x: x(i) + 4, y: y(1) - 4, class: "axis-end" }, String(ends[1])),
      space.kind === "choice" && space.choices.length > 2
        ? space.choices.slice(1, -1).map((choice, k) => svg("text", { x: x(i) + 4, y: y((k + 1) / (space.choices.length - 1)), class: "axis-end" }, choice))
        : []);
  });
  return el("div", { className: "chart", id: "parallel-coordinates", "data-lines": String(lines.length) },
    svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "parameters and objective of each trial" }, drawnAxes, lines));
}

function importanceView(shares) {
  const names = Object.keys(shares);
  if (!names.length) return el("p", { className: "empty" }, "Parameter importance needs two completed trials");
  return el("div", { id: "importance" }, names.map((name) => el("div", { className: "importance", "data-parameter": name },
    el("span", { className: "name" }, name),
    el("div", { className: "bar" }, fill(Math.round(100 * shares[name]))),
    el("span", {}, shares[name].toFixed(2)))));
}

function trialTable(job) {
  const headers = ["#", "Trial", "State", job.metric, "Pruned at step", ...job.parameters];
  const rows = job.trialList.map((trial) => el("tr", { "data-trial": trial.name, className: trial.name === job.bestTrial ? "best" : null },
    el("td", {}, trial.number),
    el("td", {}, el("a", { href: `#/jobs/${encodeURIComponent(trial.name)}` }, trial.name), trial.name === job.bestTrial ? " ★ best" : ""),
    el("td", { className: "state" }, badge(trial.state)),
    el("td", { className: "objective" }, objectiveText(trial.objective, trial.objectiveNonFinite)),
    el("td", { className: "pruned" }, trial.prunedAtStep === null ? "" : trial.prunedAtStep),
    job.parameters.map((name) => el("td", { className: "parameter", "data-parameter": name }, trial.parameters[name] ?? ""))));
  return el("table", { id: "trials" }, el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))), el("tbody", {}, rows));
}

function optimizationPage(main, name) {
  document.title = `${name} · Optimization · Trainer`;
  const summary = el("div", { className: "summary", id: "optimization-summary" });
  const plots = el("div", { className: "charts", id: "optimization-charts" });
  const trials = el("div", {});
  const importance = el("div", {});
  const coordinates = el("div", {});
  main.replaceChildren(el("p", {}, el("a", { href: "#/optimizations" }, "← Optimization jobs")), el("h1", {}, name),
    summary, el("h2", {}, "Objective"), plots, el("h2", {}, "Parameters against the objective"), coordinates,
    el("h2", {}, "Trials"), trials, el("h2", {}, "Parameter importance"), importance);
  let drawn = [];
  let last = "";
  const stopPolling = poll(async () => {
    const job = await api(`/api/optimizations/${encodeURIComponent(name)}`);
    const { age, ...steady } = job;
    summary.replaceChildren(badge(job.status), el("span", {}, job.algorithm),
      el("span", {}, `${job.trials} / ${job.numTrials} trials, ${job.parallelTrials} at a time`),
      el("span", {}, `${job.direction} ${job.metric}`),
      el("span", { id: "best" }, job.bestTrial ? `best ${objectiveText(job.best)} (${job.bestTrial})` : "no completed trial yet"),
      el("span", {}, `age ${seconds(age)}`),
      job.message ? el("span", { id: "message" }, job.message) : "");
    const key = JSON.stringify(steady);
    if (key === last) return; // nothing new: the charts keep their zoom
    last = key;
    drawn.forEach((plot) => plot.destroy());
    drawn = objectivePlots(plots, job);
    trials.replaceChildren(trialTable(job));
    coordinates.replaceChildren(parallelCoordinates(job));
    importance.replaceChildren(importanceView(job.importance));
  });
  return { stop: () => { stopPolling(); drawn.forEach((plot) => plot.destroy()); } };
}

// app.js's router asks here first for #/optimizations routes.
function optimizationRoute(main, hash) {
  const one = hash.match(/^#\/optimizations\/(.+)$/);
  if (one) return optimizationPage(main, decodeURIComponent(one[1]));
  return hash === "#/optimizations" ? optimizationList(main) : null;
}
