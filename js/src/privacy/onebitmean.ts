/**
 * Privacy facts of 1BitMean (`ldp/specs/onebitmean.py`): plain, or memoized
 * per α-rounded grid point with output perturbation γ.
 */
import { ONE, add, compare, fraction, mul, sub } from "../fraction.js";
import type { JsonObject } from "../json.js";
import { type MechanismPrivacy, int, keep, odds, prob, text } from "../privacyfields.js";
import { fail } from "../text.js";

/**
 * 1BitMean: one report keeps with k = γ + (1 − 2γ)p between the ends of the
 * range (every other input mixes them), ratio k/(1 − k). With
 * `rounding = "alpha"` each of the grid + 1 grid points has a memoized bit
 * of ratio p/(1 − p), which bounds any number of reports of that point.
 *
 * @privacy onebitmean
 */
export function oneBitMeanPrivacy(fields: JsonObject): MechanismPrivacy {
  const p = keep(fields, fraction(1n, 2n), "1/2");
  const gamma = prob(fields, "gamma");
  if (compare(gamma, fraction(1n, 2n)) >= 0) fail(`onebitmean: gamma must be below 1/2, got ${text(gamma)}`);
  const memoized = fields.rounding === "alpha";
  if (!memoized && fields.rounding !== "none") fail(`onebitmean: rounding must be none or alpha, got ${String(fields.rounding)}`);
  if (!memoized && gamma.num !== 0n) fail("onebitmean: gamma applies with rounding='alpha' only");
  const k = add(gamma, mul(sub(ONE, add(gamma, gamma)), p));
  if (!memoized) return { ratio: odds(k) };
  const grid = int(fields, "grid");
  if (grid < 1n || grid > 1024n) fail(`onebitmean: grid must be in [1, 1024], got ${grid}`);
  return { ratio: odds(k), permanentRatio: odds(p), memoValues: grid + 1n, memoLinear: true };
}
