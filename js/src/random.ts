/**
 * Exact sampling from a byte source. Every coin of the client comes from a
 * `ByteSource`: the platform CSPRNG (`crypto.getRandomValues`) in use, fixed
 * bytes in tests, or a keyed SHAKE-256 stream for RAPPOR's permanent response.
 * Bytes are consumed exactly as the Python client consumes them.
 */
import { shake256 } from "@noble/hashes/sha3.js";
import { bigIntToBytesBE, bitLength, bytesToBigIntBE, bytesToBigIntLE, concatBytes } from "./bytes.js";
import type { Fraction } from "./fraction.js";

/** `read(n)` returns the next n random bytes. */
export interface ByteSource {
  read(n: number): Uint8Array;
}

/** The platform's CSPRNG (Web Crypto `getRandomValues`, in browsers and Node.js ≥ 19). */
export const cryptoSource: ByteSource = {
  read(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i += 65536) crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)));
    return out;
  },
};

/** Fixed bytes, read in order (tests); records the size of every read; throws when used up. */
export class FixedSource implements ByteSource {
  readonly reads: number[] = [];
  private pos = 0;

  constructor(private readonly bytes: Uint8Array) {}

  read(n: number): Uint8Array {
    if (this.pos + n > this.bytes.length) throw new RangeError("fixed byte source used up");
    this.reads.push(n);
    this.pos += n;
    return this.bytes.slice(this.pos - n, this.pos);
  }

  /** Bytes not read yet. */
  get remaining(): number {
    return this.bytes.length - this.pos;
  }
}

/** The PRF input: each part prefixed by its length as 4 big-endian bytes. */
export function prfInput(...parts: Uint8Array[]): Uint8Array {
  return concatBytes(...parts.flatMap((p) => [bigIntToBytesBE(BigInt(p.length), 4), p]));
}

/** A keyed pseudorandom stream: SHAKE-256 of `prfInput(...parts)`, read sequentially. */
export class PRFStream implements ByteSource {
  private readonly xof;

  constructor(...parts: Uint8Array[]) {
    this.xof = shake256.create().update(prfInput(...parts));
  }

  read(n: number): Uint8Array {
    return this.xof.xof(n);
  }
}

/** Uniform integer in [0, n) by rejection, as Python's `secrets.randbelow`: k = bit length of n bits per try. */
export function randbelow(n: bigint, source: ByteSource): bigint {
  if (n <= 0n) throw new RangeError("randbelow needs n > 0");
  const k = bitLength(n);
  const nbytes = Math.ceil(k / 8);
  const shift = BigInt(8 * nbytes - k);
  for (;;) {
    const r = bytesToBigIntBE(source.read(nbytes)) >> shift; // the top k bits
    if (r < n) return r;
  }
}

/** k uniform bits (one read of ⌈k/8⌉ bytes, big-endian, top k bits kept). */
export function randbits(k: number, source: ByteSource): bigint {
  const nbytes = Math.ceil(k / 8);
  return bytesToBigIntBE(source.read(nbytes)) >> BigInt(8 * nbytes - k);
}

/** A lane group: the lanes of `mask` are 1 with `probability`. */
export interface LaneGroup {
  mask: bigint;
  probability: Fraction;
}

/** Planes are read in blocks of this many (as Python does); the unused rest of a block is dropped. */
const PLANES_PER_BLOCK = 12;

/**
 * `width` independent exact coins, lane i (bit i of the result) with its
 * group's probability. Each lane compares a uniform real U (one binary digit
 * per round, from the source) with its probability t, digit by digit; the
 * first differing digit decides U < t.
 */
export function sampleLanes(width: number, groups: readonly LaneGroup[], source: ByteSource): bigint {
  const full = (1n << BigInt(width)) - 1n;
  const nbytes = Math.ceil(width / 8);
  // binary expansion state of each probability: t's remaining part num/den
  const state = groups.filter((g) => g.mask !== 0n).map((g) => ({ mask: g.mask, num: g.probability.num, den: g.probability.den }));
  for (const s of state) if (s.num < 0n || s.num > s.den) throw new RangeError("probability outside [0, 1]");
  let undecided = full;
  let result = 0n;
  let buffer: Uint8Array = new Uint8Array(0);
  let offset = 0;
  while (undecided) {
    let threshold = 0n;
    for (const s of state) {
      s.num *= 2n; // next binary digit of num/den (t = 1 gives 1 forever)
      if (s.num >= s.den) {
        s.num -= s.den;
        threshold |= s.mask;
      }
    }
    if (offset === buffer.length) {
      buffer = source.read(nbytes * PLANES_PER_BLOCK);
      offset = 0;
    }
    const plane = bytesToBigIntLE(buffer.subarray(offset, offset + nbytes)) & full;
    offset += nbytes;
    result |= undecided & threshold & ~plane; // U's digit 0 where t's is 1: U < t, the coin is 1
    undecided &= ~(plane ^ threshold); // decided wherever the digits differ
  }
  return result;
}
