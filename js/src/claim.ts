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
 * ratio is checked when an encoder is given one (`checkTableClaim`, next to
 * the numeric encoder in numeric.ts).
 */
import { type Fraction, ONE, add, compare, div, divInt, fraction, fractionText, mul, parseFraction, sub } from "./fraction.js";
import { checkRatio, statedEpsilon } from "./epsilon.js";
import { LH_PRIME } from "./hashing.js";
import { hadamardBlockSize } from "./hrlayout.js";
import type { JsonObject } from "./json.js";
import { fail } from "./text.js";

export { CLAIM_TOLERANCE, checkRatio } from "./epsilon.js";

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
    case "onebitmean": {
      // one report keeps with k = γ + (1 − 2γ)p (ldp/specs/onebitmean.py); ε∞ is ln(p/(1 − p))
      const p = keep(fields, fraction(1n, 2n), "1/2");
      const gamma = prob(fields, "gamma");
      if (compare(gamma, fraction(1n, 2n)) >= 0) fail(`onebitmean: gamma must be below 1/2, got ${text(gamma)}`);
      if (fields.rounding !== "alpha" && gamma.num !== 0n) fail("onebitmean: gamma applies with rounding='alpha' only");
      const k = add(gamma, mul(sub(ONE, mul(fraction(2n), gamma)), p));
      return div(k, sub(ONE, k));
    }
  }
  return null;
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
