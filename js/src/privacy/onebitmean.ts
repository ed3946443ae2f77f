/**
 * Privacy facts of 1BitMean (`ldp/specs/onebitmean.py`): plain, or memoized
 * per α-rounded grid point with output perturbation γ.
 */
import { ONE, add, compare, fraction, mul, sub } from "../fraction.js";
import type { JsonObject } from "../json.js";
import { fractionToNumber } from "../exact.js";
import { floatText } from "../float.js";
import { type MechanismPrivacy, checkValueScale, intIn, keep, odds, prob, text } from "../privacyfields.js";
import { fail } from "../text.js";

/** The α grid when a memoized spec gives none (`DEFAULT_ALPHA_GRID`). */
const DEFAULT_ALPHA_GRID = 16n;
/** Largest α grid (`MAX_GRID`). */
const MAX_GRID = 1024n;
/** Smallest positive normal double (`SMALLEST_NORMAL`). */
const SMALLEST_NORMAL = 2 ** -1022;

/**
 * 1BitMean: one report keeps with k = γ + (1 − 2γ)p between the ends of the
 * range (every other input mixes them), ratio k/(1 − k). With
 * `rounding = "alpha"` each of the grid + 1 grid points has a memoized bit
 * of ratio p/(1 − p), which bounds any number of reports of that point.
 *
 * @privacy onebitmean
 */
export function oneBitMeanPrivacy(fields: JsonObject): MechanismPrivacy {
  const [low, high] = [fields.low as number, fields.high as number];
  if (!(low < high)) fail(`onebitmean: need low < high, got low=${floatText(low)}, high=${floatText(high)}`);
  const rounding = fields.rounding;
  const memoized = rounding === "alpha";
  if (!memoized && rounding !== "none") fail(`onebitmean: rounding must be one of ('none', 'alpha'), got '${String(rounding)}'`);
  if (!memoized && fields.grid !== null) {
    fail("onebitmean: grid applies with rounding='alpha' only (plain 1BitMean sends a fresh bit per report)");
  }
  if (!memoized && prob(fields, "gamma").num !== 0n) {
    fail(
      "onebitmean: gamma (output perturbation of a memoized bit) applies with rounding='alpha' only; " +
        "without it each bit is fresh and epsilon alone sets its privacy",
    );
  }
  const grid = memoized ? intIn(fields, "grid", 1n, MAX_GRID) : null;
  const width = high - low;
  if (!Number.isFinite(width)) {
    fail(`onebitmean: the range [${floatText(low)}, ${floatText(high)}] is too wide: high - low overflows a double`);
  }
  if (width / Number(grid ?? 1n) < SMALLEST_NORMAL) {
    fail(
      `onebitmean: the range [${floatText(low)}, ${floatText(high)}] is too narrow for grid=${grid ?? "None"}: its step ` +
        `is below the smallest normal double ${floatText(SMALLEST_NORMAL)}`,
    );
  }
  const p = keep(fields, fraction(1n, 2n), "1/2");
  const gamma = prob(fields, "gamma");
  if (compare(gamma, fraction(1n, 2n)) >= 0) fail(`onebitmean: gamma must be below 1/2, got ${text(gamma)}`);
  const k = add(gamma, mul(sub(ONE, add(gamma, gamma)), p));
  // one report's unbiased native estimate is C′(2b − 1), C′ = 1/(2k − 1)
  checkValueScale("onebitmean", low, high, fields.epsilon as number, fractionToNumber(k.den, 2n * k.num - k.den));
  if (grid === null) return { ratio: odds(k) };
  return { ratio: odds(k), permanentRatio: odds(p), memoValues: grid + 1n, memoLinear: true };
}

/**
 * A memoized (α-rounded) spec without a grid takes the default grid, as
 * `OneBitMean.__init__` does (the canonical fields, hence the fingerprint,
 * hold it).
 *
 * @canonical onebitmean
 */
export function oneBitMeanFields(out: JsonObject): void {
  if (out.rounding === "alpha" && out.grid === null) out.grid = DEFAULT_ALPHA_GRID;
}
