/**
 * Privacy facts of unary encoding (`ldp/specs/frequency.py` SUE, OUE).
 */
import { ONE, compare, div, mul, sub } from "../fraction.js";
import type { JsonObject } from "../json.js";
import { type MechanismPrivacy, domainSize, openProb, text } from "../privacyfields.js";
import { fail } from "../text.js";

/**
 * Unary encoding keeps a 1 with p and flips a 0 with q < p: two bits differ,
 * ratio p(1 − q)/((1 − p)q).
 *
 * @privacy sue oue
 */
export function unaryPrivacy(fields: JsonObject): MechanismPrivacy {
  const mechanism = String(fields.mechanism);
  const d = domainSize(fields);
  if (d < 2n) fail(`${mechanism} needs a domain of at least 2 values, got ${d}`);
  const [p, q] = [openProb(fields, "p"), openProb(fields, "q")];
  if (compare(p, q) <= 0) fail(`${mechanism}: p must exceed q, got p=${text(p)}, q=${text(q)}`);
  return { ratio: div(mul(p, sub(ONE, q)), mul(sub(ONE, p), q)) };
}
