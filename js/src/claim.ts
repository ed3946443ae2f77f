/**
 * The privacy claim of a spec, checked against its exact probabilities as
 * the Python specs check it (`ExactPrivacySpec._check_claim` in
 * `ldp/specs/base.py`, each mechanism's `privacy_ratio`):
 *
 * - the probabilities must honour the stated ε: their exact worst-case ratio
 *   max P[y|x]/P[y|x′] is at most e^ε, certified (rational arithmetic, and
 *   e^ε bounded below by a correctly rounded exp times 1 − 2^-50);
 * - where the spec stores both ε and its probabilities, the stated e^ε may
 *   exceed that ratio by a relative 1e-9 at most (an edited ε is noticed);
 * - ε is finite, > 0, and at most the mechanism's limit (`ldp/specs/limits.py`).
 *
 * A spec whose probabilities give ε = 4 while it states ε = 1 would be
 * encoded at 4 and charged 1 by the budget: it is refused here, before any
 * encoder exists. The two comparisons allow Python's `math.exp` to be one
 * unit in the last place off the correctly rounded e^ε (so the client never
 * refuses a spec the server accepted), and stay certified: the bound used is
 * still below the real e^ε.
 *
 * Numeric grid tables (piecewise, hybrid, Laplace) come from the server; their
 * ratio is checked when an encoder is given one (`checkTableClaim`).
 */
import { type Fraction, ONE, compare, div, divInt, fraction, fractionText, mul, parseFraction, sub } from "./fraction.js";
import { doubleToFraction, epsilonOfRatio, expCorrectlyRounded } from "./exact.js";
import { floatText } from "./float.js";
import { LH_PRIME } from "./hashing.js";
import { hadamardBlockSize } from "./hrlayout.js";
import type { JsonObject } from "./json.js";
import type { NumericTable } from "./numeric.js";

/** A stated e^ε may exceed the exact probability ratio by this relative amount at most (Python's `CLAIM_TOLERANCE`). */
export const CLAIM_TOLERANCE = 1e-9;

/** Largest ε each mechanism supports (`ldp/specs/limits.py`; Laplace and Gaussian: per grid, on the server). */
const MAX_EPSILON: Record<string, number> = {
  "binary-rr": 23,
  grr: 23,
  blh: 23,
  oue: 23,
  hr: 23,
  hcms: 23,
  ss: 23,
  duchi: 23,
  "stochastic-rounding": 23,
  sue: 45,
  cms: 45,
  olh: 21,
  pem: 21,
  treehist: 21,
  piecewise: 22,
  hybrid: 22,
  rappor: Infinity, // no stated ε: ε₁ and ε∞ follow from f, p and q
};

function fail(message: string): never {
  throw new RangeError(message);
}

const text = (f: Fraction): string => fractionText(f);

/** A probability field of canonical fields (a fraction string). */
function prob(fields: JsonObject, name: string): Fraction {
  const v = fields[name];
  return typeof v === "string" ? parseFraction(v) : fail(`${String(fields.mechanism)} spec has no probability ${name}`);
}

function int(fields: JsonObject, name: string): bigint {
  const v = fields[name];
  return typeof v === "bigint" ? v : fail(`${String(fields.mechanism)} spec has no integer ${name}`);
}

function domainSize(fields: JsonObject): bigint {
  const d = fields.domain;
  return Array.isArray(d) ? BigInt(d.length) : fail(`${String(fields.mechanism)} spec has no domain`);
}

/** p below 1, and above `floor` (the probability that gives no signal). */
function keep(fields: JsonObject, floor: Fraction, floorText: string): Fraction {
  const p = prob(fields, "p");
  const mechanism = String(fields.mechanism);
  if (compare(p, ONE) >= 0) fail(`${mechanism}: p must be in [0, 1), got ${text(p)}`);
  if (compare(p, floor) <= 0) fail(`${mechanism}: p must exceed ${floorText}, got ${text(p)}`);
  return p;
}

/** Randomized response over n outputs with keep probability p: p/q, q = (1 − p)/(n − 1). */
function rrRatio(p: Fraction, n: bigint): Fraction {
  return div(p, divInt(sub(ONE, p), n - 1n));
}

/** The hash range g of local hashing (and the prefix oracles), in [2, 2^31 − 2]. */
function hashRange(fields: JsonObject): bigint {
  const g = int(fields, "g");
  if (g < 2n || g > LH_PRIME - 1n) fail(`${String(fields.mechanism)}: g must be in [2, ${LH_PRIME - 1n}], got ${g}`);
  if (fields.mechanism === "blh" && g !== 2n) fail(`blh has g = 2 by definition, got g=${g}; use olh for other g`);
  return g;
}

/**
 * The exact worst-case ratio max P[y|x]/P[y|x′] of a spec's probabilities
 * (Python's `privacy_ratio`), after the range checks of its constructor; null
 * for mechanisms whose ratio is not in the spec (RAPPOR states no ε; the grid
 * mechanisms' tables come from the server).
 */
export function privacyRatio(fields: JsonObject): Fraction | null {
  const mechanism = String(fields.mechanism);
  switch (mechanism) {
    case "grr":
    case "binary-rr": {
      const d = domainSize(fields);
      if (mechanism === "binary-rr" && d !== 2n) fail(`binary-rr needs a domain of exactly 2 values, got ${d}`);
      if (d < 2n) fail(`${mechanism} needs a domain of at least 2 values, got ${d}`);
      return rrRatio(keep(fields, fraction(1n, d), `1/d = 1/${d}`), d);
    }
    case "sue":
    case "oue": {
      if (domainSize(fields) < 2n) fail(`${mechanism} needs a domain of at least 2 values`);
      const [p, q] = [prob(fields, "p"), prob(fields, "q")];
      for (const [name, v] of [["p", p], ["q", q]] as const) {
        if (v.num <= 0n || compare(v, ONE) >= 0) fail(`${mechanism}: ${name} must be in (0, 1), got ${text(v)}`);
      }
      if (compare(p, q) <= 0) fail(`${mechanism}: p must exceed q, got p=${text(p)}, q=${text(q)}`);
      return div(mul(p, sub(ONE, q)), mul(sub(ONE, p), q));
    }
    case "olh":
    case "blh":
    case "pem":
    case "treehist": {
      if (mechanism === "olh" || mechanism === "blh") {
        if (domainSize(fields) < 2n) fail(`${mechanism} needs a domain of at least 2 values`);
      }
      const g = hashRange(fields);
      return rrRatio(keep(fields, fraction(1n, g), `1/g = 1/${g}`), g);
    }
    case "hr": {
      const d = domainSize(fields);
      if (d < 2n) fail("hr needs a domain of at least 2 values");
      const blocks = int(fields, "blocks");
      if (blocks < 1n || blocks > 1n << 22n) fail(`hr: blocks must be in [1, ${1 << 22}], got ${blocks}`);
      if (blocks & (blocks - 1n)) fail(`hr: blocks must be a power of two, got ${blocks}`);
      if (blocks > 2n * d) fail(`hr: blocks must be at most 2d = ${2n * d}, got ${blocks}`);
      const p = keep(fields, fraction(1n, 2n * blocks), `1/(2B) = 1/${2n * blocks}`);
      const b = BigInt(hadamardBlockSize(Number(d), Number(blocks)));
      const inside = fraction(2n * p.num, p.den * b); // each output of C_x
      const outside = divInt(sub(ONE, p), blocks * b - b / 2n); // each other output
      return div(inside, outside);
    }
    case "cms":
    case "hcms": {
      if (domainSize(fields) < 2n) fail(`${mechanism} needs a domain of at least 2 values`);
      const p = keep(fields, fraction(1n, 2n), "1/2");
      const ratio = div(p, sub(ONE, p));
      return mechanism === "cms" ? mul(ratio, ratio) : ratio;
    }
    case "ss": {
      const d = domainSize(fields);
      if (d < 2n) fail(`ss needs a domain of at least 2 values, got ${d}`);
      const omega = int(fields, "omega");
      if (omega < 1n || omega > d - 1n) fail(`omega must be in [1, ${d - 1n}], got ${omega}`);
      const p = keep(fields, fraction(omega, d), `omega/d = ${omega}/${d}`);
      return div(mul(p, fraction(d - omega)), mul(sub(ONE, p), fraction(omega)));
    }
    case "duchi":
    case "stochastic-rounding": {
      const p = keep(fields, fraction(1n, 2n), "1/2");
      return div(p, sub(ONE, p));
    }
  }
  return null;
}

/** The exact value of a double. */
function exactDouble(x: number): Fraction {
  const [num, den] = doubleToFraction(x);
  return fraction(num, den);
}

const SAFETY = fraction((1n << 50n) - 1n, 1n << 50n); // 1 − 2^-50, as ldp/exact.py
const HIGH = fraction((1n << 51n) + 1n, 1n << 51n); // e^ε rounded one ulp up at most ...
const LOW = fraction((1n << 51n) - 1n, 1n << 51n); // ... or down (Python's libm exp)

/** The stated ε: a finite number > 0, within the mechanism's limit. */
function statedEpsilon(fields: JsonObject): number {
  const mechanism = String(fields.mechanism);
  const epsilon = fields.epsilon;
  if (typeof epsilon !== "number" || !Number.isFinite(epsilon) || epsilon <= 0) {
    fail(`${mechanism}: epsilon must be a finite number > 0, got ${String(epsilon)}`);
  }
  const limit = MAX_EPSILON[mechanism];
  if (limit !== undefined && !(epsilon <= limit)) {
    fail(`${mechanism}: epsilon=${floatText(epsilon)} is above ${limit}, the largest epsilon ${mechanism} supports`);
  }
  return epsilon;
}

/**
 * Refuse a ratio that gives more than ε (certified), or, when `matches`,
 * a stated ε clearly above what the ratio gives (Python's `_check_claim`).
 */
export function checkRatio(mechanism: string, epsilon: number, ratio: Fraction, matches: boolean): void {
  const e = expCorrectlyRounded(epsilon);
  if (!Number.isFinite(e)) return; // beyond every limit: refused by statedEpsilon
  const bound = mul(exactDouble(e), SAFETY); // Python's exp_lower_bound(ε), up to one ulp of exp
  const achieved = floatText(epsilonOfRatio(ratio));
  if (compare(ratio, mul(bound, HIGH)) > 0) {
    fail(
      `${mechanism} claims epsilon=${floatText(epsilon)} but its exact probabilities give epsilon=${achieved}; ` +
        "the claim must be at least what the probabilities give: load the server's spec",
    );
  }
  if (matches && compare(mul(bound, LOW), mul(ratio, add1(exactDouble(CLAIM_TOLERANCE)))) > 0) {
    fail(
      `${mechanism} states epsilon=${floatText(epsilon)} but its exact probabilities give epsilon=${achieved}; ` +
        `the stated epsilon must match them (e^epsilon within a relative ${CLAIM_TOLERANCE}): load the server's spec`,
    );
  }
}

function add1(x: Fraction): Fraction {
  return fraction(x.num + x.den, x.den);
}

/**
 * Check canonical spec fields: ε finite, positive and within its limit, the
 * probabilities in their ranges, and the claim against their exact ratio.
 * Throws a RangeError naming what is wrong.
 */
export function checkClaim(fields: JsonObject): void {
  const mechanism = String(fields.mechanism);
  if (mechanism === "rappor") return;
  const epsilon = statedEpsilon(fields);
  const ratio = privacyRatio(fields);
  if (ratio !== null) checkRatio(mechanism, epsilon, ratio, true);
}

const big = (v: string | number | bigint): bigint => BigInt(v);

/** Largest ratio hi/lo over pairs (exact, by cross-multiplication). */
function maxRatio(pairs: Iterable<[bigint, bigint]>): Fraction {
  let best: [bigint, bigint] = [1n, 1n];
  for (const [hi, lo] of pairs) if (hi * best[1] > best[0] * lo) best = [hi, lo];
  return fraction(best[0], best[1]);
}

/** (max, min) of every window of `width` consecutive values (monotone deques, linear time). */
function* windowExtremes(values: readonly bigint[], width: number): Generator<[bigint, bigint]> {
  const hi: number[] = [];
  const lo: number[] = [];
  for (let i = 0; i < values.length; i++) {
    while (hi.length && values[hi[hi.length - 1]] <= values[i]) hi.pop();
    while (lo.length && values[lo[lo.length - 1]] >= values[i]) lo.pop();
    hi.push(i);
    lo.push(i);
    if (hi[0] <= i - width) hi.shift();
    if (lo[0] <= i - width) lo.shift();
    if (i >= width - 1) yield [values[hi[0]], values[lo[0]]];
  }
}

/**
 * max over grid inputs i, i′ and outputs j of P[j|i]/P[j|i′] of a gridded
 * table, exactly (Python's `table_privacy_ratio`).
 */
export function tablePrivacyRatio(table: NumericTable): Fraction {
  if (table.kind === "rows") {
    const { a, b, m } = table.band ?? fail("a rows table needs its band");
    const [wa, wb] = [big(a), big(b)];
    if (wa <= 0n || wb <= 0n) fail("grid table has an output impossible for some input: no finite epsilon");
    if (big(m) === 0n) return ONE;
    return wa >= wb ? fraction(wa, wb) : fraction(wb, wa);
  }
  if (table.kind !== "shift") fail(`no table ratio for a ${table.kind} table`);
  const w = (table.weights ?? fail("a shift table needs its weights")).map(big);
  const K = Number(table.K);
  if (w.some((x) => x <= 0n)) fail("noise table has zero weights: no finite epsilon");
  const inner = w.slice(1, -1);
  if (!(K >= 1) || inner.length < K + 1) fail(`noise table of ${w.length} weights is too short for grid ${K}`);
  const sum = (xs: bigint[]) => xs.reduce((s, x) => s + x, 0n);
  const lowBin: [bigint, bigint] = [sum(w.slice(0, K + 1)), w[0]];
  const highBin: [bigint, bigint] = [sum(w.slice(-(K + 1))), w[w.length - 1]];
  return maxRatio([...windowExtremes(inner, K + 1), lowBin, highBin]);
}

/**
 * Check a numeric encoder's table against its spec: the two-point table is
 * the spec's own (`p` and outputs), a grid table has the spec's grid and
 * honours its ε (hybrid: both parts). Gaussian's guarantee is (ε, δ), which
 * the server's table was built for; its grid is checked.
 */
export function checkTableClaim(fields: JsonObject, table: NumericTable, expected: NumericTable | null): void {
  const mechanism = String(fields.mechanism);
  if (mechanism === "duchi" || mechanism === "stochastic-rounding") {
    if (expected === null || table.kind !== "two-point" || table.p !== expected.p || table.outputs.length !== 2 || table.outputs.some((v, i) => v !== expected.outputs[i])) {
      fail(`${mechanism}: the table is not the spec's (p=${String(fields.p)}); leave the table out, it follows from the spec`);
    }
    return;
  }
  const kinds: Record<string, string> = { piecewise: "rows", hybrid: "rows", laplace: "shift", gaussian: "shift" };
  if (kinds[mechanism] === undefined) fail(`${mechanism} is not a numeric mechanism`);
  if (table.kind !== kinds[mechanism]) fail(`${mechanism} needs a ${kinds[mechanism]} table, got ${table.kind}`);
  if (big(table.K ?? -1) !== big(fields.grid as bigint)) fail(`${mechanism}: the table's grid ${String(table.K)} is not the spec's ${String(fields.grid)}`);
  if ((table.alpha !== undefined) !== (mechanism === "hybrid")) fail(`${mechanism}: ${mechanism === "hybrid" ? "the table has no alpha" : "only hybrid tables have an alpha"}`);
  if (mechanism === "gaussian") return;
  const epsilon = statedEpsilon(fields);
  let ratio = tablePrivacyRatio(table);
  if (mechanism === "hybrid") {
    const alpha = parseFraction(table.alpha!);
    if (alpha.num < 0n || compare(alpha, ONE) > 0) fail(`hybrid: alpha must be in [0, 1], got ${table.alpha}`);
    const duchi = privacyRatio({ mechanism: "duchi", p: table.duchi_p ?? fail("hybrid: the table has no duchi_p") });
    if (alpha.num === 0n || compare(duchi!, ratio) > 0) ratio = duchi!;
  }
  checkRatio(mechanism, epsilon, ratio, false);
}
