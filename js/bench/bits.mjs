#!/usr/bin/env node
/**
 * CSPRNG bytes per report against the entropy a report needs (issue 28: at
 * most 2×), for GRR, binary RR, OUE, SS and RAPPOR at d = 1,024, ε = 1, and
 * the encoders' rate, beside the same figures of another build (`--before
 * DIST`: e.g. a build of the commit before the per-report bit samplers, whose
 * encoders read whole bytes per comparison), measured in the same run.
 *
 *   npm run build && node bench/bits.mjs --before /path/to/old/js/dist
 *   node bench/bits.mjs --reports 20000 --seconds 1
 *
 * Columns: `B/report`, the bytes the encoder reads from its CSPRNG source
 * per report (a counting source over `reports` reports, untimed); `H
 * B/report`, the Shannon entropy of one report given the input, in bytes;
 * `÷ H`, their ratio (target ≤ 2); `reports/s`, encodes per CPU-second (user
 * + sys of this process) with the default pooled CSPRNG (`cryptoSource`), one
 * value per call, median of `--runs` runs of `--seconds`, the two builds' runs
 * alternating (ABAB…: a shared machine's load moves); `÷ before`, this
 * build's median over the `--before` build's.
 *
 * Entropies (exact probabilities of the spec, evaluated in doubles):
 * randomized response over d outputs (GRR, binary RR) −p log2 p − (d−1) q
 * log2 q; OUE h(p) + (d−1) h(q), h the binary entropy; SS (ω of d) h(p) + p
 * log2 C(d−1, ω−1) + (1−p) log2 C(d−1, ω); RAPPOR's instantaneous response
 * of one persistent client (the permanent response B′ comes from its keyed
 * PRF, no CSPRNG bytes) Σ over bits h(P[1 | B′ bit]): |B′|·h(q) + (k −
 * |B′|)·h(p), averaged over the reports' values. The specs (bench/bits-*.json)
 * were written by the Python library: `ldp.GRR`, `ldp.OUE`,
 * `ldp.SubsetSelection` over "v0".."v1023", `ldp.BinaryRR` over ("no",
 * "yes"), all at ε = 1, and `Rappor(num_bits=128, num_hashes=2,
 * num_cohorts=64, f=1/2, p=1/4, q=3/4)` (the parameters of
 * benchmarks/bench_entropy.py).
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const REPORTS = Number(option("--reports", 20000));
const SECONDS = Number(option("--seconds", 1));
const RUNS = Number(option("--runs", 6));
const BEFORE = option("--before", null);

const load = async (dir) => import(new URL("index.js", new URL(`file://${dir}/`)).href);
const current = await load(fileURLToPath(new URL("../dist", import.meta.url)));
const before = BEFORE ? await load(BEFORE) : null;

const VALUES = Array.from({ length: 1024 }, (_, i) => `v${i}`);
const CASES = [
  ["GRR", "bits-grr", VALUES],
  ["binary RR", "bits-binary-rr", ["no", "yes"]],
  ["OUE", "bits-oue", VALUES],
  ["SS", "bits-ss", VALUES],
  ["RAPPOR", "bits-rappor", VALUES],
];

const plogp = (p) => (p <= 0 ? 0 : -p * Math.log2(p));
const h = (p) => plogp(p) + plogp(1 - p);
const frac = (text) => {
  const [a, b = "1"] = text.split("/");
  return Number(BigInt(a) * 10n ** 18n / BigInt(b)) / 1e18;
};
const lgamma2 = (n) => {
  let s = 0;
  for (let i = 2; i <= n; i++) s += Math.log2(i);
  return s;
};
const log2Binomial = (n, k) => lgamma2(n) - lgamma2(k) - lgamma2(n - k);

/** Entropy (bits) of one report given the input; RAPPOR's over the instantaneous response of `client`'s reports of `values`. */
function entropyBits(pkg, spec, values, client) {
  const f = JSON.parse(spec.canonicalJson);
  const p = frac(f.p);
  switch (f.mechanism) {
    case "grr":
    case "binary-rr": {
      const d = f.domain.length;
      return plogp(p) + (d - 1) * plogp((1 - p) / (d - 1));
    }
    case "oue":
      return h(p) + (f.domain.length - 1) * h(frac(f.q));
    case "ss": {
      const d = f.domain.length;
      const w = f.omega;
      return h(p) + p * log2Binomial(d - 1, w - 1) + (1 - p) * log2Binomial(d - 1, w);
    }
    case "rappor": {
      const encoder = new pkg.RapporEncoder(spec, client);
      const ones = (x) => x.toString(2).split("1").length - 1;
      const [fq, fp] = [h(frac(f.q)), h(p)];
      let total = 0;
      for (const v of values) {
        const k = ones(encoder.permanentBits(v));
        total += k * fq + (f.num_bits - k) * fp;
      }
      return total / values.length;
    }
  }
  throw new Error(`no entropy model for ${f.mechanism}`);
}

/** The encoder of `spec` in `pkg` on `source` (RAPPOR: one persistent client, fixed for both builds). */
function encoder(pkg, spec, source, client) {
  return pkg.makeEncoder(spec, { source, client });
}

const CLIENT = { secret: Uint8Array.from({ length: 32 }, (_, i) => i), cohort: 7 };

/** Bytes per report (a counting source, untimed), the entropy, and an encoder on the pooled CSPRNG to time. */
function prepare(pkg, name, values) {
  const spec = pkg.loadSpec(readFileSync(`${HERE}${name}.json`, "utf8"));
  const client = spec.mechanism === "rappor" ? CLIENT : undefined;
  let bytes = 0;
  const counting = { read: (n) => ((bytes += n), pkg.cryptoSource.read(n)) };
  const counted = encoder(pkg, spec, counting, client);
  for (let i = 0; i < REPORTS; i++) counted.encode(values[i % values.length]);
  const fast = encoder(pkg, spec, pkg.cryptoSource, client);
  let n = 0;
  const warm = performance.now() + 200;
  while (performance.now() < warm) fast.encode(values[n++ % values.length]);
  return { bytes: bytes / REPORTS, entropy: entropyBits(pkg, spec, values, client) / 8, fast, rates: [] };
}

/** One timed run of `m.fast`: reports per CPU-second (user + sys) over about SECONDS of wall time. */
function run(m, values) {
  let n = 0;
  const start = performance.now();
  const cpu = process.cpuUsage();
  while (performance.now() - start < SECONDS * 1000) {
    for (let i = 0; i < 256; i++) m.fast.encode(values[(n + i) % values.length]);
    n += 256;
  }
  const used = process.cpuUsage(cpu);
  m.rates.push(n / ((used.user + used.system) / 1e6));
}

/** The builds' measurements, their timed runs alternating (ABAB…, the first build alternating too). */
function measure(pkgs, name, values) {
  const ms = pkgs.map((pkg) => prepare(pkg, name, values));
  for (let r = 0; r < RUNS; r++) for (const m of r % 2 ? [...ms].reverse() : ms) run(m, values);
  for (const m of ms) {
    m.rates.sort((a, b) => a - b);
    m.rate = m.rates[m.rates.length >> 1];
  }
  return ms;
}

const pad = (s, n) => String(s).padStart(n);
const head = ["mechanism", "build", "B/report", "H B/report", "÷ H", "reports/s", "÷ before"];
const widths = [10, 8, 10, 11, 7, 11, 9];
console.log(`d = 1,024, ε = 1; ${REPORTS} reports counted; reports per CPU-second, median of ${RUNS} runs of ${SECONDS} s, builds alternating (Node ${process.version}, load ${loadavg().map((x) => x.toFixed(2)).join(" ")})`);
console.log(head.map((x, i) => pad(x, widths[i])).join(" "));
for (const [label, name, values] of CASES) {
  const [now, old] = measure(before ? [current, before] : [current], name, values);
  const rows = [];
  if (old) rows.push(["before", old, ""]);
  rows.push(["after", now, old ? (now.rate / old.rate).toFixed(2) : ""]);
  for (const [build, m, ratio] of rows) {
    const cells = [label, build, m.bytes.toFixed(1), m.entropy.toFixed(1), (m.bytes / m.entropy).toFixed(2), Math.round(m.rate).toLocaleString("en"), ratio];
    console.log(cells.map((x, i) => pad(x, widths[i])).join(" "));
  }
}
