/**
 * The stated ε of a spec and the certified comparison of a ratio with it,
 * shared by the categorical claims (claim.ts) and the numeric tables'
 * (numeric.ts); see claim.ts for what is checked and why.
 */
import { type Fraction, compare, fraction, mul } from "./fraction.js";
import { doubleToFraction, epsilonOfRatio, expCorrectlyRounded } from "./exact.js";
import { floatText, formatG } from "./float.js";
import type { JsonObject } from "./json.js";
import { type MechanismPrivacy, positiveEpsilon } from "./privacyfields.js";
import { fail } from "./text.js";

/** A stated e^ε may exceed the exact probability ratio by this relative amount at most (Python's `CLAIM_TOLERANCE`). */
export const CLAIM_TOLERANCE = 1e-9;

/** The exact value of a double. */
function exactDouble(x: number): Fraction {
  const [num, den] = doubleToFraction(x);
  return fraction(num, den);
}

const SAFETY = fraction((1n << 50n) - 1n, 1n << 50n); // 1 − 2^-50, as ldp/exact.py
const HIGH = fraction((1n << 51n) + 1n, 1n << 51n); // e^ε rounded one ulp up at most ...
const LOW = fraction((1n << 51n) - 1n, 1n << 51n); // ... or down (Python's libm exp)

/** Largest ε whose e^ε is a finite double, so that a claim can be certified (Python's `REPRESENTABLE_MAX_EPSILON`). */
export const REPRESENTABLE_MAX_EPSILON = 700;
const REPRESENTABLE_WHY = "e^epsilon must be a finite double to certify the claim";

/**
 * The stated ε of the field `name` (`epsilon`, or a memoized mechanism's
 * `epsilon_one` or `epsilon_inf`): a finite number > 0, within the
 * mechanism's limit (`limits`: its privacy facts' `maxEpsilon` and
 * `maxEpsilonReason`, from the Python spec's `max_epsilon`; without one,
 * `REPRESENTABLE_MAX_EPSILON`, the largest of every limit, so that e^ε is a
 * finite double); a RangeError naming it otherwise.
 */
export function statedEpsilon(
  fields: JsonObject,
  limits: Pick<MechanismPrivacy, "maxEpsilon" | "maxEpsilonReason"> = {},
  name = "epsilon",
): number {
  const epsilon = positiveEpsilon(fields, name);
  const [limit, why] =
    limits.maxEpsilon === undefined ? [REPRESENTABLE_MAX_EPSILON, REPRESENTABLE_WHY] : [limits.maxEpsilon, limits.maxEpsilonReason];
  checkEpsilonLimit(String(fields.mechanism), name, epsilon, limit, why);
  return epsilon;
}

/** Refuse `epsilon` (the value of the field `name`) above `limit` (none: no limit), saying why (Python's `check_epsilon_limit`). */
export function checkEpsilonLimit(mechanism: string, name: string, epsilon: number, limit: number, why = ""): void {
  if (!(epsilon <= limit)) {
    fail(`${mechanism}: ${name}=${formatG(epsilon, 10)} is above ${formatG(limit)}, the largest epsilon ${mechanism} supports${why ? ` (${why})` : ""}`);
  }
}

/**
 * Refuse a ratio that gives more than ε (certified), or, when `matches`,
 * a stated ε clearly above what the ratio gives (Python's `_check_claim`).
 * `name`: the stated field, in messages (`epsilon_inf` for a memoized
 * mechanism's permanent response).
 */
export function checkRatio(mechanism: string, epsilon: number, ratio: Fraction, matches: boolean, name = "epsilon"): void {
  const e = expCorrectlyRounded(epsilon);
  if (!Number.isFinite(e)) return; // beyond every limit (REPRESENTABLE_MAX_EPSILON): refused by statedEpsilon
  const bound = mul(exactDouble(e), SAFETY); // Python's exp_lower_bound(ε), up to one ulp of exp
  const achieved = floatText(epsilonOfRatio(ratio));
  if (compare(ratio, mul(bound, HIGH)) > 0) {
    fail(
      `${mechanism} claims ${name}=${floatText(epsilon)} but its exact probabilities give ${name}=${achieved}; ` +
        "the claim must be at least what the probabilities give: load the server's spec",
    );
  }
  if (matches && compare(mul(bound, LOW), mul(ratio, add1(exactDouble(CLAIM_TOLERANCE)))) > 0) {
    fail(
      `${mechanism} states ${name}=${floatText(epsilon)} but its exact probabilities give ${name}=${achieved}; ` +
        `the stated ${name} must match them (e^${name} within a relative ${CLAIM_TOLERANCE}): load the server's spec`,
    );
  }
}

function add1(x: Fraction): Fraction {
  return fraction(x.num + x.den, x.den);
}
