/**
 * Privacy facts of the count-mean sketches (`ldp/specs/sketch.py` CMS, HCMS).
 */
import { fraction, mul } from "../fraction.js";
import type { JsonObject } from "../json.js";
import { type MechanismPrivacy, domainSize, keep, odds } from "../privacyfields.js";
import { fail } from "../text.js";

/** Each sketch bit is kept with p > 1/2: the odds p/(1 − p) per differing bit. */
function bitOdds(fields: JsonObject): ReturnType<typeof odds> {
  if (domainSize(fields) < 2n) fail(`${String(fields.mechanism)} needs a domain of at least 2 values`);
  return odds(keep(fields, fraction(1n, 2n), "1/2"));
}

/**
 * CMS flips each bit of a one-hot row: two bits differ, ratio (p/(1 − p))².
 *
 * @privacy cms
 */
export function cmsPrivacy(fields: JsonObject): MechanismPrivacy {
  const ratio = bitOdds(fields);
  return { ratio: mul(ratio, ratio) };
}

/**
 * HCMS sends one Hadamard coefficient, flipped: ratio p/(1 − p).
 *
 * @privacy hcms
 */
export function hcmsPrivacy(fields: JsonObject): MechanismPrivacy {
  return { ratio: bitOdds(fields) };
}
