/**
 * Exact ratios and e^ε (the port of `ldp/exact.py`): doubles as exact
 * fractions, correctly rounded conversions back, ln of an exact ratio, and
 * the certified comparison of a probability ratio with e^ε that every
 * privacy claim rests on (`ratioWithin`, `epsilonBoundOfRatio`).
 */
import { bitLength } from "./bytes.js";
import type { Fraction } from "./fraction.js";

/** The exact value of a finite double as [numerator, denominator] (a power of two). */
export function doubleToFraction(x: number): [bigint, bigint] {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const exponent = Number((bits >> 52n) & 0x7ffn);
  let mantissa = bits & ((1n << 52n) - 1n);
  if (exponent !== 0) mantissa |= 1n << 52n;
  const e = (exponent === 0 ? 1 : exponent) - 1075;
  const sign = bits >> 63n ? -1n : 1n;
  return e >= 0 ? [sign * (mantissa << BigInt(e)), 1n] : [sign * mantissa, 1n << BigInt(-e)];
}

/** num/den as the nearest double (ties to even), as Python's float(Fraction); ±Infinity beyond range. */
export function fractionToNumber(num: bigint, den: bigint): number {
  if (den < 0n) [num, den] = [-num, -den];
  if (num === 0n) return 0;
  const negative = num < 0n;
  if (negative) num = -num;
  const s = 55 - (bitLength(num) - bitLength(den)); // quotient of 55 or 56 bits
  const scaledNum = s >= 0 ? num << BigInt(s) : num;
  const scaledDen = s >= 0 ? den : den << BigInt(-s);
  let q = scaledNum / scaledDen;
  if (q * scaledDen !== scaledNum) q |= 1n; // sticky bit below the rounding bit
  const value = Number(q) * 2 ** -s; // Number(q) rounds to nearest even; the scaling is exact in range
  return negative ? -value : value;
}

function lnBig(n: bigint): number {
  const shift = Math.max(0, bitLength(n) - 53);
  return Math.log(Number(n >> BigInt(shift))) + shift * Math.LN2;
}

/** ln(ratio) as a double (Python's `epsilon_of_ratio`). */
export function epsilonOfRatio(r: Fraction): number {
  if (r.num <= 0n) throw new RangeError("a probability ratio must be positive");
  const x = fractionToNumber(r.num, r.den);
  return Number.isFinite(x) ? Math.log(x) : lnBig(r.num) - lnBig(r.den);
}

const FIXED = 256n; // fraction bits of the fixed-point exp

/**
 * e^x rounded to the nearest double, for 0 ≤ x < 709 (Math.exp may be one
 * unit in the last place off, and Python's exp, glibc's, is correctly rounded
 * wherever the ledger uses it): 256-bit fixed point, halving to below 2^-8,
 * Taylor series, squaring back.
 */
export function expCorrectlyRounded(x: number): number {
  if (!(x >= 0 && x < 709)) return Math.exp(x);
  if (x === 0) return 1;
  const [num, den] = doubleToFraction(x);
  const one = 1n << FIXED;
  let halvings = 0;
  while (x / 2 ** halvings >= 2 ** -8) halvings++;
  const y = (num << FIXED) / (den << BigInt(halvings)); // x / 2^halvings in fixed point (truncated)
  let sum = one;
  let term = one;
  for (let n = 1n; term !== 0n; n++) {
    term = (term * y) / (n << FIXED);
    sum += term;
  }
  for (let i = 0; i < halvings; i++) sum = (sum * sum) >> FIXED;
  return fractionToNumber(sum, one);
}

/** True when ratio ≤ exp(ε)·(1 − 2^-50), exactly (Python's `ratio_within`). */
export function ratioWithin(r: Fraction, epsilon: number): boolean {
  const e = expCorrectlyRounded(epsilon);
  if (!Number.isFinite(e)) return true;
  const [m, d] = doubleToFraction(e);
  const safety = (1n << 50n) - 1n;
  return r.num * d * (1n << 50n) <= m * safety * r.den;
}

export function nextUp(x: number): number {
  if (x === 0) return Number.MIN_VALUE;
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  view.setBigUint64(0, view.getBigUint64(0) + (x > 0 ? 1n : -1n));
  return view.getFloat64(0);
}

/** ln(ratio) rounded up: the smallest double ε (from ln's) that `ratioWithin` certifies (Python's `epsilon_bound_of_ratio`). */
export function epsilonBoundOfRatio(r: Fraction): number {
  if (r.num === r.den) return 0;
  let eps = epsilonOfRatio(r);
  while (!ratioWithin(r, eps)) eps = Math.max(nextUp(eps), eps + 2 ** -53);
  return eps;
}
