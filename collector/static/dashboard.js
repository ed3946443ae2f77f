// The collector's live dashboard (GET / of `ldp serve`; docs/collector.md).
//
// Polls v1/dashboard every 2 s while the tab is visible and draws with DOM and
// SVG calls only. Every string from the reply (task ids, domain values, withheld
// reasons) goes in through text nodes or setAttribute, never parsed as markup:
// domain values come from the task's spec and are untrusted.

const POLL_MS = 2000;
const TOKEN_KEY = "ldp-collector-token";
const SVG_NS = "http://www.w3.org/2000/svg";
const LABEL_COLUMNS = new Set(["attribute", "statistic", "value", "group", "cohort", "bit"]);
const NUMBER = new Intl.NumberFormat("en", { maximumSignificantDigits: 5 });
const TICK = new Intl.NumberFormat("en", { maximumSignificantDigits: 3 });
// The per-window series chart draws at most this many values at once (the largest); the select shows any one.
const MAX_SERIES = 6;

const state = {
  data: null, // the last reply of v1/dashboard
  text: "", // its body: an unchanged reply is not drawn again
  task: null, // the selected task id
  start: null, // the selected window's start, or null to follow the latest window with estimates
  series: null, // the value whose per-window series is shown alone, or null for the largest values
  timer: null,
  busy: false,
  needsToken: false,
};

const $ = (id) => document.getElementById(id);

// ---- small DOM helpers -------------------------------------------------------

function build(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  // append() turns strings into text nodes: no markup is ever parsed
  node.append(...children.map((child) => (child instanceof Node ? child : String(child))));
  return node;
}

const el = (tag, attrs = {}, ...children) => build(document.createElement(tag), attrs, children);
const svg = (tag, attrs = {}, ...children) => build(document.createElementNS(SVG_NS, tag), attrs, children);

const finite = (x) => typeof x === "number" && Number.isFinite(x);
const fmt = (x) => (finite(x) ? NUMBER.format(x) : x == null ? "–" : String(x));
const cell = (column, x) => (LABEL_COLUMNS.has(column) ? String(x ?? "–") : fmt(x));
const shortId = (id) => (id.length > 10 ? `${id.slice(0, 8)}…` : id);
const percent = (level) => `${Math.round((level ?? 0.95) * 1000) / 10}%`;
// shuffle mode: the central (ε, δ) of the window's shuffled reports (docs/collector.md#shuffle)
const centralText = (c) =>
  c ? ` Shuffled: central ε ≤ ${Number(c.epsilon).toPrecision(3)} at δ = ${String(c.delta)} (${c.bound}).` : "";

// Durations as the CLI writes them: 90s, 15m, 1h, 1d, 2w.
function duration(seconds) {
  if (!Number.isInteger(seconds) || seconds <= 0) return fmt(seconds);
  const units = [["w", 604800], ["d", 86400], ["h", 3600], ["m", 60], ["s", 1]];
  const [name, size] = units.find(([, size]) => seconds % size === 0);
  return `${seconds / size}${name}`;
}

// Unix seconds as "YYYY-MM-DD HH:MM" UTC (with ":SS" when they are not zero)
const utc = (t) => new Date(t * 1000).toISOString().slice(0, t % 60 ? 19 : 16).replace("T", " ");
const range = (w) => `${utc(w.start)} – ${utc(w.end)} UTC`;

// The status line is a live region: set it only when it changes, so that a
// repeated error is not announced again every 2 s.
function setStatus(text) {
  if ($("status").textContent !== text) $("status").textContent = text;
}

// ---- fetching and polling ----------------------------------------------------

async function refresh() {
  if (state.busy) return;
  state.busy = true;
  try {
    const token = sessionStorage.getItem(TOKEN_KEY);
    const headers = { Accept: "application/json" };
    if (token) headers.Authorization = `Bearer ${token}`;
    const response = await fetch("v1/dashboard", { headers, cache: "no-store" });
    if (response.status === 401) {
      showAuth(Boolean(token));
      return;
    }
    if (!response.ok) {
      setStatus(`The collector answered ${response.status} ${response.statusText}.`);
      return;
    }
    const text = await response.text();
    if (text !== state.text) {
      state.data = JSON.parse(text);
      state.text = text;
      render();
    }
    setStatus("");
    $("updated").textContent = `Updated ${new Date().toLocaleTimeString()}`;
  } catch (error) {
    setStatus(`Dashboard update failed: ${error.message}`);
  } finally {
    state.busy = false;
  }
}

// One timer at a time; none while the tab is hidden or a token is needed.
function schedule() {
  clearTimeout(state.timer);
  state.timer = null;
  if (!document.hidden && !state.needsToken) state.timer = setTimeout(tick, POLL_MS);
}

async function tick() {
  await refresh();
  schedule();
}

document.addEventListener("visibilitychange", () => (document.hidden ? schedule() : tick()));

// ---- the token form ----------------------------------------------------------

function showAuth(refused) {
  state.needsToken = true;
  state.text = ""; // draw the next reply even if it is the one seen before the 401
  if (refused) sessionStorage.removeItem(TOKEN_KEY);
  for (const id of ["tasks-section", "windows-section", "estimates-section"]) $(id).hidden = true;
  $("auth-message").textContent = refused
    ? "The collector refused this token. Enter a collector token."
    : "This collector needs a collector token to show its dashboard.";
  const wasHidden = $("auth").hidden;
  $("auth").hidden = false;
  if (wasHidden) $("token").focus();
}

$("auth").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = $("token").value.trim();
  if (!token) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  $("token").value = "";
  $("auth").hidden = true;
  state.needsToken = false;
  tick();
});

// ---- rendering -----------------------------------------------------------------

// Redrawing replaces elements; give focus back to the element with the same data-key.
function keepingFocus(draw) {
  const key = document.activeElement?.dataset?.key;
  draw();
  if (key) document.querySelector(`[data-key="${CSS.escape(key)}"]`)?.focus();
}

function render() {
  const tasks = state.data?.tasks ?? [];
  for (const task of tasks) task.windows = [...(task.windows ?? [])].sort((a, b) => a.start - b.start);
  if (!tasks.some((t) => t.task === state.task)) {
    state.task = tasks[0]?.task ?? null;
    state.start = null;
  }
  const task = tasks.find((t) => t.task === state.task) ?? null;
  const current = task && currentWindow(task);
  keepingFocus(() => {
    renderTasks(tasks);
    renderWindows(task, current);
    renderEstimates(task, current);
    renderSeries(task);
  });
}

// The pinned window if it is still there, else the latest with estimates, else the latest.
function currentWindow(task) {
  const windows = task.windows;
  return (
    windows.find((w) => w.start === state.start) ??
    windows.findLast((w) => w.estimates) ??
    windows.at(-1) ??
    null
  );
}

function selectTask(id) {
  state.task = id;
  state.start = null;
  state.series = null;
  render();
}

function selectWindow(start) {
  state.start = start;
  render();
}

function renderTasks(tasks) {
  $("tasks-section").hidden = false;
  $("no-tasks").hidden = tasks.length > 0;
  $("tasks").hidden = tasks.length === 0;
  const rows = tasks.map((task) => {
    const button = el(
      "button",
      {
        type: "button",
        title: task.task,
        "aria-label": `Show task ${task.task}`,
        "aria-pressed": task.task === state.task,
        "data-key": `task:${task.task}`,
      },
      shortId(String(task.task)),
    );
    button.addEventListener("click", () => selectTask(task.task));
    const cells = [duration(task.window), duration(task.time_precision), fmt(task.min_batch)];
    return el(
      "tr",
      { class: task.task === state.task ? "selected" : "" },
      el("th", { scope: "row" }, button),
      el("td", { class: "label" }, String(task.mechanism ?? "–")),
      ...cells.map((text) => el("td", {}, text)),
      el("td", {}, fmt(task.windows.length)),
    );
  });
  $("tasks").tBodies[0].replaceChildren(...rows);
}

function renderWindows(task, current) {
  $("windows-section").hidden = !task;
  if (!task) return;
  drawWindowsChart($("windows-chart"), task, current);
  // the select lists the latest window first; its first option follows the live data
  const options = [el("option", { value: "" }, "Latest with estimates")];
  for (const w of [...task.windows].reverse()) {
    const label = `${range(w)}: ${fmt(w.n)} reports${w.estimates ? "" : " (withheld)"}`;
    options.push(el("option", { value: w.start }, label));
  }
  const select = $("window-select");
  select.replaceChildren(...options);
  select.value = state.start == null ? "" : String(current?.start ?? "");
  select.onchange = () => selectWindow(select.value === "" ? null : Number(select.value));
  const rows = task.windows.map((w) =>
    el(
      "tr",
      {},
      el("td", {}, utc(w.start)),
      el("td", {}, utc(w.end)),
      el("td", {}, fmt(w.n)),
      el("td", {}, w.estimates ? "shown" : `withheld: ${w.withheld ?? "no estimates"}`),
    ),
  );
  $("windows-table").tBodies[0].replaceChildren(...rows);
}

// Bars of n per window with the min-batch line; clicking a bar selects its window
// (the select above is the keyboard way to do the same).
function drawWindowsChart(chart, task, current) {
  const [width, height, left, right, top, bottom] = [600, 130, 56, 8, 10, 20];
  const windows = task.windows;
  const max = Math.max(1, task.min_batch ?? 0, ...windows.map((w) => w.n ?? 0)) * 1.1;
  const y = (v) => top + (1 - v / max) * (height - top - bottom);
  const step = (width - left - right) / Math.max(windows.length, 1);
  const barWidth = Math.min(step * 0.8, 60);
  const parts = [
    svg("line", { class: "axis", x1: left, x2: width - right, y1: y(0), y2: y(0) }),
    svg("text", { class: "tick", x: left - 4, y: y(0), "text-anchor": "end" }, "0"),
  ];
  windows.forEach((w, i) => {
    // at least 2 units tall, so that a window of a few reports still shows (and can be clicked)
    const barTop = Math.min(y(w.n ?? 0), y(0) - (w.n > 0 ? 2 : 0));
    const classes = ["bar", w.estimates ? "" : "withheld", w === current ? "selected" : ""];
    const bar = svg(
      "rect",
      {
        class: classes.join(" ").trim(),
        x: left + (i + 0.5) * step - barWidth / 2,
        y: barTop,
        width: barWidth,
        height: y(0) - barTop,
        "data-start": w.start,
        "data-n": w.n,
      },
      svg("title", {}, `${range(w)}: ${fmt(w.n)} reports`),
    );
    bar.addEventListener("click", () => selectWindow(w.start));
    parts.push(bar);
  });
  if (finite(task.min_batch)) {
    const lineY = y(task.min_batch);
    parts.push(
      svg("line", { class: "min-batch", x1: left, x2: width - right, y1: lineY, y2: lineY }),
      svg("text", { class: "tick", x: left - 4, y: lineY, "text-anchor": "end" }, fmt(task.min_batch)),
    );
  }
  if (windows.length) parts.push(svg("text", { class: "tick", x: left, y: height - 6 }, utc(windows[0].start)));
  if (windows.length > 1) {
    const last = utc(windows.at(-1).start);
    parts.push(svg("text", { class: "tick", x: width - right, y: height - 6, "text-anchor": "end" }, last));
  }
  chart.setAttribute("viewBox", `0 0 ${width} ${height}`);
  chart.setAttribute(
    "aria-label",
    `Reports per window: ${windows.length} windows, min batch ${fmt(task.min_batch)}` +
      (current ? `; selected ${range(current)} with ${fmt(current.n)} reports` : ""),
  );
  chart.replaceChildren(...parts);
}

function renderEstimates(task, win) {
  $("estimates-section").hidden = !win;
  if (!win) return;
  const level = percent(task.confidence);
  const rows = win.estimates;
  const withheld = $("withheld");
  withheld.hidden = Boolean(rows);
  withheld.textContent = rows ? "" : `Withheld: ${win.withheld ?? "no estimates for this window"}`;
  $("estimates-chart").toggleAttribute("hidden", !rows); // an SVG element has no .hidden property
  $("estimates-table").hidden = !rows;
  const { items, caption } = rows ? chartItems(task, win, level) : { items: [], caption: "" };
  const about = `${task.mechanism}, ${range(win)}, ${fmt(win.n)} reports.`;
  $("estimates-caption").textContent = `${about} ${caption}${centralText(win.central)}`;
  if (!rows) return;
  drawEstimatesChart($("estimates-chart"), items, level);
  renderEstimatesTable(rows);
}

// How the caption names the consistent view of a frequency table (the reply's `consistency`).
const VIEW_NAMES = { "norm-sub": "Norm-Sub", "norm-mul": "Norm-Mul", clip: "clipped", "base-cut": "Base-Cut", em: "EM" };

// What the chart draws: one {label, value, low, high} per bar.
function chartItems(task, win, level) {
  const rows = win.estimates;
  if (task.kind === "mean") {
    // grouped tables label rows by group (null is the overall row)
    const label = (r, i) =>
      "group" in r ? String(r.group ?? "overall") : rows.length > 1 ? `row ${i + 1}` : "mean";
    return {
      caption: `Mean with its ${level} confidence interval.`,
      items: rows.map((r, i) => ({ label: label(r, i), value: r.mean, low: r.ci_low, high: r.ci_high })),
    };
  }
  if (rows.length && "bit" in rows[0]) return pooledBits(rows, level);
  if (task.kind === "records") return recordItems(rows, win, level);
  const per = (x) => (finite(x) && win.n > 0 ? x / win.n : null);
  // the consistent view by default (non-negative, summing to the reports), said in the caption
  const consistent = rows.length > 0 && "consistent" in rows[0];
  const view = consistent
    ? `Bars: the consistent view (${VIEW_NAMES[win.consistency] ?? win.consistency ?? "consistent"}: ` +
      `non-negative, summing to 1; biased, lower total error), column consistent`
    : "Bars: the unbiased proportion of reports per value";
  return {
    caption:
      `${view}; error bars: ` +
      `the unbiased estimate's ${level} confidence interval divided by the window's reports.`,
    items: rows.map((r) => ({
      label: String(r.value),
      value: consistent ? per(r.consistent) : r.proportion,
      low: per(r.ci_low),
      high: per(r.ci_high),
    })),
  };
}

// A multi-attribute table: one bar per (attribute, value) of the categorical attributes, as a share of the
// window's records (the consistent view when the table has one); a numeric attribute's mean is in other
// units, so the caption gives it with its interval and the table has its row.
function recordItems(rows, win, level) {
  const per = (x) => (finite(x) && win.n > 0 ? x / win.n : null);
  const counts = rows.filter((r) => r.statistic === "count");
  const consistent = counts.length > 0 && "consistent" in counts[0];
  const means = rows
    .filter((r) => r.statistic === "mean")
    .map((r) => `${r.attribute}: mean ${fmt(r.estimate)} [${fmt(r.ci_low)}, ${fmt(r.ci_high)}]`);
  const view = consistent
    ? `Bars: each attribute's consistent view (${VIEW_NAMES[win.consistency] ?? win.consistency ?? "consistent"}), ` +
      "as a share of the records"
    : "Bars: each attribute's unbiased share of the records";
  return {
    caption:
      `${view}; error bars: the unbiased estimate's ${level} confidence interval.` +
      (means.length ? ` Means (${level} intervals): ${means.join("; ")}.` : ""),
    items: counts.map((r) => ({
      label: `${r.attribute}: ${r.value}`,
      value: consistent ? per(r.consistent) : per(r.estimate),
      low: per(r.ci_low),
      high: per(r.ci_high),
    })),
  };
}

// RAPPOR Bloom rows are per (cohort, bit). Each cohort hashes values with its own
// functions, so this only shows how often each bit is set: the pooled rate
// Σ estimate / Σ reports over cohorts. Its interval adds the cohorts' variances
// (cohorts are disjoint sets of clients), using the rows' own z = (ci_high − estimate) / std_error.
function pooledBits(rows, level) {
  const cohorts = new Set(rows.map((r) => r.cohort)).size;
  const zRow = rows.find((r) => finite(r.ci_high) && finite(r.estimate) && r.std_error > 0);
  const z = zRow ? (zRow.ci_high - zRow.estimate) / zRow.std_error : 1.96;
  const bits = new Map();
  for (const r of rows) {
    const sum = bits.get(r.bit) ?? { estimate: 0, variance: 0, reports: 0 };
    if (finite(r.estimate) && finite(r.std_error) && r.reports > 0) {
      sum.estimate += r.estimate;
      sum.variance += r.std_error ** 2;
      sum.reports += r.reports;
    }
    bits.set(r.bit, sum);
  }
  const items = [...bits.entries()]
    .sort(([a], [b]) => a - b)
    .map(([bit, s]) => {
      const value = s.reports ? s.estimate / s.reports : null;
      const half = s.reports ? (z * Math.sqrt(s.variance)) / s.reports : null;
      if (value == null) return { label: `bit ${bit}`, value, low: null, high: null };
      return { label: `bit ${bit}`, value, low: value - half, high: value + half };
    });
  const caption =
    `Share of reports setting each Bloom filter bit, pooled over ${cohorts} cohort${cohorts === 1 ? "" : "s"} ` +
    `(weighted by their reports; ${level} intervals). ` +
    "Cohorts hash values differently: decode against candidate values to estimate values.";
  return { items, caption };
}

// Bars from zero with error bars; the scale is linear, so a bar's height and its
// error bar's ends are proportional to value, low and high (the test checks this).
function drawEstimatesChart(chart, items, level) {
  const [width, height, left, right, top] = [600, 260, 56, 8, 10];
  const tilted = items.length > 8;
  const bottom = items.length > 40 ? 12 : tilted ? 70 : 24;
  const numbers = items.flatMap((it) => [it.value, it.low, it.high]).filter(finite);
  let [lo, hi] = [Math.min(0, ...numbers), Math.max(0, ...numbers)];
  if (hi === lo) hi = lo + 1;
  const y = (v) => top + ((hi - v) / (hi - lo)) * (height - top - bottom);
  const step = (width - left - right) / Math.max(items.length, 1);
  const parts = [
    svg("line", { class: "axis zero", x1: left, x2: width - right, y1: y(0), y2: y(0) }),
    ...[0, hi, lo]
      .filter((v, i, all) => all.slice(0, i).every((u) => Math.abs(y(u) - y(v)) >= 12)) // no overlaps
      .map((v) => svg("text", { class: "tick", x: left - 4, y: y(v), "text-anchor": "end" }, TICK.format(v))),
  ];
  // value labels under the bars, tilted when there are many; none past 40 (the table has them)
  const labels = items.length > 40 ? null : { y: height - bottom + 14, tilted };
  items.forEach((item, i) => {
    parts.push(estimateBar(item, { x: left + i * step, step, y, level, labels }));
  });
  chart.setAttribute("viewBox", `0 0 ${width} ${height}`);
  chart.replaceChildren(...parts);
}

function estimateBar(item, { x, step, y, level, labels }) {
  const center = x + step / 2;
  const group = svg("g", {
    class: "estimate",
    "data-label": item.label,
    "data-value": item.value ?? "",
    "data-low": item.low ?? "",
    "data-high": item.high ?? "",
  });
  const interval = `${level} CI ${fmt(item.low)} to ${fmt(item.high)}`;
  group.append(svg("title", {}, `${item.label}: ${fmt(item.value)} (${interval})`));
  if (finite(item.value)) {
    const [a, b] = [y(item.value), y(0)];
    const width = Math.min(step * 0.7, 80);
    const bar = { class: "bar", x: center - width / 2, y: Math.min(a, b), width, height: Math.abs(a - b) };
    group.append(svg("rect", bar));
  }
  if (finite(item.low) && finite(item.high)) {
    const cap = Math.min(step * 0.2, 8);
    group.append(
      svg("line", { class: "ci", x1: center, x2: center, y1: y(item.high), y2: y(item.low) }),
      svg("line", { class: "ci cap", x1: center - cap, x2: center + cap, y1: y(item.high), y2: y(item.high) }),
      svg("line", { class: "ci cap", x1: center - cap, x2: center + cap, y1: y(item.low), y2: y(item.low) }),
    );
  }
  if (labels) {
    const text = item.label.length > 12 ? `${item.label.slice(0, 11)}…` : item.label;
    const attrs = labels.tilted
      ? { "text-anchor": "end", transform: `rotate(-40 ${center} ${labels.y})` }
      : { "text-anchor": "middle" };
    group.append(svg("text", { class: "label", x: center, y: labels.y, ...attrs }, text));
  }
  return group;
}

// ---- the per-window series: each value's estimate in every window, with its interval ------------

// What a window's estimate measures, as the series chart's y axis says it.
function seriesUnit(task) {
  if (task.kind === "mean") return "Mean";
  const rows = task.windows.find((w) => w.estimates)?.estimates ?? [];
  return rows.length && "bit" in rows[0] ? "Share of reports setting the bit" : "Proportion of the window's reports";
}

// label -> its points, one per window with estimates, in time order (the bars' items of each window).
function seriesOf(task, level) {
  const series = new Map();
  for (const w of task.windows) {
    if (!w.estimates) continue;
    for (const item of chartItems(task, w, level).items) {
      if (!series.has(item.label)) series.set(item.label, []);
      series.get(item.label).push({ ...item, window: w });
    }
  }
  return series;
}

function renderSeries(task) {
  const windows = task ? task.windows.filter((w) => w.estimates) : [];
  $("series-section").hidden = windows.length < 2;
  if (windows.length < 2) return;
  const level = percent(task.confidence);
  const series = seriesOf(task, level);
  const labels = [...series.keys()];
  const average = (label) => {
    const values = series.get(label).map((p) => p.value).filter(finite);
    return values.length ? values.reduce((a, b) => a + b, 0) / values.length : -Infinity;
  };
  const largest = new Set([...labels].sort((a, b) => average(b) - average(a)).slice(0, MAX_SERIES));
  if (state.series !== null && !series.has(state.series)) state.series = null;
  // in the table's order, so that a value keeps its colour while the set shown is the same
  const shown = state.series === null ? labels.filter((l) => largest.has(l)) : [state.series];

  const all = labels.length > MAX_SERIES ? `The ${MAX_SERIES} largest of ${labels.length}` : `All ${labels.length}`;
  const select = $("series-select");
  select.replaceChildren(
    el("option", { value: "" }, `${all} (by mean over windows)`),
    ...labels.map((label, i) => el("option", { value: String(i) }, label)),
  );
  select.value = state.series === null ? "" : String(labels.indexOf(state.series));
  select.onchange = () => {
    state.series = select.value === "" ? null : labels[Number(select.value)];
    render();
  };

  const rounds = task.memoized
    ? "A longitudinal task: each window is one round, in which each client sends one report. "
    : "";
  $("series-caption").textContent =
    `${rounds}${seriesUnit(task)} in each window, with its ${level} confidence interval as error bars; ` +
    "windows withheld or without reports leave a gap.";
  const lines = shown.map((label) => ({ label, points: series.get(label) }));
  drawSeriesChart($("series-chart"), task, lines, level);
  $("series-legend").replaceChildren(
    ...lines.map((line, i) => el("li", {}, el("span", { class: `swatch s${i}`, "aria-hidden": "true" }), line.label)),
  );
}

// Round tick values enclosing [lo, hi]: 1, 2 or 5 times a power of ten apart, about `count` of them.
function niceTicks(lo, hi, count) {
  const raw = (hi - lo) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const ticks = [];
  const [from, to] = [Math.floor(lo / step + 1e-9), Math.ceil(hi / step - 1e-9)]; // the ticks enclose [lo, hi]
  for (let i = from; i <= to; i++) ticks.push(Number((i * step).toPrecision(12)));
  return ticks;
}

// One line per value over the windows (x: window start, one slot per window length; y: linear), a point
// and an error bar per window; the lines' error bars are set side by side so that none hides another.
function drawSeriesChart(chart, task, lines, level) {
  const [width, height, left, right, top, bottom] = [600, 290, 66, 12, 12, 50];
  const withEstimates = task.windows.filter((w) => w.estimates);
  const [first, last] = [withEstimates[0].start, withEstimates.at(-1).start];
  const slots = Math.round((last - first) / task.window) + 1;
  const step = (width - left - right) / slots;
  const slot = (w) => Math.round((w.start - first) / task.window);
  const numbers = lines.flatMap((l) => l.points.flatMap((p) => [p.value, p.low, p.high])).filter(finite);
  let [lo, hi] = numbers.length ? [Math.min(...numbers), Math.max(...numbers)] : [0, 1];
  if (hi - lo < 1e-12) [lo, hi] = [lo - 0.5, hi + 0.5];
  const ticks = niceTicks(lo, hi, 5);
  [lo, hi] = [Math.min(lo, ticks[0]), Math.max(hi, ticks.at(-1))];
  const y = (v) => top + ((hi - v) / (hi - lo)) * (height - top - bottom);
  const parts = [];
  for (const v of ticks) {
    parts.push(
      svg("line", { class: "grid", x1: left, x2: width - right, y1: y(v), y2: y(v) }),
      svg("text", { class: "tick", x: left - 4, y: y(v), "text-anchor": "end" }, TICK.format(v)),
    );
  }
  parts.push(svg("line", { class: "axis", x1: left, x2: width - right, y1: height - bottom, y2: height - bottom }));
  // x ticks: at most 6 windows, evenly spread, dated (days alone when the window is whole days)
  const date = (t) => (task.window % 86400 === 0 ? utc(t).slice(0, 10) : utc(t));
  const every = Math.ceil(withEstimates.length / 6);
  withEstimates.forEach((w, i) => {
    if (i % every !== 0 && i !== withEstimates.length - 1) return;
    if (i !== withEstimates.length - 1 && withEstimates.length - 1 - i < every) return; // no crowding at the end
    const cx = left + (slot(w) + 0.5) * step;
    parts.push(
      svg("line", { class: "axis", x1: cx, x2: cx, y1: height - bottom, y2: height - bottom + 4 }),
      svg("text", { class: "tick", x: cx, y: height - bottom + 14, "text-anchor": "middle" }, date(w.start)),
    );
  });
  const xTitle = `${task.memoized ? "Round: window" : "Window"} start (UTC), one every ${duration(task.window)}`;
  parts.push(svg("text", { class: "axis-title", x: left + (width - left - right) / 2, y: height - 8, "text-anchor": "middle" }, xTitle));
  const yMid = top + (height - top - bottom) / 2;
  parts.push(
    svg("text", { class: "axis-title", x: 12, y: yMid, "text-anchor": "middle", transform: `rotate(-90 12 ${yMid})` }, seriesUnit(task)),
  );
  const dodge = Math.min((step * 0.5) / Math.max(lines.length, 1), 8);
  lines.forEach((line, i) => {
    const shift = (i - (lines.length - 1) / 2) * dodge;
    const at = (p) => left + (slot(p.window) + 0.5) * step + shift;
    const group = svg("g", { class: `series s${i}`, "data-label": line.label });
    let path = "";
    let previous = null;
    for (const p of line.points) {
      if (!finite(p.value)) {
        previous = null;
        continue;
      }
      const joined = previous !== null && slot(p.window) === slot(previous.window) + 1; // adjacent windows only
      path += `${joined ? "L" : "M"}${at(p).toFixed(2)} ${y(p.value).toFixed(2)} `;
      previous = p;
    }
    if (path) group.append(svg("path", { class: "line", d: path.trim() }));
    for (const p of line.points) group.append(seriesPoint(p, at(p), y, line.label, level));
    parts.push(group);
  });
  chart.setAttribute("viewBox", `0 0 ${width} ${height}`);
  chart.replaceChildren(...parts);
}

function seriesPoint(p, cx, y, label, level) {
  const point = svg("g", {
    class: "point",
    "data-start": p.window.start,
    "data-value": p.value ?? "",
    "data-low": p.low ?? "",
    "data-high": p.high ?? "",
  });
  const interval = `${level} CI ${fmt(p.low)} to ${fmt(p.high)}`;
  point.append(svg("title", {}, `${label}, ${range(p.window)}: ${fmt(p.value)} (${interval})`));
  if (finite(p.low) && finite(p.high)) {
    point.append(
      svg("line", { class: "ci", x1: cx, x2: cx, y1: y(p.high), y2: y(p.low) }),
      svg("line", { class: "ci cap", x1: cx - 3, x2: cx + 3, y1: y(p.high), y2: y(p.high) }),
      svg("line", { class: "ci cap", x1: cx - 3, x2: cx + 3, y1: y(p.low), y2: y(p.low) }),
    );
  }
  if (finite(p.value)) point.append(svg("circle", { class: "dot", cx, cy: y(p.value), r: 3 }));
  return point;
}

function renderEstimatesTable(rows) {
  const table = $("estimates-table");
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  table.tHead.replaceChildren(el("tr", {}, ...columns.map((c) => el("th", { scope: "col" }, c))));
  const td = (c, r) => el("td", LABEL_COLUMNS.has(c) ? { class: "label" } : {}, cell(c, r[c]));
  const body = rows.map((r) => el("tr", {}, ...columns.map((c) => td(c, r))));
  table.tBodies[0].replaceChildren(...body);
}

tick();
