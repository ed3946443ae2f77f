/**
 * The real CSPRNG output against the spec probabilities, for every frequency
 * mechanism: chi-square goodness of fit at α = 1e-6 (no seed anywhere; a
 * correct encoder fails a test with probability 1e-6).
 *
 * Critical values χ²(1 − α; df): scipy 1.17.1, `float(scipy.stats.chi2.isf(1e-6, df))`.
 * The even-df ones are re-derived below from the exact closed form of the
 * chi-square tail, Q = e^(−x/2) Σ_{j<df/2} (x/2)^j / j!.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readFileSync } from "node:fs";
import {
  lhBucket,
  loadSpec,
  makeEncoder,
  newRapporClient,
  NumericEncoder,
  type NumericTable,
  parseFraction,
  RapporEncoder,
  specFraction,
  type Spec,
  tableDigest,
  twoPointTable,
} from "../src/index.js";

const ALPHA = 1e-6;
const CRITICAL: Record<number, number> = {
  1: 23.928126976934827,
  2: 27.631021115928547,
  3: 30.664849706213598,
  4: 33.37684158171984,
  8: 42.700913926544274,
  9: 44.81093787068782,
  16: 58.3243900143889,
  // the numeric tests' pooled cells (deterministic: pooling depends on the expected counts only)
  12: 50.825252138874454,
  77: 150.95146179912095,
  78: 152.3301878149749,
  170: 272.44664804589667,
  171: 273.703010309102,
};

/** P[χ²_df > x] for even df, exactly (Poisson sum). */
function evenTail(x: number, df: number): number {
  let term = Math.exp(-x / 2);
  let sum = term;
  for (let j = 1; j < df / 2; j++) sum += (term *= x / 2 / j);
  return sum;
}

function chiSquare(observed: number[], probabilities: number[], n: number): number {
  return observed.reduce((s, o, i) => s + (o - n * probabilities[i]) ** 2 / (n * probabilities[i]), 0);
}

/** Bits read as independent Bernoulli cells: Σ over bits of the 2-cell statistic (df = number of bits). */
function bitsChiSquare(ones: number[], probabilities: number[], n: number): number {
  return ones.reduce((s, o, i) => s + chiSquare([o, n - o], [probabilities[i], 1 - probabilities[i]], n), 0);
}

function assertFits(statistic: number, df: number): void {
  assert.ok(statistic < CRITICAL[df], `chi-square ${statistic.toFixed(2)} ≥ ${CRITICAL[df]} (df ${df}, α ${ALPHA})`);
}

const prob = (spec: Spec, name: string): number => {
  const f = specFraction(spec, name);
  return Number(f.num) / Number(f.den);
};
const bitAt = (bits: Uint8Array, i: number): number => (bits[i >> 3] >> (7 - (i & 7))) & 1;

const SPECS = {
  grr: '{"domain":["a","b","c","d","e"],"epsilon":1.0,"format":1,"mechanism":"grr","p":"7463731128007843729/18446744073709551616"}',
  binary: '{"domain":["no","yes"],"epsilon":1.0,"format":1,"mechanism":"binary-rr","p":"13485650502877567347/18446744073709551616"}',
  sue: '{"domain":[0,1,2,3,4,5,6,7],"epsilon":1.0,"format":1,"mechanism":"sue","p":"11482347978973015967/18446744073709551616","q":"6964396094736535649/18446744073709551616"}',
  oue: '{"domain":[0,1,2,3,4,5,6,7],"epsilon":1.0,"format":1,"mechanism":"oue","p":"1/2","q":"4961093570831984269/18446744073709551616"}',
  olh: '{"domain":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15],"epsilon":1.0,"format":1,"g":4,"mechanism":"olh","p":"4384485647440694613/9223372036854775808"}',
  blh: '{"domain":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15],"epsilon":1.0,"format":1,"g":2,"mechanism":"blh","p":"13485650502877567347/18446744073709551616"}',
  ss: '{"domain":[0,1,2,3,4],"epsilon":1.0,"format":1,"mechanism":"ss","omega":2,"p":"11887173794671949881/18446744073709551616"}',
  rappor: '{"domain":null,"encoding":"bloom","f":"1/2","format":1,"hash":"mmh3","mechanism":"rappor","num_bits":16,"num_cohorts":4,"num_hashes":2,"p":"1/4","q":"3/4"}',
};
const N = 20_000;

describe("chi-square critical values", () => {
  it("the even-df table values have tail probability α (exact closed form)", () => {
    for (const df of [2, 4, 8, 12, 16, 78, 170]) assert.ok(Math.abs(evenTail(CRITICAL[df], df) / ALPHA - 1) < 1e-9, `df ${df}`);
  });
});

describe("CSPRNG output matches the spec probabilities (chi-square, α = 1e-6)", () => {
  for (const [name, df] of [["grr", 4], ["binary", 1]] as const) {
    it(`${name}: reported value ~ (p, q, …, q)`, () => {
      const spec = loadSpec(SPECS[name]);
      const domain = spec.fields.domain as string[];
      const p = prob(spec, "p");
      const q = (1 - p) / (domain.length - 1);
      const counts = new Array(domain.length).fill(0);
      const encoder = makeEncoder(spec);
      for (let i = 0; i < N; i++) counts[domain.indexOf(encoder.encode(domain[1]).value as string)]++;
      assertFits(chiSquare(counts, domain.map((_, i) => (i === 1 ? p : q)), N), df);
    });
  }

  for (const name of ["sue", "oue"] as const) {
    it(`${name}: each bit 1 with p (the value's) or q (the others)`, () => {
      const spec = loadSpec(SPECS[name]);
      const [p, q] = [prob(spec, "p"), prob(spec, "q")];
      const ones = new Array(8).fill(0);
      const encoder = makeEncoder(spec);
      for (let i = 0; i < N; i++) {
        const bits = encoder.encode(5n).bits!;
        for (let b = 0; b < 8; b++) ones[b] += bitAt(bits, b);
      }
      assertFits(bitsChiSquare(ones, ones.map((_, b) => (b === 5 ? p : q)), N), 8);
    });
  }

  for (const [name, df] of [["olh", 3], ["blh", 1]] as const) {
    it(`${name}: (report − hash bucket) mod g ~ (p, q, …, q)`, () => {
      const spec = loadSpec(SPECS[name]);
      const g = Number(spec.fields.g);
      const p = prob(spec, "p");
      const counts = new Array(g).fill(0);
      const encoder = makeEncoder(spec);
      const n = N / 2; // the seed hash costs more
      for (let i = 0; i < n; i++) {
        const r = encoder.encode(7n);
        counts[(Number(r.value) - lhBucket(r.seed!, 7, g) + g) % g]++;
      }
      assertFits(chiSquare(counts, counts.map((_, k) => (k === 0 ? p : (1 - p) / (g - 1))), n), df);
    });
  }

  it("ss: each 2-subset of 5 values with p/C(4,1) (holding the value) or (1 − p)/C(4,2)", () => {
    const spec = loadSpec(SPECS.ss);
    const p = prob(spec, "p");
    const subsets: string[] = [];
    for (let a = 0; a < 5; a++) for (let b = a + 1; b < 5; b++) subsets.push(`${a},${b}`);
    const counts = new Array(subsets.length).fill(0);
    const encoder = makeEncoder(spec);
    for (let i = 0; i < N; i++) {
      const bits = encoder.encode(1n).bits!;
      const members = [0, 1, 2, 3, 4].filter((v) => bitAt(bits, v) === 1);
      counts[subsets.indexOf(members.join(","))]++;
    }
    const expected = subsets.map((s) => (s.split(",").includes("1") ? p / 4 : (1 - p) / 6));
    assertFits(chiSquare(counts, expected, N), 9);
  });

  it("rappor IRR: given the client's PRR, each bit 1 with q (PRR 1) or p (PRR 0)", () => {
    const spec = loadSpec(SPECS.rappor);
    const encoder = new RapporEncoder(spec, newRapporClient(spec));
    const prr = encoder.permanentBits("x");
    const [p, q] = [prob(spec, "p"), prob(spec, "q")];
    const ones = new Array(16).fill(0);
    for (let i = 0; i < N; i++) {
      const bits = encoder.encode("x").bits!;
      for (let b = 0; b < 16; b++) ones[b] += bitAt(bits, b);
    }
    assertFits(bitsChiSquare(ones, ones.map((_, b) => ((prr >> BigInt(b)) & 1n ? q : p)), N), 16);
  });

  it("rappor one-time bits: fresh clients, each bit 1 with q* (Bloom bit 1) or p* (Bloom bit 0)", () => {
    const spec = loadSpec(SPECS.rappor);
    const [f, p, q] = [prob(spec, "f"), prob(spec, "p"), prob(spec, "q")];
    const qStar = (f * (p + q)) / 2 + (1 - f) * q;
    const pStar = (f * (p + q)) / 2 + (1 - f) * p;
    // one cohort's Bloom bits, so that every report of the cohort has the same true bits
    const ones = new Array(16).fill(0);
    let n = 0;
    let truth: number[] | null = null;
    while (n < N / 2) {
      const client = newRapporClient(spec);
      if (client.cohort !== 0) continue;
      const encoder = new RapporEncoder(spec, client);
      truth ??= encoder.truePositions("x");
      const bits = encoder.encode("x").bits!;
      for (let b = 0; b < 16; b++) ones[b] += bitAt(bits, b);
      n++;
    }
    assertFits(bitsChiSquare(ones, ones.map((_, b) => (truth!.includes(b) ? qStar : pStar)), n), 16);
  });
});

// ---------------------------------------------------------------------------
// Numeric mechanisms: the small-grid tables of the cross-language vectors
// (../tests/vectors/vectors.json, `numeric` and `specs`, written by
// tests/vectors/make_vectors.py from the Python library; digests checked).
// The exact output distribution for an input follows from the table alone
// (vectors README, section numeric): grid position u·K rounded up with
// probability frac (exact for the dyadic inputs used here), then a two-point
// coin, a band row (a on m cells, b elsewhere, over `total`), hybrid's α coin
// and Duchi part, or the shift weights (noise z, output clamped to the ends).

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const VECTORS: any = JSON.parse(readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8"));

/** The spec and table of a vectors spec id (small grids only: the full table is inline). */
function vectorTable(id: string): { spec: Spec; table: NumericTable } {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const c = VECTORS.specs.cases.find((x: any) => x.id === id);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const table = VECTORS.numeric.find((x: any) => x.spec === id) as NumericTable;
  assert.equal(table.outputs.length > 0, true);
  if (table.digest !== undefined) assert.equal(tableDigest(table), table.digest);
  return { spec: loadSpec(c.canonical_json, c.fingerprint), table };
}

const ratio = (num: bigint, den: bigint): number => Number(num) / Number(den);
const frac = (text: string): number => {
  const f = parseFraction(text);
  return ratio(f.num, f.den);
};

/** Exact output distribution (output index → probability; hybrid's Duchi part at keys −1, −2) for value x. */
function outputDistribution(spec: Spec, table: NumericTable, x: number): Map<number, number> {
  const low = Number(spec.fields.low);
  const high = Number(spec.fields.high);
  const u = Math.min(1, Math.max(0, (x - low) / (high - low)));
  const dist = new Map<number, number>();
  const add = (k: number, p: number) => dist.set(k, (dist.get(k) ?? 0) + p);
  const K = table.kind === "two-point" ? 1 : Number(table.K);
  const pos = u * K;
  const lo = Math.floor(pos);
  assert.ok(Number.isInteger(pos * 2 ** 20), "inputs are dyadic, so P[round up] = frac exactly");
  const grid: [number, number][] = pos === lo ? [[lo, 1]] : [[lo, 1 - (pos - lo)], [lo + 1, pos - lo]];
  for (const [i, pi] of grid) {
    if (table.kind === "two-point") {
      const p = frac(table.p!);
      add(i, pi * p);
      add(1 - i, pi * (1 - p));
      continue;
    }
    const alpha = table.alpha === undefined ? 1 : frac(table.alpha);
    if (alpha < 1) {
      const dp = frac(table.duchi_p!);
      const side1 = i / K;
      add(-2, pi * (1 - alpha) * (side1 * dp + (1 - side1) * (1 - dp))); // duchi_outputs[1]
      add(-1, pi * (1 - alpha) * ((1 - side1) * dp + side1 * (1 - dp))); // duchi_outputs[0]
    }
    const total = BigInt(table.total!);
    if (table.kind === "rows") {
      const { a, b, m } = table.band!;
      for (let j = 0; j < table.outputs.length; j++) {
        add(j, pi * alpha * ratio(j >= i && j < i + Number(m) ? BigInt(a) : BigInt(b), total));
      }
    } else {
      const last = table.outputs.length - 1;
      table.weights!.forEach((w, z) => add(Math.min(Math.max(i + z - K, 0), last), pi * ratio(BigInt(w), total)));
    }
  }
  return dist;
}

/** Chi-square over cells, cells with expected count < 5 pooled (the pool, if still < 5, joins the smallest cell). */
function pooledChiSquare(observed: Map<number, number>, dist: Map<number, number>, n: number): { statistic: number; df: number } {
  for (const k of observed.keys()) assert.ok((dist.get(k) ?? 0) > 0, `output ${k} has probability 0`);
  const cells: [number, number][] = []; // [observed, expected]
  let pool: [number, number] = [0, 0];
  for (const [k, p] of dist) {
    const cell: [number, number] = [observed.get(k) ?? 0, n * p];
    if (cell[1] >= 5) cells.push(cell);
    else pool = [pool[0] + cell[0], pool[1] + cell[1]];
  }
  if (pool[1] >= 5) cells.push(pool);
  else if (pool[1] > 0) {
    const smallest = cells.reduce((s, c) => (c[1] < s[1] ? c : s));
    smallest[0] += pool[0];
    smallest[1] += pool[1];
  }
  const statistic = cells.reduce((s, [o, e]) => s + (o - e) ** 2 / e, 0);
  return { statistic, df: cells.length - 1 };
}

const NUMERIC_CASES: [string, number[]][] = [
  ["duchi/default", [-1, 0.25, 3]],
  ["stochastic-rounding/default", [0, 0.375, 1]],
  ["piecewise/grid8", [-1, 0.125, 1]],
  ["hybrid/grid8", [-2, 0.125, 1]],
  ["laplace/grid8", [-1, 0.125, 1]],
  ["gaussian/grid8", [-1, 0.125, 1]],
];
const NUMERIC_N = 10_000;

describe("numeric CSPRNG output matches the table's exact distribution (chi-square, α = 1e-6)", () => {
  for (const [id, inputs] of NUMERIC_CASES) {
    for (const x of inputs) {
      it(`${id}: x = ${x}`, () => {
        const { spec, table } = vectorTable(id);
        if (table.kind === "two-point") assert.deepEqual(twoPointTable(spec).outputs, table.outputs);
        const dist = outputDistribution(spec, table, x);
        const mass = [...dist.values()].reduce((s, p) => s + p, 0);
        assert.ok(Math.abs(mass - 1) < 1e-12, `probabilities sum to ${mass}`);
        const index = new Map<number, number>(table.outputs.map((v, j) => [v, j]));
        table.duchi_outputs?.forEach((v, j) => {
          assert.ok(!index.has(v), "hybrid's Duchi outputs differ from the piecewise ones");
          index.set(v, -1 - j);
        });
        const encoder = new NumericEncoder(spec, table);
        const observed = new Map<number, number>();
        for (let t = 0; t < NUMERIC_N; t++) {
          const k = index.get(encoder.sample(x));
          assert.ok(k !== undefined, "an output of the table");
          observed.set(k, (observed.get(k) ?? 0) + 1);
        }
        const { statistic, df } = pooledChiSquare(observed, dist, NUMERIC_N);
        assert.ok(df in CRITICAL, `no critical value for df ${df}`);
        assertFits(statistic, df);
      });
    }
  }
});
