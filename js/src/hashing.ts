/** Bloom filter positions (RAPPOR) and the local-hashing family (OLH, BLH). */
import { md5 } from "./hash/md5.js";
import { bigIntToBytesBE, concatBytes } from "./bytes.js";
import { type Fraction, fraction } from "./fraction.js";
import { mmh3x64128Words } from "./mmh3.js";

/** Bloom positions of `data` (a value's bytes) in `cohort`: h positions in [0, k), possibly repeated. */
export function bloomPositions(
  data: Uint8Array,
  cohort: number,
  numHashes: number,
  numBits: number,
  hash: "mmh3" | "md5",
): number[] {
  if (hash === "md5") {
    // Google's RAPPOR: MD5(cohort as 4 big-endian bytes ‖ value), position i = digest[i] mod k
    const digest = md5(concatBytes(bigIntToBytesBE(BigInt(cohort), 4), data));
    return Array.from({ length: numHashes }, (_, i) => digest[i] % numBits);
  }
  // double hashing (h1 + i·h2) mod k, exactly: no wrapping at 2^64
  const [h1h, h1l, h2h, h2l] = mmh3x64128Words(data, cohort);
  if (numBits <= 2 ** 26) {
    // (H·2^32 + L) mod k from the halves: every product below 2^52, exact in a Number
    const k = numBits;
    const base = 4294967296 % k;
    const r1 = (((h1h % k) * base) % k + (h1l % k)) % k;
    const r2 = (((h2h % k) * base) % k + (h2l % k)) % k;
    return Array.from({ length: numHashes }, (_, i) => (r1 + ((i % k) * r2) % k) % k);
  }
  const h1 = (BigInt(h1h) << 32n) | BigInt(h1l);
  const h2 = (BigInt(h2h) << 32n) | BigInt(h2l);
  const k = BigInt(numBits);
  return Array.from({ length: numHashes }, (_, i) => Number((h1 + BigInt(i) * h2) % k));
}

/** The Mersenne prime P = 2^31 − 1 of the local-hashing family. */
export const LH_PRIME = (1n << 31n) - 1n;
/** Seeds s in [0, (P − 1)·P) name a = ⌊s/P⌋ + 1 ∈ [1, P), b = s mod P. */
export const LH_SEED_SPACE = (LH_PRIME - 1n) * LH_PRIME;

/** (a, b) of the hash function named by `seed`. */
export function lhCoefficients(seed: bigint): [bigint, bigint] {
  return [seed / LH_PRIME + 1n, seed % LH_PRIME];
}

/** Bucket in [0, g) of domain index `index` under hash `seed`: ((a·x + b) mod P)·g // P. */
export function lhBucket(seed: bigint, index: number | bigint, g: number | bigint): number {
  const [a, b] = lhCoefficients(seed);
  return Number((((a * BigInt(index) + b) % LH_PRIME) * BigInt(g)) / LH_PRIME);
}

/** P[H(x) = H(x′)] for x ≠ x′ over the family, exactly (the aggregator's constant). */
export function lhCollisionProbability(g: number | bigint): Fraction {
  const G = BigInt(g);
  const s = LH_PRIME / G;
  const r = LH_PRIME % G;
  const same = r * (s + 1n) * s + (G - r) * s * (s - 1n);
  return fraction(same, LH_PRIME * (LH_PRIME - 1n));
}
