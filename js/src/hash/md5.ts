/**
 * MD5 (RFC 1321): the Bloom positions of Google's RAPPOR (`hash: "md5"`),
 * nothing else (it is not collision resistant; here it only spreads values
 * over the filter as Google's client does).
 *
 * Written from RFC 1321, section 3.4. Its table T[i] = ⌊2^32·|sin(i)|⌋ (i in
 * radians) is computed exactly, from the sine's series in fixed point with
 * BigInts (not the engine's `Math.sin`, which ECMAScript lets vary by an
 * ulp), not copied; `test/hash.test.ts` checks it against the RFC's table
 * and the digests against Node's OpenSSL and the RFC's test suite.
 */
import { mdBlocks, mdDigest } from "./md.js";

/** Fixed-point bits of the series: its terms reach 2^92 (64^n/n!) and each adds at most one unit of error. */
const FIXED = 320n;

/** ⌊2^32·|sin(x)|⌋ for a small integer x: Σ (−1)^n x^(2n+1)/(2n+1)!, truncated terms, error far below 2^−200. */
function sineBits(x: number): number {
  const x2 = BigInt(x * x);
  let term = BigInt(x) << FIXED;
  let sum = term;
  for (let n = 1n; term; n++) {
    term = (-term * x2) / (2n * n * (2n * n + 1n));
    sum += term;
  }
  return Number(BigInt.asIntN(32, (sum < 0n ? -sum : sum) >> (FIXED - 32n)));
}

let T: Int32Array | undefined;

/** RFC 1321's table T[1 … 64] (at 0 … 63), computed on first use. */
export function md5Table(): Int32Array {
  T ??= Int32Array.from({ length: 64 }, (_, i) => sineBits(i + 1));
  return T;
}

/** Per-step left rotations: round r's four, repeated four times. */
const SHIFTS = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];

/** The MD5 digest of `data` (16 bytes). */
export function md5(data: Uint8Array): Uint8Array {
  const t = md5Table();
  const h = Int32Array.of(0x67452301, 0xefcdab89 | 0, 0x98badcfe | 0, 0x10325476);
  mdBlocks(data, false, (x) => {
    let [a, b, c, d] = h;
    for (let i = 0; i < 64; i++) {
      const round = i >> 4;
      const f = round === 0 ? (b & c) | (~b & d) : round === 1 ? (b & d) | (c & ~d) : round === 2 ? b ^ c ^ d : c ^ (b | ~d);
      const k = round === 0 ? i : round === 1 ? (5 * i + 1) & 15 : round === 2 ? (3 * i + 5) & 15 : (7 * i) & 15;
      const s = SHIFTS[4 * round + (i & 3)];
      const sum = (a + f + t[i] + x[k]) | 0;
      a = d;
      d = c;
      c = b;
      b = (b + ((sum << s) | (sum >>> (32 - s)))) | 0;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
  });
  return mdDigest(h, false);
}
