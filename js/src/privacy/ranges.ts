/**
 * Privacy facts of the range mechanisms (`ldp/specs/ranges.py`): one sampled
 * level per report, the level (and Haar's Hadamard index) independent of the
 * value. This client checks their specs' claims; it does not encode them.
 */
import { ONE, compare, div, fraction, mul, sub } from "../fraction.js";
import type { JsonObject } from "../json.js";
import { type MechanismPrivacy, domainSize, grouped, intIn, keep, odds, openProb, text } from "../privacyfields.js";
import { fail } from "../text.js";

/** Largest padded leaf count (`MAX_RANGE_LEAVES`: the aggregator keeps dense D × D matrices). */
const MAX_RANGE_LEAVES = 1n << 12n;

/** The padded leaves at most `MAX_RANGE_LEAVES` (`RangeSpec._check_leaves`). */
function checkLeaves(mechanism: string, leaves: bigint): void {
  if (leaves > MAX_RANGE_LEAVES) {
    fail(
      `${mechanism}: ${grouped(leaves)} padded leaves exceed ${grouped(MAX_RANGE_LEAVES)} (the aggregator keeps ` +
        "dense leaf-by-leaf matrices for exact variances)",
    );
  }
}

/**
 * range-hierarchy: OUE of the user's node at the sampled level; two values
 * differ in two bits of that level, ratio p(1 − q)/((1 − p)q).
 *
 * @privacy range-hierarchy
 */
export function rangeHierarchyPrivacy(fields: JsonObject): MechanismPrivacy {
  const d = domainSize(fields);
  if (d < 2n) fail(`range-hierarchy needs a domain of at least 2 values, got ${d}`);
  const branching = intIn(fields, "branching", 2n, 1024n);
  let leaves = branching; // B^h ≥ d
  while (leaves < d) leaves *= branching;
  checkLeaves("range-hierarchy", leaves);
  const [p, q] = [openProb(fields, "p"), openProb(fields, "q")];
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
  const d = domainSize(fields);
  if (d < 2n) fail(`range-haar needs a domain of at least 2 values, got ${d}`);
  checkLeaves("range-haar", 1n << BigInt(Math.max((d - 1n).toString(2).length, 1))); // 2^⌈log2 d⌉
  return { ratio: odds(keep(fields, fraction(1n, 2n), "1/2")) };
}
