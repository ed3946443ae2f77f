/**
 * Privacy facts of the numeric mechanisms (`ldp/specs/numeric.py`).
 */
import { fraction } from "../fraction.js";
import type { JsonObject } from "../json.js";
import { type MechanismPrivacy, keep, odds } from "../privacyfields.js";

/**
 * Duchi's mechanism and stochastic rounding send one of two values, the
 * likelier with p > 1/2: ratio p/(1 − p).
 *
 * @privacy duchi stochastic-rounding
 */
export function binaryNumericPrivacy(fields: JsonObject): MechanismPrivacy {
  return { ratio: odds(keep(fields, fraction(1n, 2n), "1/2")) };
}

/**
 * The grid mechanisms: their probabilities are a table the server computes,
 * not spec fields, so their ratio is checked when an encoder is given the
 * table (`checkTableClaim` in numeric.ts); here only the stated ε is checked.
 *
 * @privacy piecewise hybrid laplace gaussian
 */
export function gridPrivacy(_fields: JsonObject): MechanismPrivacy {
  return { ratio: null };
}
