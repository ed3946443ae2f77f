/**
 * Privacy facts of dBitFlip (`ldp/specs/dbitflip.py`): memoized, with ε₁ from
 * one report (the memoized bits flipped with γ) and ε∞ from the memoized bits.
 */
import { type Fraction, ONE, add, compare, div, fraction, mul, sub } from "../fraction.js";
import type { JsonObject } from "../json.js";
import { type MechanismPrivacy, domainSize, int, prob, text } from "../privacyfields.js";
import { fail } from "../text.js";

function pow(a: Fraction, k: bigint): Fraction {
  return fraction(a.num ** k, a.den ** k);
}

const HALF = fraction(1n, 2n);

/**
 * dBitFlip: each of the d sampled bits is memoized as 1 with p (its bucket
 * holds the value) or q = 1 − p, and sent flipped with γ, so it is 1 with
 * p′ = γ + (1 − 2γ)p or q′ = 1 − p′. Two values change m = min(d, 2) sampled
 * bits: one report's ratio is (p′/q′)^m, the memoized bits' (p/q)^m; a client
 * has min(d + 1, b) memo keys (the patterns of which sampled bucket holds the
 * value).
 *
 * @privacy dbitflip
 */
export function dbitflipPrivacy(fields: JsonObject): MechanismPrivacy {
  const b = domainSize(fields);
  if (b < 2n) fail(`dbitflip needs a domain of at least 2 values, got ${b}`);
  const d = int(fields, "d");
  if (d < 1n || d > b) fail(`d must be in [1, ${b}], got ${d}`);
  const [p, gamma] = [prob(fields, "p"), prob(fields, "gamma")];
  if (compare(p, HALF) <= 0 || compare(p, ONE) >= 0) fail(`dbitflip: p must exceed 1/2, got ${text(p)}`);
  if (gamma.num < 0n || compare(gamma, HALF) >= 0) fail(`dbitflip: gamma must be in [0, 1/2), got ${text(gamma)}`);
  const q = sub(ONE, p);
  const sent = add(gamma, mul(sub(ONE, mul(fraction(2n, 1n), gamma)), p));
  const m = d < 2n ? d : 2n;
  const ratio = pow(div(sent, sub(ONE, sent)), m);
  const permanentRatio = pow(div(p, q), m);
  const memoValues = d + 1n < b ? d + 1n : b;
  // r reports of one memo key are (r·ε₁)-DP: per sampled bit RAPPOR's structure (Python's memo_linear)
  return { ratio, permanentRatio, memoValues, memoLinear: true };
}
