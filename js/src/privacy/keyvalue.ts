/**
 * Privacy facts of the key-value mechanisms (`ldp/specs/key_value.py`, docs/key-value.md#privacy).
 */
import { type Fraction, ONE, add, compare, div, divInt, fraction, mul, sub } from "../fraction.js";
import type { JsonObject } from "../json.js";
import { type MechanismPrivacy, domainSize, int, prob, text } from "../privacyfields.js";
import { fail } from "../text.js";

const HALF = fraction(1n, 2n);
const max = (a: Fraction, b: Fraction): Fraction => (compare(a, b) >= 0 ? a : b);
const min = (a: Fraction, b: Fraction): Fraction => (compare(a, b) <= 0 ? a : b);

function keys(fields: JsonObject): bigint {
  const d = domainSize(fields);
  const mechanism = String(fields.mechanism);
  if (d < 2n || d > 65536n) fail(`${mechanism} needs between 2 and 65536 keys, got ${d}`);
  const ell = int(fields, "ell");
  if (ell < 1n || ell > 65536n) fail(`ell must be in [1, 65536], got ${ell}`);
  return d;
}

function open(fields: JsonObject, name: string): Fraction {
  const x = prob(fields, name);
  if (compare(x, fraction(0n)) <= 0 || compare(x, ONE) >= 0) {
    fail(`${name} must be in (0, 1), got ${text(x)}`);
  }
  return x;
}

/** a, b and p of PCKV, checked as the Python constructor does (a > b, p > 1/2). */
/** A probability in [0, 1) (Python's `check_probability(..., high_open=True)`). */
function belowOne(fields: JsonObject, name: string): Fraction {
  const x = prob(fields, name);
  if (compare(x, ONE) >= 0) fail(`${name} must be in [0, 1), got ${text(x)}`);
  return x;
}

function pckv(fields: JsonObject): [Fraction, Fraction, Fraction] {
  const a = open(fields, "a");
  const b = open(fields, "b");
  const p = belowOne(fields, "p");
  if (compare(a, b) <= 0 || compare(p, HALF) <= 0) {
    fail(`${String(fields.mechanism)}: needs a > b and p > 1/2 (got a=${text(a)}, b=${text(b)}, p=${text(p)})`);
  }
  return [a, b, p];
}

/**
 * PCKV-UE: one coordinate of each of two keys, max(2ap/b, (1 − a)/(1 − b)) / min(2a(1 − p)/b, (1 − a)/(1 − b)).
 *
 * @privacy pckv-ue
 */
export function pckvUePrivacy(fields: JsonObject): MechanismPrivacy {
  keys(fields);
  const [a, b, p] = pckv(fields);
  const zero = div(sub(ONE, a), sub(ONE, b));
  const hi = div(mul(fraction(2n), mul(a, p)), b);
  const lo = div(mul(fraction(2n), mul(a, sub(ONE, p))), b);
  return { ratio: div(max(hi, zero), min(lo, zero)) };
}

/**
 * PCKV-GRR with padding ℓ: ((ℓ − 1)q + max(ap, q)) / ((ℓ − 1)q + min(a(1 − p), q)), q = b/2, b = (1 − a)/(d + ℓ − 1).
 *
 * @privacy pckv-grr
 */
export function pckvGrrPrivacy(fields: JsonObject): MechanismPrivacy {
  const d = keys(fields);
  const ell = int(fields, "ell");
  const [a, b, p] = pckv(fields);
  const expected = divInt(sub(ONE, a), d + ell - 1n);
  if (compare(b, expected) !== 0) fail(`pckv-grr: b must be (1 - a)/(d + ell - 1) = ${text(expected)}`);
  const q = mul(b, HALF);
  const shared = mul(fraction(ell - 1n), q);
  const top = max(mul(a, p), q);
  const bottom = min(mul(a, sub(ONE, p)), q);
  return { ratio: div(add(shared, top), add(shared, bottom)) };
}

/**
 * PrivKVM's single round: the drawn key's outputs ±1 and "absent",
 * max(max/min of (p₁p₂, p₁(1 − p₂), (1 − p₁)/2), p₁/(1 − p₁)).
 *
 * @privacy privkvm
 */
export function privkvmPrivacy(fields: JsonObject): MechanismPrivacy {
  keys(fields);
  if (int(fields, "ell") !== 1n) fail("privkvm samples one key uniformly and pads nothing: ell must be 1");
  const p1 = belowOne(fields, "p1");
  const p2 = belowOne(fields, "p2");
  if (compare(p1, HALF) <= 0 || compare(p2, HALF) <= 0) {
    fail(`privkvm: needs p1 > 1/2 and p2 > 1/2 (got ${text(p1)}, ${text(p2)})`);
  }
  const signs = [mul(p1, p2), mul(p1, sub(ONE, p2)), mul(sub(ONE, p1), HALF)];
  const hi = signs.reduce(max);
  const lo = signs.reduce(min);
  return { ratio: max(div(hi, lo), div(p1, sub(ONE, p1))) };
}
