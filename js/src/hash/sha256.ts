/**
 * SHA-256 (FIPS 180-4): the spec fingerprint, the numeric tables' digest,
 * PEM's prefix hash and, with `hmacSha256`, the budget's memo keys.
 *
 * Written from FIPS 180-4, sections 4.1.2, 5.3.3 and 6.2. Its constants are
 * computed from their definitions (section 4.2.2: the first 32 bits of the
 * fractional parts of the cube roots of the first 64 primes; 5.3.3: of the
 * square roots of the first 8), exactly, with integer roots, not copied;
 * `test/hash.test.ts` checks them against the published tables and the
 * digests against Node's OpenSSL and the NIST examples.
 */
import { mdBlocks, mdDigest } from "./md.js";

/** ⌊n^(1/k)⌋, by Newton's iteration from above. */
function integerRoot(n: bigint, k: bigint): bigint {
  let x = 1n << BigInt(Math.ceil(n.toString(2).length / Number(k)));
  for (;;) {
    const y = ((k - 1n) * x + n / x ** (k - 1n)) / k;
    if (y >= x) return x;
    x = y;
  }
}

/** The first 32 bits of the fractional part of p^(1/k): ⌊p^(1/k)·2^32⌋ mod 2^32 = ⌊(p·2^(32k))^(1/k)⌋ mod 2^32. */
const fractionBits = (p: number, k: bigint): number => Number(BigInt.asIntN(32, integerRoot(BigInt(p) << (32n * k), k)));

let constants: { readonly k: Int32Array; readonly h0: Int32Array } | undefined;

/** K (64 words, the round constants) and H(0) (8 words, the initial state), computed on first use. */
export function sha256Constants(): { readonly k: Int32Array; readonly h0: Int32Array } {
  if (constants === undefined) {
    const primes: number[] = [];
    for (let n = 2; primes.length < 64; n++) if (primes.every((p) => n % p)) primes.push(n);
    constants = {
      k: Int32Array.from(primes, (p) => fractionBits(p, 3n)),
      h0: Int32Array.from(primes.slice(0, 8), (p) => fractionBits(p, 2n)),
    };
  }
  return constants;
}

const rotr = (x: number, n: number): number => (x >>> n) | (x << (32 - n));

/** The SHA-256 digest of `data` (32 bytes). */
export function sha256(data: Uint8Array): Uint8Array {
  const { k, h0 } = sha256Constants();
  const h = h0.slice();
  const w = new Int32Array(64);
  mdBlocks(data, true, (words) => {
    w.set(words);
    for (let t = 16; t < 64; t++) {
      const a = w[t - 15];
      const b = w[t - 2];
      w[t] = (rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10)) + w[t - 7] + (rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3)) + w[t - 16];
    }
    let [a, b, c, d, e, f, g, hh] = h;
    for (let t = 0; t < 64; t++) {
      const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[t] + w[t]) | 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    [a, b, c, d, e, f, g, hh].forEach((x, i) => (h[i] += x));
  });
  return mdDigest(h, true);
}
