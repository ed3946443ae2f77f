/**
 * MurmurHash3 x64-128 (Austin Appleby's public-domain algorithm), in BigInt
 * 64-bit arithmetic. Written from the algorithm's description; the output is
 * the canonical 16-byte digest (h1 then h2, each little-endian), as
 * Python's `mmh3.hash_bytes`.
 */

const MASK = (1n << 64n) - 1n;
const C1 = 0x87c37b91114253d5n;
const C2 = 0x4cf5ad432745937fn;

const mul = (a: bigint, b: bigint): bigint => (a * b) & MASK;
const add = (a: bigint, b: bigint): bigint => (a + b) & MASK;
const rotl = (x: bigint, r: bigint): bigint => ((x << r) | (x >> (64n - r))) & MASK;

function fmix(k: bigint): bigint {
  k ^= k >> 33n;
  k = mul(k, 0xff51afd7ed558ccdn);
  k ^= k >> 33n;
  k = mul(k, 0xc4ceb9fe1a85ec53n);
  return k ^ (k >> 33n);
}

/** Little-endian 64-bit word of `data` from `start` (missing bytes are 0: the tail). */
function word(data: Uint8Array, start: number, end: number): bigint {
  let k = 0n;
  for (let i = Math.min(end, data.length) - 1; i >= start; i--) k = (k << 8n) | BigInt(data[i]);
  return k;
}

const mixK1 = (k1: bigint): bigint => mul(rotl(mul(k1, C1), 31n), C2);
const mixK2 = (k2: bigint): bigint => mul(rotl(mul(k2, C2), 33n), C1);

/** [h1, h2] of MurmurHash3 x64-128 with a 32-bit unsigned seed. */
export function mmh3x64128(data: Uint8Array, seed: number): [bigint, bigint] {
  let h1 = BigInt(seed >>> 0);
  let h2 = h1;
  const blocks = Math.floor(data.length / 16);
  for (let b = 0; b < blocks; b++) {
    h1 ^= mixK1(word(data, 16 * b, 16 * b + 8));
    h1 = add(mul(add(rotl(h1, 27n), h2), 5n), 0x52dce729n);
    h2 ^= mixK2(word(data, 16 * b + 8, 16 * b + 16));
    h2 = add(mul(add(rotl(h2, 31n), h1), 5n), 0x38495ab5n);
  }
  const tail = 16 * blocks;
  const k2 = word(data, tail + 8, tail + 16);
  const k1 = word(data, tail, tail + 8);
  if (k2) h2 ^= mixK2(k2);
  if (k1) h1 ^= mixK1(k1);
  const len = BigInt(data.length);
  h1 ^= len;
  h2 ^= len;
  h1 = add(h1, h2);
  h2 = add(h2, h1);
  h1 = fmix(h1);
  h2 = fmix(h2);
  h1 = add(h1, h2);
  h2 = add(h2, h1);
  return [h1, h2];
}

/** The canonical 16-byte digest: h1 then h2, each little-endian. */
export function mmh3Digest(data: Uint8Array, seed: number): Uint8Array {
  const out = new Uint8Array(16);
  mmh3x64128(data, seed).forEach((h, half) => {
    for (let i = 0; i < 8; i++) out[8 * half + i] = Number((h >> BigInt(8 * i)) & 0xffn);
  });
  return out;
}
