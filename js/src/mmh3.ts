/**
 * MurmurHash3 x64-128 (Austin Appleby's public-domain algorithm), in 32-bit
 * halves of the 64-bit words (no BigInt in the loop). Written from the
 * algorithm's description; the output is the canonical 16-byte digest (h1
 * then h2, each little-endian), as Python's `mmh3.hash_bytes`.
 */

// 64-bit values are (hi, lo) pairs of uint32; the helpers return their result in RH, RL (no allocation).
let RH = 0;
let RL = 0;

/** Full 64-bit product of two uint32, into RH, RL. */
function mul32(a: number, b: number): void {
  const a0 = a & 0xffff;
  const a1 = a >>> 16;
  const b0 = b & 0xffff;
  const b1 = b >>> 16;
  const mid = a0 * b1 + a1 * b0; // < 2^33
  const low = a0 * b0 + (mid % 65536) * 65536; // < 2^33
  RL = low >>> 0;
  RH = (a1 * b1 + Math.floor(mid / 65536) + Math.floor(low / 4294967296)) >>> 0;
}

/** (aH, aL)·(bH, bL) mod 2^64, into RH, RL. */
function mul64(aH: number, aL: number, bH: number, bL: number): void {
  mul32(aL, bL);
  RH = (RH + Math.imul(aH, bL) + Math.imul(aL, bH)) >>> 0;
}

/** (aH, aL) + (bH, bL) mod 2^64, into RH, RL. */
function add64(aH: number, aL: number, bH: number, bL: number): void {
  const low = aL + bL;
  RL = low >>> 0;
  RH = (aH + bH + (low > 0xffffffff ? 1 : 0)) >>> 0;
}

/** Rotate left by r, 0 < r < 32, into RH, RL. */
function rotl64(h: number, l: number, r: number): void {
  RH = ((h << r) | (l >>> (32 - r))) >>> 0;
  RL = ((l << r) | (h >>> (32 - r))) >>> 0;
}

const C1H = 0x87c37b91;
const C1L = 0x114253d5;
const C2H = 0x4cf5ad43;
const C2L = 0x2745937f;

/** fmix64, into RH, RL. */
function fmix(h: number, l: number): void {
  l = (l ^ (h >>> 1)) >>> 0; // k ^= k >> 33
  mul64(h, l, 0xff51afd7, 0xed558ccd);
  h = RH;
  l = (RL ^ (h >>> 1)) >>> 0;
  mul64(h, l, 0xc4ceb9fe, 0x1a85ec53);
  h = RH;
  RL = (RL ^ (h >>> 1)) >>> 0;
}

/** Little-endian uint32 of data[start..end) (missing bytes are 0: the tail). */
function word32(data: Uint8Array, start: number, end: number): number {
  let x = 0;
  for (let i = Math.min(end, data.length) - 1; i >= start; i--) x = x * 256 + data[i];
  return x;
}

/** [h1 hi, h1 lo, h2 hi, h2 lo] of MurmurHash3 x64-128 with a 32-bit unsigned seed. */
export function mmh3x64128Words(data: Uint8Array, seed: number): [number, number, number, number] {
  let h1h = 0;
  let h1l = seed >>> 0;
  let h2h = 0;
  let h2l = h1l;
  const blocks = Math.floor(data.length / 16);
  for (let b = 0; b <= blocks; b++) {
    const i = 16 * b;
    const end = b < blocks ? i + 16 : data.length; // the last round: the tail, zero-padded
    const k1l = word32(data, i, Math.min(end, i + 4));
    const k1h = word32(data, i + 4, Math.min(end, i + 8));
    const k2l = word32(data, i + 8, Math.min(end, i + 12));
    const k2h = word32(data, i + 12, end);
    // k2 first in the tail (as the reference), k1 first in blocks: the mixes of h1 and h2 are independent there
    mul64(k2h, k2l, C2H, C2L);
    rotl64(RL, RH, 1); // rotl 33 = swap halves, rotl 1
    mul64(RH, RL, C1H, C1L);
    const m2h = RH;
    const m2l = RL;
    mul64(k1h, k1l, C1H, C1L);
    rotl64(RH, RL, 31);
    mul64(RH, RL, C2H, C2L);
    h1h = (h1h ^ RH) >>> 0;
    h1l = (h1l ^ RL) >>> 0;
    if (b === blocks) {
      h2h = (h2h ^ m2h) >>> 0;
      h2l = (h2l ^ m2l) >>> 0;
      break;
    }
    // h1 = (rotl(h1, 27) + h2)·5 + 0x52dce729
    rotl64(h1h, h1l, 27);
    add64(RH, RL, h2h, h2l);
    mul64(RH, RL, 0, 5);
    add64(RH, RL, 0, 0x52dce729);
    h1h = RH;
    h1l = RL;
    h2h = (h2h ^ m2h) >>> 0;
    h2l = (h2l ^ m2l) >>> 0;
    // h2 = (rotl(h2, 31) + h1)·5 + 0x38495ab5
    rotl64(h2h, h2l, 31);
    add64(RH, RL, h1h, h1l);
    mul64(RH, RL, 0, 5);
    add64(RH, RL, 0, 0x38495ab5);
    h2h = RH;
    h2l = RL;
  }
  h1l = (h1l ^ data.length) >>> 0; // length < 2^32
  h2l = (h2l ^ data.length) >>> 0;
  add64(h1h, h1l, h2h, h2l);
  h1h = RH;
  h1l = RL;
  add64(h2h, h2l, h1h, h1l);
  h2h = RH;
  h2l = RL;
  fmix(h1h, h1l);
  h1h = RH;
  h1l = RL;
  fmix(h2h, h2l);
  h2h = RH;
  h2l = RL;
  add64(h1h, h1l, h2h, h2l);
  h1h = RH;
  h1l = RL;
  add64(h2h, h2l, h1h, h1l);
  return [h1h, h1l, RH, RL];
}

const big = (h: number, l: number): bigint => (BigInt(h) << 32n) | BigInt(l);

/** [h1, h2] of MurmurHash3 x64-128 with a 32-bit unsigned seed. */
export function mmh3x64128(data: Uint8Array, seed: number): [bigint, bigint] {
  const [a, b, c, d] = mmh3x64128Words(data, seed);
  return [big(a, b), big(c, d)];
}

/** The canonical 16-byte digest: h1 then h2, each little-endian. */
export function mmh3Digest(data: Uint8Array, seed: number): Uint8Array {
  const out = new Uint8Array(16);
  const view = new DataView(out.buffer);
  const [a, b, c, d] = mmh3x64128Words(data, seed);
  view.setUint32(0, b, true);
  view.setUint32(4, a, true);
  view.setUint32(8, d, true);
  view.setUint32(12, c, true);
  return out;
}
