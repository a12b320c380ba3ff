// trainer ui: the optimization pages (#/optimizations, #/optimizations/NAME) over
// GET /api/optimizations[/NAME] (ui/optimization.py). Loaded after app.js, whose helpers
// (el, api, poll, badge, table, shortValue, seconds, jobColor, fill) it uses.
"use strict";

function objectiveText(value) {
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
      el("td", { className: "best" }, row.best === null ? "" : `${row.metric} ${objectiveText(row.best)}`),
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
  const values = job.trialList.map((trial) => (trial.state === "Complete" ? trial.objective : null));
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
    el("td", { className: "objective" }, objectiveText(trial.objective)),
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
  main.replaceChildren(el("p", {}, el("a", { href: "#/optimizations" }, "← Optimization jobs")), el("h1", {}, name),
    summary, el("h2", {}, "Objective"), plots, el("h2", {}, "Trials"), trials, el("h2", {}, "Parameter importance"), importance);
  let drawn = [];
  let last = "";
  const stopPolling = poll(async () => {
    const job = await api(`/api/optimizations/${encodeURIComponent(name)}`);
    const { age, ...steady } = job;
    summary.replaceChildren(badge(job.status), el("span", {}, job.algorithm),
      el("span", {}, `${job.trials} / ${job.numTrials} trials, ${job.parallelTrials} at a time`),
      el("span", {}, `${job.direction} ${job.metric}`),
      el("span", { id: "best" }, job.bestTrial ? `best ${objectiveText(job.best)} (${job.bestTrial})` : "no completed trial yet"),
      el("span", {}, `age ${seconds(age)}`));
    const key = JSON.stringify(steady);
    if (key === last) return; // nothing new: the charts keep their zoom
    last = key;
    drawn.forEach((plot) => plot.destroy());
    drawn = objectivePlots(plots, job);
    trials.replaceChildren(trialTable(job));
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
