/**
 * Privacy facts of LOLOHA (`ldp/specs/loloha.py`): memoized per hash bucket,
 * with ε₁ from one report of the two-round chain and ε∞ from the round-1 memo.
 */
import { type Fraction, ONE, add, compare, div, divInt, fraction, mul, sub } from "../fraction.js";
import type { JsonObject } from "../json.js";
import { checkEpsilonLimit } from "../epsilon.js";
import { epsilonBoundOfRatio } from "../exact.js";
import { floatText } from "../float.js";
import { type MechanismPrivacy, domainSize, grouped, intIn, prob, text } from "../privacyfields.js";
import { fail } from "../text.js";
import { memoReportEpsilon } from "./longitudinal.js";

const cache = new Map<string, number>();

/** The largest pool_size × g (the aggregator's table of counts), as `MAX_TABLE_COUNTERS`. */
const MAX_TABLE = 1n << 24n;
/** The largest pool, as `MAX_POOL_SIZE`. */
const MAX_POOL = 1n << 20n;
/** The default pool (`DEFAULT_POOL_SIZE`). */
const DEFAULT_POOL_SIZE = 1n << 16n;
/** Largest ε∞ (`RR64_MAX_EPSILON`), and why (LOLOHA's `max_epsilon_reason`). */
const RR64_MAX_EPSILON = 23;
const MAX_EPSILON_REASON =
  "its smallest probabilities, about 1/(e^epsilon + g - 1), are multiples of 2^-64 and could not match " +
  "e^epsilon to 1e-9 above it";

/**
 * LOLOHA: round 1 keeps the bucket w.p. p₁ (each other q₁ = (1 − p₁)/(g − 1)),
 * round 2 keeps the memo w.p. p₂. One report's worst-case ratio is the
 * chain's A/B with A = p₁p₂ + (1 − p₁)q₂ and B = q₁p₂ + (1 − q₁)q₂; any number
 * of reports of one bucket are bounded by the memo's p₁/q₁; a client has at
 * most g memo keys (its buckets). r reports of one bucket are L-GRR's over
 * the g buckets, so the ledger charges them min(r·ε′, ε∞) with L-GRR's ε′
 * (Python's `memo_report_epsilon`, `memo_linear`).
 *
 * @privacy loloha
 */
export function lolohaPrivacy(fields: JsonObject): MechanismPrivacy {
  const d = domainSize(fields);
  if (d < 2n) fail(`loloha needs a domain of at least 2 values, got ${d}`);
  const [stated, statedInf] = [fields.epsilon as number, fields.epsilon_inf as number];
  checkEpsilonLimit("loloha", "epsilon_inf", statedInf, RR64_MAX_EPSILON, MAX_EPSILON_REASON);
  if (!(stated < statedInf)) {
    fail(
      `loloha needs epsilon (one report) < epsilon_inf (the memoized round), got ${floatText(stated)} and ${floatText(statedInf)}`,
    );
  }
  const g = intIn(fields, "g", 2n, MAX_TABLE);
  const poolSize = intIn(fields, "pool_size", 1n, MAX_POOL);
  if (poolSize * g > MAX_TABLE) {
    fail(
      `loloha: pool_size x g = ${grouped(poolSize)} x ${grouped(g)} is above the limit of ${grouped(MAX_TABLE)} ` +
        "(the aggregator keeps one int64 count per pool function and bucket)",
    );
  }
  const [p1, p2] = [prob(fields, "p1"), prob(fields, "p2")];
  if (compare(p1, ONE) >= 0) fail(`loloha: p1 must be in [0, 1), got ${text(p1)}`);
  if (compare(p2, ONE) > 0) fail(`loloha: p2 must be in [0, 1], got ${text(p2)}`);
  for (const [name, p] of [["p1", p1], ["p2", p2]] as const) {
    if (compare(p, fraction(1n, g)) <= 0) fail(`loloha: ${name} must exceed 1/g = 1/${g}, got ${text(p)}`);
  }
  const q1 = divInt(sub(ONE, p1), g - 1n);
  const q2 = divInt(sub(ONE, p2), g - 1n);
  const a = add(mul(p1, p2), mul(sub(ONE, p1), q2));
  const b = add(mul(q1, p2), mul(sub(ONE, q1), q2));
  const ratio = div(a, b);
  const permanentRatio = div(p1, q1);
  const one = typeof fields.epsilon === "number" ? fields.epsilon : epsilonBoundOfRatio(ratio);
  const inf = typeof fields.epsilon_inf === "number" ? fields.epsilon_inf : epsilonBoundOfRatio(permanentRatio);
  const key = JSON.stringify([String(g), `${p1.num}/${p1.den}`, `${p2.num}/${p2.den}`, one, inf]);
  let perReport = cache.get(key);
  if (perReport === undefined) {
    perReport = memoReportEpsilon(true, [p1, q1, p2, q2], Number(g), one, inf);
    cache.set(key, perReport);
  }
  return { ratio, permanentRatio, memoValues: g, memoReportEpsilon: perReport, memoLinear: true };
}

/**
 * A spec without a pool_size takes Python's default, min(2^16, ⌊2^24/g⌋)
 * (`default_pool_size`: it follows from g, not from ε).
 *
 * @canonical loloha
 */
export function lolohaFields(out: JsonObject): void {
  if (out.pool_size !== null) return;
  const g = typeof out.g === "bigint" ? out.g : fail("loloha spec has no integer g");
  if (g < 2n || g > MAX_TABLE) return; // refused with Python's message by lolohaPrivacy
  const fit = MAX_TABLE / g;
  out.pool_size = fit < DEFAULT_POOL_SIZE ? fit : DEFAULT_POOL_SIZE;
}
