/**
 * Privacy facts of the range mechanisms (`ldp/specs/ranges.py`): one sampled
 * level per report, the level (and Haar's Hadamard index) independent of the
 * value. This client checks their specs' claims; it does not encode them.
 */
import { ONE, compare, div, fraction, mul, sub } from "../fraction.js";
import type { JsonObject } from "../json.js";
import { type MechanismPrivacy, domainSize, int, keep, odds, prob, text } from "../privacyfields.js";
import { fail } from "../text.js";

/**
 * range-hierarchy: OUE of the user's node at the sampled level; two values
 * differ in two bits of that level, ratio p(1 − q)/((1 − p)q).
 *
 * @privacy range-hierarchy
 */
export function rangeHierarchyPrivacy(fields: JsonObject): MechanismPrivacy {
  if (domainSize(fields) < 2n) fail("range-hierarchy needs a domain of at least 2 values");
  const branching = int(fields, "branching");
  if (branching < 2n || branching > 1024n) fail(`range-hierarchy: branching must be in [2, 1024], got ${branching}`);
  const [p, q] = [prob(fields, "p"), prob(fields, "q")];
  for (const [name, v] of [["p", p], ["q", q]] as const) {
    if (v.num <= 0n || compare(v, ONE) >= 0) fail(`range-hierarchy: ${name} must be in (0, 1), got ${text(v)}`);
  }
  if (compare(p, q) <= 0) fail(`range-hierarchy: p must exceed q, got p=${text(p)}, q=${text(q)}`);
  return { ratio: div(mul(p, sub(ONE, q)), mul(sub(ONE, p), q)) };
}

/**
 * range-haar: binary randomized response of the Hadamard-transformed Haar
 * sign, ratio p/(1 − p).
 *
 * @privacy range-haar
 */
export function rangeHaarPrivacy(fields: JsonObject): MechanismPrivacy {
  if (domainSize(fields) < 2n) fail("range-haar needs a domain of at least 2 values");
  return { ratio: odds(keep(fields, fraction(1n, 2n), "1/2")) };
}
