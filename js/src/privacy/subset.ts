/**
 * Privacy facts of subset selection (`ldp/specs/subset.py`).
 */
import { ONE, div, fraction, mul, sub } from "../fraction.js";
import type { JsonObject } from "../json.js";
import { type MechanismPrivacy, domainSize, int, keep } from "../privacyfields.js";
import { fail } from "../text.js";

/**
 * Subset selection reports ω of d values, the true one with p > ω/d:
 * ratio p(d − ω)/((1 − p)ω).
 *
 * @privacy ss
 */
export function subsetPrivacy(fields: JsonObject): MechanismPrivacy {
  const d = domainSize(fields);
  if (d < 2n) fail(`ss needs a domain of at least 2 values, got ${d}`);
  const omega = int(fields, "omega");
  if (omega < 1n || omega > d - 1n) fail(`omega must be in [1, ${d - 1n}], got ${omega}`);
  const p = keep(fields, fraction(omega, d), `omega/d = ${omega}/${d}`);
  return { ratio: div(mul(p, fraction(d - omega)), mul(sub(ONE, p), fraction(omega))) };
}
