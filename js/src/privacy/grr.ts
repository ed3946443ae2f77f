/**
 * Privacy facts of generalized randomized response (`ldp/specs/frequency.py` GRR, BinaryRR).
 */
import { fraction } from "../fraction.js";
import type { JsonObject } from "../json.js";
import { type MechanismPrivacy, domainSize, keep, rrRatio } from "../privacyfields.js";
import { fail } from "../text.js";

/**
 * GRR over d values keeps the value with p > 1/d: ratio p/q, q = (1 − p)/(d − 1).
 *
 * @privacy grr binary-rr
 */
export function grrPrivacy(fields: JsonObject): MechanismPrivacy {
  const mechanism = String(fields.mechanism);
  const d = domainSize(fields);
  if (mechanism === "binary-rr" && d !== 2n) fail(`binary-rr needs a domain of exactly 2 values, got ${d}`);
  if (d < 2n) fail(`${mechanism} needs a domain of at least 2 values, got ${d}`);
  return { ratio: rrRatio(keep(fields, fraction(1n, d), `1/d = 1/${d}`), d) };
}
