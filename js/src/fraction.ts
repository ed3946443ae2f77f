/** Exact rationals with bigint numerator and denominator (probabilities). */
import { floatText } from "./float.js";

export interface Fraction {
  readonly num: bigint;
  readonly den: bigint; // > 0, gcd(num, den) = 1
}

function gcd(a: bigint, b: bigint): bigint {
  a = a < 0n ? -a : a;
  b = b < 0n ? -b : b;
  while (b) [a, b] = [b, a % b];
  return a;
}

export function lcm(a: bigint, b: bigint): bigint {
  return (a / gcd(a, b)) * b;
}

export function fraction(num: bigint, den: bigint = 1n): Fraction {
  if (den === 0n) throw new RangeError("zero denominator");
  if (den < 0n) [num, den] = [-num, -den];
  const g = gcd(num, den) || 1n;
  return { num: num / g, den: den / g };
}

export function sub(a: Fraction, b: Fraction): Fraction {
  return fraction(a.num * b.den - b.num * a.den, a.den * b.den);
}

export function divInt(a: Fraction, n: bigint): Fraction {
  return fraction(a.num, a.den * n);
}

export const ONE: Fraction = { num: 1n, den: 1n };

/** `"a/b"`, or `"a"` when b = 1 (Python's `str(Fraction)`). */
export function fractionText(x: Fraction): string {
  return x.den === 1n ? x.num.toString() : `${x.num}/${x.den}`;
}

/** Exact value of a decimal or fraction string: `"3/4"`, `"0.39"`, `"1e-3"`, `"-2"`. */
export function parseFraction(text: string): Fraction {
  const t = text.trim();
  const ratio = /^([+-]?\d+)\s*\/\s*([+-]?\d+)$/.exec(t);
  if (ratio) return fraction(BigInt(ratio[1]), BigInt(ratio[2]));
  const dec = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(t);
  if (!dec || (dec[2] === "" && (dec[3] ?? "") === "")) throw new SyntaxError(`not a fraction: ${text}`);
  const [, sign, whole, frac = "", expText = "0"] = dec;
  const exp = Number(expText) - frac.length;
  let num = BigInt(whole + frac || "0");
  if (sign === "-") num = -num;
  return exp >= 0 ? fraction(num * 10n ** BigInt(exp)) : fraction(num, 10n ** BigInt(-exp));
}

/** A float read as the shortest decimal that prints it (0.75 is 3/4), as Python's `Fraction(repr(x))`. */
export function fractionOfFloat(x: number): Fraction {
  if (!Number.isFinite(x)) throw new RangeError(`not a finite number: ${x}`);
  return parseFraction(floatText(x));
}

export function compare(a: Fraction, b: Fraction): number {
  const d = a.num * b.den - b.num * a.den;
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

export function add(a: Fraction, b: Fraction): Fraction {
  return fraction(a.num * b.den + b.num * a.den, a.den * b.den);
}

export function mul(a: Fraction, b: Fraction): Fraction {
  return fraction(a.num * b.num, a.den * b.den);
}

export function div(a: Fraction, b: Fraction): Fraction {
  return fraction(a.num * b.den, a.den * b.num);
}
