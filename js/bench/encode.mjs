#!/usr/bin/env node
/**
 * Encodes per second in Node for GRR and OUE (d = 1,024) and RAPPOR (128
 * bits, 2 hashes, 64 cohorts, one persistent client: the permanent response
 * through the keyed SHAKE-256 PRF on every report), one value per call
 * (`encode`) and a batch (the package has no batch API: a loop over an array
 * of 1,000 values; "batch + JSON" also writes each report's JSON line),
 * beside a same-run reference: the raw
 * throughput of `crypto.getRandomValues` (64 KiB blocks) and the CSPRNG bytes
 * each report consumes, so "ceiling" = reference ÷ bytes per report is what
 * the CSPRNG alone would allow and the ratio says how far the encoder is from it.
 *
 *   npm run bench                 # build, then this (3 runs, medians)
 *   node bench/encode.mjs --runs 1 --seconds 0.5
 *
 * The specs (bench/*.json) were written by the Python library (`ldp.GRR`,
 * `ldp.OUE` at ε = 2 over "v0".."v1023"; `Rappor(num_bits=128,
 * num_hashes=2, num_cohorts=64, f=1/2, p=1/2, q=3/4)`). Values are drawn
 * uniformly from the domain (RAPPOR: from 1,024 strings), so RAPPOR computes
 * a new PRR for every report: no memo.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { shake256 as nobleShake } from "@noble/hashes/sha3.js"; // a development dependency: the reference JavaScript SHAKE-256
// --dist DIR: another build of the package (e.g. an older commit's dist/, for a before/after comparison)
const DIST = process.argv.includes("--dist") ? new URL(`file://${process.argv[process.argv.indexOf("--dist") + 1]}/`) : new URL("../dist/", import.meta.url);
const { cryptoSource, loadSpec, reportToJson, makeEncoder, newRapporClient, ...pkg } = await import(new URL("index.js", DIST).href);
const jsShake256 = pkg.jsShake256 ?? pkg.nobleShake256; // the package's JavaScript SHAKE-256 (@noble/hashes' in builds before src/hash/)
const { nativeShake256 } = await import(new URL("node.js", DIST).href); // undefined in builds before it

const HERE = fileURLToPath(new URL(".", import.meta.url));
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
const RUNS = option("--runs", 3);
const SECONDS = option("--seconds", 1);
const BATCH = 1000;

const spec = (name) => loadSpec(readFileSync(`${HERE}${name}.json`, "utf8"));
const VALUES = Array.from({ length: 1024 }, (_, i) => `v${i}`);

/** A ByteSource counting what the encoder draws from the CSPRNG. */
function countingSource() {
  const counter = { bytes: 0, read: (n) => ((counter.bytes += n), cryptoSource.read(n)) };
  return counter;
}

/**
 * Calls `step()` (which does `unit` items) `chunk` times between clock reads
 * for about SECONDS, after a warm-up. Returns items per wall-clock second and
 * per CPU second of this process (user + system: on a machine shared with
 * other work, the wall clock also counts the time others held the CPU).
 */
function rate(step, unit, chunk) {
  const clock = () => Number(process.hrtime.bigint()) / 1e9;
  for (const end = clock() + Math.min(0.3, SECONDS / 2); clock() < end; ) step(); // warm up (JIT)
  let items = 0;
  const start = clock();
  const cpu0 = process.cpuUsage();
  let now = start;
  while (now < start + SECONDS) {
    for (let i = 0; i < chunk; i++) step();
    items += chunk * unit;
    now = clock();
  }
  const cpu = process.cpuUsage(cpu0);
  return { wall: items / (now - start), cpu: items / ((cpu.user + cpu.system) / 1e6) };
}

/** @noble/hashes' SHAKE-256 as a stream (the package's JavaScript SHAKE-256 until src/hash/): a same-run reference. */
const nobleShake256 = (input) => {
  const xof = nobleShake.create().update(input);
  return { read: (n) => xof.xof(n) };
};

function cases() {
  const rappor = spec("rappor");
  const client = newRapporClient(rappor);
  return [
    { name: "GRR d=1024", spec: spec("grr") },
    { name: "OUE d=1024", spec: spec("oue") },
    // the default SHAKE-256 (Node's OpenSSL since defaultShake256; the JavaScript one in builds before it), then each one
    // named: the package's JavaScript SHAKE-256 (a browser's), @noble/hashes' beside it as the reference, Node's
    { name: "RAPPOR 128 bits, h=2, 64 cohorts (default SHAKE)", spec: rappor, client },
    { name: "RAPPOR 128 bits, h=2, 64 cohorts (JS SHAKE)", spec: rappor, client, shake: jsShake256 },
    { name: "RAPPOR 128 bits, h=2, 64 cohorts (noble SHAKE)", spec: rappor, client, shake: nobleShake256 },
    ...(nativeShake256 ? [{ name: "RAPPOR 128 bits, h=2, 64 cohorts (Node SHAKE)", spec: rappor, client, shake: nativeShake256 }] : []),
  ];
}

/** CSPRNG bytes per report (mean over many reports: rejection sampling and lane rounds vary). */
function bytesPerReport(c) {
  const counter = countingSource();
  const encoder = makeEncoder(c.spec, { client: c.client, source: counter, shake: c.shake });
  const n = 20000;
  for (let i = 0; i < n; i++) encoder.encode(VALUES[i & 1023]);
  return counter.bytes / n;
}

/** One case in this process: the same-run references, then its three modes. */
function measure(c) {
  const block = new Uint8Array(65536);
  const bytes = bytesPerReport(c);
  const small = new Uint8Array(Math.max(1, Math.round(bytes)));
  const row = {
    csprng: rate(() => crypto.getRandomValues(block), block.length, 1).wall,
    calls: rate(() => crypto.getRandomValues(small), 1, 64).wall,
    bytes,
  };
  const encoder = makeEncoder(c.spec, { client: c.client, shake: c.shake });
  let i = 0;
  row.single = rate(() => encoder.encode(VALUES[i++ & 1023]), 1, 64);
  // no batch API: a batch is a loop over an array of values (then also each report's JSON line)
  const batch = Array.from({ length: BATCH }, (_, j) => VALUES[(j * 7919) & 1023]);
  row.batch = rate(() => batch.map((v) => encoder.encode(v)), BATCH, 1);
  row["batch + JSON"] = rate(() => batch.map((v) => reportToJson(encoder.encode(v))), BATCH, 1);
  return row;
}

if (args.includes("--child")) {
  // one case, in a fresh process (no JIT state shared between cases)
  process.stdout.write(JSON.stringify(measure(cases()[option("--child", 0)])));
  process.exit(0);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (x) => Math.round(x).toLocaleString("en-US");
const child = (k) =>
  JSON.parse(
    execFileSync(process.execPath, [fileURLToPath(import.meta.url), ...args.filter((a) => a !== "--runs"), "--child", String(k), "--seconds", String(SECONDS)], {
      encoding: "utf8",
    }),
  );

const names = cases().map((c) => c.name);
const results = names.map(() => []);
for (let run = 0; run < RUNS; run++) names.forEach((_, k) => results[k].push(child(k)));
console.log(
  `Node ${process.version}, ${RUNS} run(s), each case in its own process, ~${SECONDS} s per figure, medians; ` +
    `load average ${loadavg().map((x) => x.toFixed(1)).join(" ")} (${availableParallelism()} CPUs)`,
);
console.log("reference, measured in the same process just before each case: crypto.getRandomValues on 64 KiB blocks (bytes/s),");
console.log("and calls/s of getRandomValues of one report's bytes (the rate an unpooled source would cap at);");
console.log("ceiling = reference bytes/s ÷ CSPRNG bytes per report; the ratio is reports/s ÷ ceiling, taken per run\n");
const header = ["mechanism", "mode", "reports/s", "reports/CPU-s", "target (wall, CPU)", "CSPRNG B/report", "gRV bytes/s", "gRV(B) calls/s", "ceiling reports/s", "÷ ceiling"];
const rows = [];
names.forEach((name, k) => {
  const rs = results[k];
  const target = name.startsWith("GRR") ? 500000 : name.startsWith("RAPPOR") ? 50000 : null;
  const csprng = median(rs.map((r) => r.csprng));
  const bytes = median(rs.map((r) => r.bytes));
  for (const mode of ["single", "batch", "batch + JSON"]) {
    const r = median(rs.map((x) => x[mode].wall));
    const rc = median(rs.map((x) => x[mode].cpu));
    const ratio = median(rs.map((x) => x[mode].wall / (x.csprng / x.bytes)));
    const met = (x) => (x >= target ? "met" : "MISSED");
    const verdict = target === null || mode === "batch + JSON" ? "" : `≥ ${fmt(target)}: ${met(r)}, ${met(rc)}`;
    rows.push([name, mode, fmt(r), fmt(rc), verdict, bytes.toFixed(1), fmt(csprng), fmt(median(rs.map((x) => x.calls))), fmt(csprng / bytes), ratio.toFixed(4)]);
  }
});
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells) => "| " + cells.map((c, i) => c.padEnd(widths[i])).join(" | ") + " |";
console.log(line(header));
console.log("|" + widths.map((w) => "-".repeat(w + 2)).join("|") + "|");
for (const r of rows) console.log(line(r));

const size = (script) =>
  execFileSync("npm", ["run", "--silent", script], { cwd: `${HERE}..`, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
console.log(`\nbundle, min+gzip: frequency oracles + RAPPOR ${size("size")} B (npm run size), web page ${size("size:web")} B (npm run size:web)`);
