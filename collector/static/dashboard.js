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
// A categorical attribute of a multi-attribute task: the window's chart draws at most this many values (the largest).
const TOP_VALUES = 20;

const state = {
  data: null, // the last reply of v1/dashboard
  text: "", // its body: an unchanged reply is not drawn again
  task: null, // the selected task id
  start: null, // the selected window's start, or null to follow the latest window with estimates
  series: null, // the value whose per-window series is shown alone, or null for the largest values
  attribute: null, // the attribute of a multi-attribute task shown, or null for its first
  measure: "frequency", // what a key-value task's series shows: "frequency" or "mean"
  width: null, // the page's width when last drawn (the charts are drawn at it)
  stale: false, // a select was open when last drawn and kept its options: draw again at the next poll
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
// numbers to 5 significant digits; tiny ones (a p-value of 1e-18) in scientific notation, not as 20 zeros
const fmt = (x) =>
  finite(x)
    ? x !== 0 && Math.abs(x) < 1e-4
      ? Number(x.toPrecision(5)).toExponential()
      : NUMBER.format(x)
    : x == null
      ? "–"
      : String(x);
const cell = (column, x) =>
  LABEL_COLUMNS.has(column) ? String(x ?? "–") : typeof x === "boolean" ? (x ? "yes" : "no") : fmt(x);
const shortId = (id) => (id.length > 10 ? `${id.slice(0, 8)}…` : id);
const percent = (level) => `${Math.round((level ?? 0.95) * 1000) / 10}%`;
// shuffle mode: the central (ε, δ) of the window's shuffled reports (docs/collector.md#shuffle)
const centralText = (c) =>
  c ? ` Shuffled: central ε ≤ ${Number(c.epsilon).toPrecision(3)} at δ = ${String(c.delta)} (${c.bound}).` : "";

// Charts are drawn at their width on screen (one SVG unit is one CSS pixel), so their 11 px text stays 11 px
// at a phone's width and the layout (ticks, labels) adapts instead of shrinking.
function chartWidth(chart) {
  const width = chart.parentElement?.clientWidth ?? 0;
  return Math.max(280, Math.round(width || 600));
}
// About how wide a chart label of `text` is at 11 px (generous: wide letters and digits included).
const textWidth = (text) => String(text).length * 7;
// How labels under bars `step` units apart fit: side by side, turned upright, or not at all (the table has them).
function labelMode(texts, step) {
  const widest = Math.max(0, ...texts.map(textWidth));
  if (step >= widest + 6) return { mode: "flat", space: 18 };
  if (step >= 14) return { mode: "upright", space: widest + 10 };
  return { mode: null, space: 4 };
}

// CSV of `rows` (objects) with `columns`: numbers at full precision, null as empty; a text cell is quoted
// when it must be, and one that a spreadsheet would run as a formula (= + - @, tab, CR) starts with '.
function csvText(columns, rows) {
  const quote = (x) => {
    if (x == null) return "";
    if (typeof x === "number") return Number.isFinite(x) ? String(x) : "";
    let text = String(x);
    if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
    return /[",\r\n]/.test(text) || text !== text.trim() ? `"${text.replaceAll('"', '""')}"` : text;
  };
  return [columns.map(quote), ...rows.map((r) => columns.map((c) => quote(r[c])))].map((line) => line.join(",")).join("\r\n") + "\r\n";
}

function download(filename, columns, rows) {
  const url = URL.createObjectURL(new Blob([csvText(columns, rows)], { type: "text/csv;charset=utf-8" }));
  const link = el("a", { href: url, download: filename, hidden: "" });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

const columnsOf = (rows) => [...new Set(rows.flatMap((r) => Object.keys(r)))];
// a file name from a task id and a time: letters, digits, - and _ only
const fileStem = (task, start) => `${String(task.task).slice(0, 8).replace(/[^\w-]/g, "_")}-${utc(start).replace(/[^\d]/g, "")}`;

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
    if (text !== state.text || state.stale) {
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

// The charts follow the page's width: a resize that keeps it (a phone's toolbar sliding away, a full-page
// screenshot) redraws nothing, since a redraw replaces the chart's bars, one of which may be under the pointer.
let resizeTimer = null;
const pageWidth = () => document.documentElement.clientWidth;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => state.data && pageWidth() !== state.width && render(), 150);
});

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
  state.width = pageWidth();
  state.stale = false;
  keepingFocus(() => {
    renderTasks(tasks);
    renderPickers(task);
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
  state.attribute = null;
  state.measure = "frequency";
  render();
}

// ---- multi-attribute and key-value tasks: which attribute, which estimate ---------------------------

// A multi-attribute task's attributes ({name, statistic}, in spec order): the reply's list, else the ones its
// windows' tables name.
function attributesOf(task) {
  if (Array.isArray(task.attributes) && task.attributes.length) return task.attributes;
  const seen = new Map();
  for (const w of task.windows) {
    for (const r of w.estimates ?? []) {
      if (!seen.has(r.attribute)) seen.set(r.attribute, { name: r.attribute, statistic: r.statistic });
    }
  }
  return [...seen.values()];
}

// The attribute shown: the one chosen if the task has it, else its first.
function currentAttribute(task) {
  const attributes = attributesOf(task);
  return attributes.find((a) => a.name === state.attribute) ?? attributes[0] ?? null;
}

// An attribute as its selector offers it, short enough for a phone: "os: 3 values", "latency: mean".
const describeAttribute = (a) =>
  a.statistic === "mean" ? `${a.name}: mean` : `${a.name}: ${finite(a.domain_size) ? `${fmt(a.domain_size)} values` : "values"}`;

// A key-value task (PCKV, PrivKVM): each key's frequency and its mean value, in each window's table.
function isKeyed(task) {
  const rows = task.windows.find((w) => w.estimates)?.estimates ?? [];
  return task.kind === "frequency" && rows.length > 0 && "mean" in rows[0] && "value" in rows[0];
}

// Whether a select's list of options is open (the :open pseudo-class; a browser without it never says so).
function isOpen(select) {
  try {
    return select.matches(":open");
  } catch {
    return false;
  }
}

// Fill a select with `options` ([value, label] pairs) and choose `chosen` (a value). Its options are kept by value
// and updated in place (keyedChildren), and the choice is set only when it differs, so a redraw keeps the select
// (and its focus) and changes only what changed. An open select is left as it is: its list marks the option the
// person is on by its place, which a new option above it (a new window) would move onto another; the page is
// drawn again at the next poll (state.stale), after the person chose or closed it.
function fillSelect(select, options, chosen, onChoose) {
  select.onchange = () => onChoose(select.value); // option values are stable: a choice from a list kept open holds
  if (isOpen(select)) {
    state.stale = true;
    return;
  }
  keyedChildren(select, options, ([value]) => value, () => el("option"), (option, [value, label]) => {
    setAttr(option, "value", value);
    setText(option, label);
  });
  const value = options.some(([v]) => v === chosen) ? chosen : (options[0]?.[0] ?? "");
  if (select.value !== value) select.value = value;
}

// The attribute selectors of a multi-attribute task (above its window's chart and above its series: one choice,
// both show it), and the choice of a key-value task's series (each key's frequency, or its mean value).
function renderPickers(task) {
  const records = task?.kind === "records" ? attributesOf(task) : [];
  const keyed = Boolean(task) && isKeyed(task);
  $("attribute-picker").hidden = records.length === 0;
  $("series-view-picker").hidden = records.length === 0 && !keyed;
  if (records.length) {
    const choose = (name) => {
      state.attribute = name;
      state.series = null;
      render();
    };
    const options = records.map((a) => [a.name, describeAttribute(a)]);
    const chosen = currentAttribute(task).name;
    fillSelect($("attribute-select"), options, chosen, choose);
    setText($("series-view-label"), "Attribute");
    fillSelect($("series-view-select"), options, chosen, choose);
  } else if (keyed) {
    const options = [
      ["frequency", "Each key's frequency"],
      ["mean", "Each key's mean value"],
    ];
    setText($("series-view-label"), "Estimate");
    fillSelect($("series-view-select"), options, state.measure, (measure) => {
      state.measure = measure;
      state.series = null;
      render();
    });
  }
}

function selectWindow(start) {
  state.start = start;
  render();
}

// Set an attribute or a text only when it changes (a redraw of the same data changes nothing in the DOM).
function setAttr(node, name, value) {
  if (node.getAttribute(name) !== String(value)) node.setAttribute(name, String(value));
}
function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

// The key each node that keyedChildren keeps was made for.
const nodeKeys = new WeakMap();

// Make `parent`'s children one node per item, in order: the node made for an item's key before is kept and
// updated in place (`update(node, item, index)`), a new key gets `make(key)`, a key gone takes its node away. Nodes
// move only when the order changes: a node in its place is never taken out of the page, so a press on it that a
// redraw lands in (a poll with new data, between the press and the release) is still a click on it. `parent`
// holds only these nodes.
function keyedChildren(parent, items, keyOf, make, update) {
  const keys = items.map((item) => String(keyOf(item)));
  const wanted = new Set(keys);
  const kept = new Map();
  for (const node of [...parent.children]) {
    const key = nodeKeys.get(node);
    if (key !== undefined && wanted.has(key) && !kept.has(key)) kept.set(key, node);
    else node.remove();
  }
  items.forEach((item, i) => {
    let node = kept.get(keys[i]);
    if (!node) {
      node = make(keys[i]);
      nodeKeys.set(node, keys[i]);
    }
    update(node, item, i);
    if (parent.children[i] !== node) parent.insertBefore(node, parent.children[i] ?? null);
  });
}

// What each chart, table or list was last drawn from. One whose inputs are the same is left as it is, so a
// poll's redraw keeps what a person is doing with it: a tooltip shown over a bar, text selected in a table.
const drawnFrom = new WeakMap();
function changed(node, ...inputs) {
  const signature = JSON.stringify(inputs);
  if (drawnFrom.get(node) === signature) return false;
  drawnFrom.set(node, signature);
  return true;
}

// A task's row of the task table: its button (which selects it) and six cells, filled by renderTasks.
function taskRow(id) {
  const button = el("button", { type: "button", "data-key": `task:${id}` }, shortId(id));
  button.addEventListener("click", () => selectTask(id));
  const cells = Array.from({ length: 6 }, (_, i) => el("td", i < 2 ? { class: i ? "label" : "label name" } : {}));
  return el("tr", {}, el("th", { scope: "row" }, button), ...cells);
}

function renderTasks(tasks) {
  $("tasks-section").hidden = false;
  $("no-tasks").hidden = tasks.length > 0;
  $("tasks").hidden = tasks.length === 0;
  keyedChildren($("tasks").tBodies[0], tasks, (task) => task.task, taskRow, (row, task) => {
    const id = String(task.task);
    const button = row.querySelector("button");
    const selected = task.task === state.task;
    setAttr(row, "class", selected ? "selected" : "");
    setAttr(button, "title", id);
    setAttr(button, "aria-label", `Show task ${id}`);
    setAttr(button, "aria-pressed", String(selected));
    const texts = [
      task.name || "–",
      String(task.mechanism ?? "–"),
      duration(task.window),
      duration(task.time_precision),
      fmt(task.min_batch),
      fmt(task.windows.length),
    ];
    texts.forEach((text, j) => setText(row.cells[j + 1], text));
  });
  // the selected task's name and description (both "" when none was given)
  const task = tasks.find((t) => t.task === state.task);
  $("task-about").hidden = !(task?.name || task?.description);
  $("task-name").textContent = task?.name ? `${task.name}${task.description ? ":" : ""}` : "";
  $("task-description").textContent = task?.description ? `${task?.name ? " " : ""}${task.description}` : "";
}

function renderWindows(task, current) {
  $("windows-section").hidden = !task;
  if (!task) return;
  // a task without reports says so, rather than offering a chart and a window to choose
  const empty = !task.windows.some((w) => w.n > 0);
  $("no-reports").hidden = !empty;
  $("windows-body").hidden = empty;
  if (empty) return;
  drawWindowsChart($("windows-chart"), task, current);
  // the select lists the latest window first; its first option follows the live data
  const follow = task.windows.some((w) => w.estimates) ? "Latest with estimates" : "Latest window";
  const options = [["", follow]];
  for (const w of [...task.windows].reverse()) {
    const notes = [w.estimates ? "" : "withheld", w.pruned ? "raw reports deleted" : ""].filter(Boolean);
    options.push([String(w.start), `${range(w)}: ${fmt(w.n)} reports${notes.length ? ` (${notes.join(", ")})` : ""}`]);
  }
  const chosen = state.start == null ? "" : String(current?.start ?? "");
  fillSelect($("window-select"), options, chosen, (value) => selectWindow(value === "" ? null : Number(value)));
  const shown = task.windows.map((w) => [w.start, w.end, w.n, w.estimates ? "" : w.withheld, w.pruned]);
  if (!changed($("windows-table"), shown)) return;
  const rows = task.windows.map((w) =>
    el(
      "tr",
      {},
      el("td", {}, utc(w.start)),
      el("td", {}, utc(w.end)),
      el("td", {}, fmt(w.n)),
      el(
        "td",
        {},
        (w.estimates ? "shown" : `withheld: ${w.withheld ?? "no estimates"}`) +
          (w.pruned ? "; raw reports deleted by the retention, estimates from the kept aggregate" : ""),
      ),
    ),
  );
  $("windows-table").tBodies[0].replaceChildren(...rows);
}

// Bars of n per window, each labelled with its count under it, and the labelled min-batch line; clicking a
// bar selects its window (the select above is the keyboard way to do the same).
function drawWindowsChart(chart, task, current) {
  const width = chartWidth(chart);
  const [plotHeight, left, right, top] = [120, 60, 10, 18];
  const windows = task.windows;
  const step = (width - left - right) / Math.max(windows.length, 1);
  const counts = windows.map((w) => fmt(w.n ?? 0));
  const labels = labelMode(counts, step);
  const axisY = top + plotHeight;
  const height = axisY + labels.space + 34;
  const ticks = niceTicks(0, Math.max(1, task.min_batch ?? 0, ...windows.map((w) => w.n ?? 0)), 4);
  const max = ticks.at(-1);
  const y = (v) => top + (1 - v / max) * plotHeight;
  const barWidth = Math.min(step * 0.8, 60);
  const under = [];
  for (const v of ticks) {
    under.push(
      svg("line", { class: v === 0 ? "axis" : "grid", x1: left, x2: width - right, y1: y(v), y2: y(v) }),
      svg("text", { class: "tick", x: left - 4, y: y(v), "text-anchor": "end" }, TICK.format(v)),
    );
  }
  // the bars, kept by window start and updated in place (keyedChildren): a press on a bar that a poll's redraw lands in
  // is still a click on that bar
  const bars = chart.querySelector(":scope > g.bars") ?? svg("g", { class: "bars" });
  keyedChildren(bars, windows, (w) => w.start, windowBar, (bar, w, i) => {
    // at least 2 units tall, so that a window of a few reports still shows (and can be clicked)
    const barTop = Math.min(y(w.n ?? 0), y(0) - (w.n > 0 ? 2 : 0));
    const classes = ["bar", w.estimates ? "" : "withheld", w.pruned ? "pruned" : "", w === current ? "selected" : ""];
    const center = left + (i + 0.5) * step;
    setAttr(bar, "class", classes.filter(Boolean).join(" "));
    setAttr(bar, "x", center - barWidth / 2);
    setAttr(bar, "y", barTop);
    setAttr(bar, "width", barWidth);
    setAttr(bar, "height", y(0) - barTop);
    setAttr(bar, "data-n", w.n);
    setText(bar.firstChild, `${range(w)}: ${fmt(w.n)} reports${w.pruned ? " (raw reports deleted; aggregate kept)" : ""}`);
  });
  const parts = [];
  if (labels.mode) {
    counts.forEach((count, i) => parts.push(underLabel("count", count, left + (i + 0.5) * step, axisY, labels.mode)));
  }
  if (finite(task.min_batch)) {
    const lineY = y(task.min_batch);
    parts.push(
      svg("line", { class: "min-batch", x1: left, x2: width - right, y1: lineY, y2: lineY }),
      svg(
        "text",
        { class: "min-batch-label", x: width - right, y: lineY - 7, "text-anchor": "end" },
        `min batch ${fmt(task.min_batch)}: fewer reports are withheld`,
      ),
    );
  }
  const datesY = axisY + labels.space + 8;
  if (windows.length) parts.push(svg("text", { class: "tick", x: left, y: datesY }, utc(windows[0].start)));
  if (windows.length > 1) {
    const last = utc(windows.at(-1).start);
    parts.push(svg("text", { class: "tick", x: width - right, y: datesY, "text-anchor": "end" }, last));
  }
  parts.push(...axisTitles({ width, left, right, top, plotHeight, bottomY: height - 6 }, "Window start (UTC)", "Reports"));
  chart.setAttribute("viewBox", `0 0 ${width} ${height}`);
  chart.setAttribute(
    "aria-label",
    `Reports per window: ${windows.length} windows, min batch ${fmt(task.min_batch)}` +
      (current ? `; selected ${range(current)} with ${fmt(current.n)} reports` : ""),
  );
  // the rest is drawn anew around the bars, which stay in the page
  for (const node of [...chart.children]) if (node !== bars) node.remove();
  if (!bars.isConnected) chart.append(bars);
  bars.before(...under);
  bars.after(...parts);
}

// A press on a window's bar released where it was pressed selects that window even when a poll's redraw moved
// the bar from under the pointer in between (a new window narrows the bars); a release on the bar is its click.
let pressedBar = null;
$("windows-chart").addEventListener("pointerdown", (event) => {
  const bar = event.target.closest?.("rect.bar");
  pressedBar = bar && event.button === 0 ? { bar, x: event.clientX, y: event.clientY } : null;
});
window.addEventListener("pointerup", (event) => {
  const press = pressedBar;
  pressedBar = null;
  if (!press || event.target === press.bar || !press.bar.isConnected) return;
  if (Math.hypot(event.clientX - press.x, event.clientY - press.y) <= 4) selectWindow(Number(press.bar.dataset.start));
});

// A window's bar in the reports-per-window chart (drawWindowsChart sets its place and size); a click selects
// its window.
function windowBar(start) {
  const bar = svg("rect", { "data-start": start }, svg("title"));
  bar.addEventListener("click", () => selectWindow(Number(start)));
  return bar;
}

// A label under a bar: centred, or upright (reading upwards) when bars are narrow.
function underLabel(kind, text, center, axisY, mode) {
  const at = axisY + (mode === "flat" ? 11 : 6);
  const attrs =
    mode === "flat"
      ? { "text-anchor": "middle" }
      : { "text-anchor": "end", transform: `rotate(-90 ${center} ${at})` };
  return svg("text", { class: kind, x: center, y: at, ...attrs }, text);
}

// The x axis title centred under the plot, the y axis title upright at the left.
function axisTitles({ width, left, right, top, plotHeight, bottomY }, xTitle, yTitle) {
  const titles = [];
  if (xTitle) {
    const x = left + (width - left - right) / 2;
    titles.push(svg("text", { class: "axis-title", x, y: bottomY, "text-anchor": "middle" }, xTitle));
  }
  if (yTitle) {
    const yMid = top + plotHeight / 2;
    const attrs = { class: "axis-title", x: 12, y: yMid, "text-anchor": "middle", transform: `rotate(-90 12 ${yMid})` };
    titles.push(svg("text", attrs, yTitle));
  }
  return titles;
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
  $("estimates-details").hidden = !rows;
  $("estimates-csv").hidden = !rows;
  const drawn = rows ? chartItems(task, win, level) : { items: [], caption: "" };
  const about = `${task.mechanism}, ${range(win)}, ${fmt(win.n)} reports.`;
  $("estimates-caption").textContent = `${about} ${drawn.caption}${centralText(win.central)}`;
  const pruned = $("pruned-note");
  pruned.hidden = !win.pruned;
  pruned.textContent = win.pruned
    ? `This window's raw reports were deleted by the task's retention (${
        finite(task.retain) ? `kept ${duration(task.retain)} after a window ends` : "since removed"
      }); its estimates come from the aggregate kept for it, and an export of the window holds no reports.`
    : "";
  renderMeans(task, win, level);
  renderCdf(task, win, level);
  renderCandidates(task, win);
  if (!rows) return;
  drawEstimatesChart($("estimates-chart"), drawn.items, level, drawn.axes);
  renderTable($("estimates-table"), rows);
  // a RAPPOR Bloom table has a row per (cohort, bit): folded away, the chart pools it
  const folded = rows.length > 0 && "bit" in rows[0];
  const details = $("estimates-details");
  if (details.dataset.task !== `${task.task}:${folded}`) details.open = !folded; // the reader's choice sticks
  details.dataset.task = `${task.task}:${folded}`;
  $("estimates-summary").textContent = folded
    ? `Per-cohort bit estimates as a table (${fmt(rows.length)} rows)`
    : `Estimates as a table (${fmt(rows.length)} rows)`;
  $("estimates-csv").onclick = () => download(`${fileStem(task, win.start)}-estimates.csv`, columnsOf(rows), rows);
}

// Key-value tasks (PCKV, PrivKVM): each key's mean value with its interval, beside its frequency.
function renderMeans(task, win, level) {
  const rows = win.estimates ?? [];
  const keyed = win.estimates != null && isKeyed(task);
  $("means-block").hidden = !keyed;
  if (!keyed) return;
  $("means-caption").textContent =
    `Mean value of each key among the reports that hold it, with its ${level} confidence interval ` +
    "(columns mean, mean_ci_low, mean_ci_high).";
  drawEstimatesChart($("means-chart"), meanItems(rows), level, { x: "Key", y: "Mean value" });
}

// A key-value table's mean value of each key, with its interval (columns mean, mean_ci_low, mean_ci_high).
const meanItems = (rows) =>
  rows.map((r) => ({ label: String(r.value), value: r.mean, low: r.mean_ci_low, high: r.mean_ci_high }));

// Bloom RAPPOR tasks with candidates: the largest decoded candidates as a table (the chart draws them), with
// how many there are and where the rest are; the per-(cohort, bit) table stays folded below.
function renderCandidates(task, win) {
  const block = win.estimates ? win.candidates : null;
  $("candidates-block").hidden = !block;
  if (!block) return;
  const rows = block.rows;
  const all = fmt(block.num_candidates);
  $("candidates-table-caption").textContent =
    rows.length < block.num_candidates
      ? `The ${fmt(rows.length)} largest of ${all} decoded candidates`
      : `Decoded candidates (${all})`;
  $("candidates-note").textContent =
    `Decoded against the task's ${all} candidate values (ldp task update TASK --candidates FILE changes them); ` +
    "estimate is a number of reports, p_value tests it against zero, detected is significant after the " +
    `${CORRECTIONS[block.correction] ?? block.correction} correction at ${fmt(block.alpha)}` +
    (rows.length < block.num_candidates ? "; GET /v1/tasks/{task}/estimates gives every candidate." : ".");
  renderTable($("candidates-table"), rows);
  $("candidates-csv").onclick = () =>
    download(`${fileStem(task, win.start)}-candidates.csv`, columnsOf(rows), rows);
}

// Range tasks (range-hierarchy, range-haar): the CDF with its band and the quantiles (the reply's cdf, quantiles).
function renderCdf(task, win, level) {
  const cdf = win.estimates ? win.cdf : null;
  $("cdf-block").hidden = !cdf?.length;
  if (!cdf?.length) return;
  const quantiles = win.quantiles ?? [];
  $("cdf-caption").textContent =
    `The estimated share of reports at or below each value, with its ${level} confidence band ` +
    "(each point's exact variance, from the range estimate); dots mark the quantiles in the table.";
  drawCdfChart($("cdf-chart"), cdf, quantiles, level);
  if (changed($("quantiles-table"), quantiles)) {
    const rows = quantiles.map((q) =>
      el(
        "tr",
        {},
        el("td", {}, `p${fmt(q.quantile * 100)}`),
        el("td", { class: "label" }, String(q.value)),
        ...[q.cdf, q.ci_low, q.ci_high].map((x) => el("td", {}, fmt(x))),
      ),
    );
    $("quantiles-table").tBodies[0].replaceChildren(...rows);
  }
  $("cdf-csv").onclick = () =>
    download(`${fileStem(task, win.start)}-cdf.csv`, ["value", "cdf", "std_error", "ci_low", "ci_high"], cdf);
}

// The CDF as a line over the domain's order with its band; x ticks at a few domain values.
function drawCdfChart(chart, cdf, quantiles, level) {
  const width = chartWidth(chart);
  if (!changed(chart, width, cdf, quantiles, level)) return;
  const [plotHeight, left, right, top] = [200, 60, 12, 10];
  const axisY = top + plotHeight;
  const height = axisY + 40;
  const numbers = cdf.flatMap((r) => [r.cdf, r.ci_low, r.ci_high]).filter(finite);
  const ticks = niceTicks(Math.min(0, ...numbers), Math.max(1, ...numbers), 4);
  const [lo, hi] = [ticks[0], ticks.at(-1)];
  const y = (v) => top + ((hi - v) / (hi - lo)) * plotHeight;
  const step = (width - left - right) / cdf.length;
  const x = (i) => left + (i + 0.5) * step;
  const parts = [];
  for (const v of ticks) {
    parts.push(
      svg("line", { class: v === 0 ? "axis" : "grid", x1: left, x2: width - right, y1: y(v), y2: y(v) }),
      svg("text", { class: "tick", x: left - 4, y: y(v), "text-anchor": "end" }, TICK.format(v)),
    );
  }
  const points = cdf.map((r, i) => ({ ...r, i })).filter((r) => finite(r.cdf));
  const banded = points.filter((r) => finite(r.ci_low) && finite(r.ci_high));
  if (banded.length) {
    const upper = banded.map((r) => `${x(r.i).toFixed(2)} ${y(r.ci_high).toFixed(2)}`);
    const lower = [...banded].reverse().map((r) => `${x(r.i).toFixed(2)} ${y(r.ci_low).toFixed(2)}`);
    parts.push(svg("path", { class: "band", d: `M${upper.join(" L")} L${lower.join(" L")} Z` }));
  }
  if (points.length) {
    const d = points.map((r, k) => `${k ? "L" : "M"}${x(r.i).toFixed(2)} ${y(r.cdf).toFixed(2)}`).join(" ");
    parts.push(svg("path", { class: "cdf-line", d }));
  }
  const index = new Map(cdf.map((r, i) => [String(r.value), i]));
  for (const q of quantiles) {
    const i = index.get(String(q.value));
    if (i === undefined || !finite(q.cdf)) continue;
    parts.push(
      svg(
        "circle",
        { class: "quantile", cx: x(i), cy: y(q.cdf), r: 3.5, "data-quantile": q.quantile },
        svg("title", {}, `p${fmt(q.quantile * 100)}: ${String(q.value)} (CDF ${fmt(q.cdf)}, ${level} CI ${fmt(q.ci_low)} to ${fmt(q.ci_high)})`),
      ),
    );
  }
  // x ticks: a few domain values, each at least 90 units from the next, the last one always
  const every = Math.max(1, Math.ceil(90 / step));
  const last = cdf.length - 1;
  const marks = [];
  for (let i = 0; i < last; i += every) if (last - i >= every) marks.push(i);
  marks.push(last);
  for (const i of marks) {
    const text = String(cdf[i].value);
    parts.push(
      svg("line", { class: "axis", x1: x(i), x2: x(i), y1: axisY, y2: axisY + 4 }),
      svg("text", { class: "tick", x: x(i), y: axisY + 13, "text-anchor": "middle" }, text.length > 12 ? `${text.slice(0, 11)}…` : text),
    );
  }
  parts.push(...axisTitles({ width, left, right, top, plotHeight, bottomY: height - 6 }, "Value (in the domain's order)", "Share at or below"));
  chart.setAttribute("viewBox", `0 0 ${width} ${height}`);
  chart.replaceChildren(...parts);
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
      axes: { x: rows.length > 1 && "group" in rows[0] ? "Group" : "", y: "Mean" },
    };
  }
  if (win.candidates) return candidateItems(win, level);
  if (rows.length && "bit" in rows[0]) return pooledBits(rows, level);
  if (task.kind === "records") return recordItems(task, win, level);
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
      `the unbiased estimate's ${level} confidence interval divided by the window's reports.` +
      negativeNote(rows, consistent),
    axes: { x: "mean" in (rows[0] ?? {}) ? "Key" : "Value", y: "Share of the window's reports" },
    items: rows.map((r) => ({
      label: String(r.value),
      value: consistent ? per(r.consistent) : r.proportion,
      low: per(r.ci_low),
      high: per(r.ci_high),
    })),
  };
}

// Why an unbiased estimate can be below zero, said when the table has one.
function negativeNote(rows, consistent) {
  if (!rows.some((r) => finite(r.estimate) && r.estimate < 0)) return "";
  return (
    " Some unbiased estimates are below zero: the noise that protects each report can exceed a rare value's " +
    "count, and the unbiased estimate keeps that noise rather than cut it" +
    (consistent ? "; the consistent view (the bars) is never negative." : ".")
  );
}

// A multi-attribute table, one attribute at a time (the one chosen: currentAttribute). A categorical attribute:
// one bar per value (the TOP_VALUES largest when it has more; `all`: every value, for the series), the
// consistent view by default as a share of the window's records, error bars the unbiased estimate's interval.
// A numeric attribute: its mean with its interval.
function recordItems(task, win, level, all = false) {
  const attribute = currentAttribute(task);
  const name = attribute?.name ?? "";
  const rows = win.estimates.filter((r) => r.attribute === name);
  const mean = rows.find((r) => r.statistic === "mean");
  if (mean) {
    const reports = finite(mean.reports) && mean.reports !== win.n ? `the ${fmt(mean.reports)} of ${fmt(win.n)}` : `the ${fmt(win.n)}`;
    return {
      caption:
        `Attribute ${name}: its mean over ${reports} records whose report carries it, with its ${level} ` +
        `confidence interval: ${fmt(mean.estimate)} [${fmt(mean.ci_low)}, ${fmt(mean.ci_high)}].`,
      axes: { x: "Attribute", y: `Mean of ${name}` },
      items: [{ label: name, value: mean.estimate, low: mean.ci_low, high: mean.ci_high }],
    };
  }
  const per = (x) => (finite(x) && win.n > 0 ? x / win.n : null);
  const consistent = rows.some((r) => finite(r.consistent));
  const size = (r) => (consistent ? r.consistent : r.estimate) ?? -Infinity;
  const top = !all && rows.length > TOP_VALUES;
  const shown = top ? [...rows].sort((a, b) => size(b) - size(a)).slice(0, TOP_VALUES) : rows;
  const which = top ? `the ${fmt(TOP_VALUES)} largest of its ${fmt(rows.length)} values` : `each of its ${fmt(rows.length)} values`;
  const view = consistent
    ? `the consistent view (${VIEW_NAMES[win.consistency] ?? win.consistency ?? "consistent"}: non-negative, ` +
      "the attribute's values summing to 1; biased, lower total error), column consistent"
    : "the unbiased share of the records";
  const reports = rows.find((r) => finite(r.reports))?.reports;
  const sampled =
    finite(reports) && reports !== win.n
      ? ` Estimated from the ${fmt(reports)} of ${fmt(win.n)} records whose report carries ${name}, scaled to all of them.`
      : "";
  return {
    caption:
      `Attribute ${name}, ${which}. Bars: ${view}, as a share of the window's records; error bars: the ` +
      `unbiased estimate's ${level} confidence interval divided by the window's records.${sampled}` +
      negativeNote(rows, consistent),
    axes: { x: `Value of ${name}`, y: "Share of the window's records" },
    items: shown.map((r) => ({
      label: String(r.value),
      value: consistent ? per(r.consistent) : per(r.estimate),
      low: per(r.ci_low),
      high: per(r.ci_high),
    })),
  };
}

// How the candidates note names a decode's multiple-testing correction (the block's `correction`).
const CORRECTIONS = { bh: "Benjamini-Hochberg", bonferroni: "Bonferroni", none: "no" };
const share = (x) => `${TICK.format(x * 100)}%`;

// A Bloom RAPPOR window decoded against the task's candidates (the reply's `candidates`, largest first): one bar
// per candidate, its estimate as a share of the window's reports, with its interval; the caption says how much
// of the reports the candidates explain, and why an interval reaches below zero.
function candidateItems(win, level) {
  const block = win.candidates;
  const rows = block.rows;
  const per = (x) => (finite(x) && win.n > 0 ? x / win.n : null);
  const which =
    rows.length < block.num_candidates
      ? `the ${fmt(rows.length)} largest of ${fmt(block.num_candidates)} candidates`
      : `each of the ${fmt(rows.length)} candidates`;
  return {
    caption:
      `Bars: ${which}, decoded from the reports' Bloom filter bits (as ldp aggregate --candidates decodes), ` +
      `as a share of the window's reports; error bars: their ${level} confidence intervals. ` +
      explainedNote(block) +
      zeroNote(rows),
    axes: { x: "Candidate value", y: "Share of the window's reports" },
    items: rows.map((r) => ({
      label: String(r.value),
      short: middle(String(r.value)),
      value: per(r.estimate),
      low: per(r.ci_low),
      high: per(r.ci_high),
    })),
  };
}

// A candidate's label under its bar: its start and its end (candidates such as URLs differ at the end).
const middle = (label) => (label.length > 12 ? `${label.slice(0, 4)}…${label.slice(-7)}` : label);

// The share of the window's reports the candidates explain: the detected ones, all of them, and the rest.
function explainedNote(block) {
  const detected = `${fmt(block.num_detected)} of ${fmt(block.num_candidates)} candidates detected`;
  const parts = [];
  if (finite(block.allocated_mass)) parts.push(`${detected} explain ${share(block.allocated_mass)} of the reports`);
  else parts.push(detected);
  if (finite(block.explained_mass)) {
    const over = block.explained_mass > 1 ? " (over 100%: the small estimates of undetected candidates are mostly noise)" : "";
    parts.push(`all ${fmt(block.num_candidates)} estimates sum to ${share(block.explained_mass)}${over}`);
  }
  if (finite(block.unexplained_mass)) {
    const se = finite(block.unexplained_mass_se) ? ` (standard error ${share(block.unexplained_mass_se)})` : "";
    parts.push(`values outside the list: about ${share(block.unexplained_mass)}${se}`);
  }
  return `${parts.join("; ")}.`;
}

// Why an interval reaches below zero, said when one does: the decode's estimates are never negative.
function zeroNote(rows) {
  if (!rows.some((r) => finite(r.ci_low) && r.ci_low < 0)) return "";
  return (
    " Estimates are never below zero (the decode fits non-negative counts); an interval reaching below zero " +
    "means that candidate is not told apart from zero: what it shows is noise around zero."
  );
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
    "Cohorts hash values differently, so bits are not values: to see values, give the task a list of candidate " +
    "values (ldp task update TASK --candidates FILE, one per line) and the dashboard decodes each window " +
    "against them (offline: ldp aggregate --candidates FILE).";
  return { items, caption, axes: { x: "Bloom filter bit", y: "Share of reports setting the bit" } };
}

// Bars from zero with error bars; the scale is linear, so a bar's height and its
// error bar's ends are proportional to value, low and high (the test checks this).
function drawEstimatesChart(chart, items, level, axes = {}) {
  const width = chartWidth(chart);
  if (!changed(chart, width, items, level, axes)) return;
  const [plotHeight, left, right, top] = [220, 60, 10, 10];
  const step = (width - left - right) / Math.max(items.length, 1);
  const texts = items.map((it) => it.short ?? shorten(it.label));
  const labels = labelMode(texts, step);
  const axisY = top + plotHeight;
  const height = axisY + labels.space + (axes.x ? 18 : 4);
  const numbers = items.flatMap((it) => [it.value, it.low, it.high]).filter(finite);
  let [lo, hi] = [Math.min(0, ...numbers), Math.max(0, ...numbers)];
  if (hi === lo) hi = lo + 1;
  const ticks = niceTicks(lo, hi, 4); // round values, 0 among them
  [lo, hi] = [ticks[0], ticks.at(-1)];
  // the plot spans [lo, hi]; its bottom edge is the axis the labels hang from
  const y = (v) => top + ((hi - v) / (hi - lo)) * plotHeight;
  const parts = [];
  for (const v of ticks) {
    if (v !== 0) parts.push(svg("line", { class: "grid", x1: left, x2: width - right, y1: y(v), y2: y(v) }));
    parts.push(svg("text", { class: "tick", x: left - 4, y: y(v), "text-anchor": "end" }, TICK.format(v)));
  }
  parts.push(svg("line", { class: "axis zero", x1: left, x2: width - right, y1: y(0), y2: y(0) }));
  items.forEach((item, i) => {
    const label = labels.mode ? { text: texts[i], axisY, mode: labels.mode } : null;
    parts.push(estimateBar(item, { x: left + i * step, step, y, level, label }));
  });
  parts.push(...axisTitles({ width, left, right, top, plotHeight, bottomY: height - 6 }, axes.x, axes.y));
  chart.setAttribute("viewBox", `0 0 ${width} ${height}`);
  chart.replaceChildren(...parts);
}

const shorten = (label) => (label.length > 12 ? `${label.slice(0, 11)}…` : label);

function estimateBar(item, { x, step, y, level, label }) {
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
  if (label) group.append(underLabel("label", label.text, center, label.axisY, label.mode));
  return group;
}

// ---- the per-window series: each value's estimate in every window, with its interval ------------

// What a window's estimate measures, as the series chart's y axis says it.
function seriesUnit(task) {
  if (task.kind === "mean") return "Mean";
  if (task.kind === "records") {
    const attribute = currentAttribute(task);
    return attribute?.statistic === "mean" ? `Mean of ${attribute.name}` : "Share of the window's records";
  }
  if (isKeyed(task) && state.measure === "mean") return "Mean value of the key";
  const win = task.windows.find((w) => w.estimates);
  const rows = win?.estimates ?? [];
  if (win?.candidates) return "Share of the window's reports";
  return rows.length && "bit" in rows[0] ? "Share of reports setting the bit" : "Proportion of the window's reports";
}

// A window's points of the series: the bars' items; a multi-attribute task's chosen attribute with every value;
// a key-value task's frequency or mean value of each key.
function seriesItems(task, win, level) {
  if (task.kind === "records") return recordItems(task, win, level, true).items;
  if (state.measure === "mean" && isKeyed(task)) return meanItems(win.estimates);
  return chartItems(task, win, level).items;
}

// What the series' points are, said in its caption: the task's attribute or estimate, and its view.
function seriesWhat(task) {
  const win = task.windows.find((w) => w.estimates);
  const rows = win?.estimates ?? [];
  const viewName = VIEW_NAMES[win?.consistency] ?? win?.consistency ?? "consistent";
  if (task.kind === "records") {
    const attribute = currentAttribute(task);
    if (!attribute) return "";
    if (attribute.statistic === "mean") return `Attribute ${attribute.name}: its mean. `;
    const consistent = rows.some((r) => r.attribute === attribute.name && finite(r.consistent));
    return `Attribute ${attribute.name}: ${consistent ? `points are the consistent view (${viewName}), ` : ""}each value's share. `;
  }
  if (isKeyed(task)) {
    return state.measure === "mean"
      ? "Each key's mean value among the reports that hold it. "
      : "Each key's frequency, as a share of the window's reports. ";
  }
  if (rows.length && "consistent" in rows[0]) return `Points are the consistent view (${viewName}). `;
  return "";
}

// label -> its points, one per window with estimates, in time order (the bars' items of each window).
function seriesOf(task, level) {
  const series = new Map();
  for (const w of task.windows) {
    if (!w.estimates) continue;
    for (const item of seriesItems(task, w, level)) {
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
  // a value's option is "=" and the value ("" is the largest values): the same value keeps its option
  const options = [["", `${all} (by mean over windows)`], ...labels.map((label) => [`=${label}`, label])];
  fillSelect($("series-select"), options, state.series === null ? "" : `=${state.series}`, (value) => {
    state.series = value === "" ? null : value.slice(1);
    render();
  });

  const rounds = task.memoized
    ? "A longitudinal task: each window is one round, in which each client sends one report. "
    : "";
  $("series-picker").hidden = labels.length < 2;
  $("series-caption").textContent =
    `${rounds}${seriesWhat(task)}${seriesUnit(task)} in each window, with its ${level} confidence interval as error bars ` +
    "(and as a shaded band when one value is shown alone); " +
    "windows withheld or without reports leave a gap.";
  const lines = shown.map((label) => ({ label, points: series.get(label) }));
  drawSeriesChart($("series-chart"), task, lines, level);
  $("series-csv").onclick = () => {
    const attribute = task.kind === "records" ? currentAttribute(task)?.name : undefined;
    const rows = lines.flatMap((line) =>
      line.points.map((p) => ({
        ...(attribute === undefined ? {} : { attribute }),
        label: line.label,
        start: utc(p.window.start),
        end: utc(p.window.end),
        reports: p.window.n,
        value: p.value,
        ci_low: p.low,
        ci_high: p.high,
      })),
    );
    const columns = [...(attribute === undefined ? [] : ["attribute"]), "label", "start", "end", "reports", "value", "ci_low", "ci_high"];
    download(`${fileStem(task, task.windows[0].start)}-series.csv`, columns, rows);
  };
  if (changed($("series-legend"), shown)) {
    const items = lines.map((line, i) => el("li", {}, el("span", { class: `swatch s${i}`, "aria-hidden": "true" }), line.label));
    $("series-legend").replaceChildren(...items);
  }
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
  const width = chartWidth(chart);
  const points = lines.map((l) => [l.label, l.points.map((p) => [p.window.start, p.window.end, p.value, p.low, p.high])]);
  const windows = task.windows.filter((w) => w.estimates).map((w) => w.start);
  if (!changed(chart, width, task.window, task.memoized, seriesUnit(task), windows, points, level)) return;
  const [height, left, right, top, bottom] = [290, 66, 12, 12, 50];
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
  // x ticks: as many windows as fit (at most 6), evenly spread, dated (days alone when the window is whole days)
  const date = (t) => (task.window % 86400 === 0 ? utc(t).slice(0, 10) : utc(t));
  const fit = Math.max(2, Math.min(6, Math.floor((width - left - right) / (textWidth(date(first)) + 16))));
  const every = Math.ceil(withEstimates.length / fit);
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
    if (lines.length === 1) group.append(...bandPaths(line.points, at, y, slot)); // one value: its band too
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

// The confidence band of one series: a filled area over each run of adjacent windows with intervals.
function bandPaths(points, at, y, slot) {
  const runs = [];
  for (const p of points) {
    if (!finite(p.low) || !finite(p.high)) continue;
    const run = runs.at(-1);
    if (run && slot(p.window) === slot(run.at(-1).window) + 1) run.push(p);
    else runs.push([p]);
  }
  return runs.map((run) => {
    const upper = run.map((p) => `${at(p).toFixed(2)} ${y(p.high).toFixed(2)}`);
    const lower = [...run].reverse().map((p) => `${at(p).toFixed(2)} ${y(p.low).toFixed(2)}`);
    return svg("path", { class: "band", d: `M${upper.join(" L")} L${lower.join(" L")} Z` });
  });
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

function renderTable(table, rows) {
  if (!changed(table, rows)) return;
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  table.tHead.replaceChildren(el("tr", {}, ...columns.map((c) => el("th", { scope: "col" }, c))));
  const td = (c, r) => el("td", LABEL_COLUMNS.has(c) ? { class: "label" } : {}, cell(c, r[c]));
  const body = rows.map((r) => el("tr", {}, ...columns.map((c) => td(c, r))));
  table.tBodies[0].replaceChildren(...body);
}

tick();
