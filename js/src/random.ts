/**
 * Exact sampling from a byte source. Every coin of the client comes from a
 * `ByteSource`: the platform CSPRNG (`crypto.getRandomValues`) in use, fixed
 * bytes in tests, or a keyed SHAKE-256 stream for RAPPOR's permanent response.
 * Bytes are consumed exactly as the Python client consumes them.
 */
import { bigIntToBytesBE, bitLength, bytesToBigIntBE, concatBytes } from "./bytes.js";
import type { Fraction } from "./fraction.js";
import { shake256 } from "./hash/shake256.js";

/** `read(n)` returns the next n random bytes. */
export interface ByteSource {
  read(n: number): Uint8Array;
}

/** `getRandomValues` for any length (it fills at most 65,536 bytes a call). */
function fillRandom(out: Uint8Array<ArrayBuffer>): void {
  for (let i = 0; i < out.length; i += 65536) crypto.getRandomValues(out.subarray(i, Math.min(out.length, i + 65536)));
}

/**
 * A CSPRNG byte source that asks the platform for `blockSize` bytes at a time
 * and serves them in order (a `getRandomValues` call costs far more than the
 * few bytes a report needs). Every byte is served at most once: the position
 * only moves forward, a served byte is zeroed in the pool, and the unserved
 * rest of a block is zeroed and dropped (never served) when a read needs more
 * than it holds. Reads longer than a block bypass the pool. What each `read(n)`
 * returns is a fresh copy, so a caller may keep it (a client secret).
 */
export class PooledSource implements ByteSource {
  private readonly pool: Uint8Array<ArrayBuffer>;
  private pos: number;

  constructor(
    readonly blockSize = 16384,
    private readonly fill: (out: Uint8Array<ArrayBuffer>) => void = fillRandom,
  ) {
    if (!Number.isInteger(blockSize) || blockSize < 1) throw new RangeError("blockSize must be an integer >= 1");
    this.pool = new Uint8Array(blockSize);
    this.pos = blockSize; // empty: the first read fills it
  }

  read(n: number): Uint8Array {
    if (n > this.pool.length) {
      const out = new Uint8Array(n);
      this.fill(out);
      return out;
    }
    if (this.pos + n > this.pool.length) {
      this.pool.fill(0, this.pos); // the unserved rest is dropped, never served
      this.fill(this.pool);
      this.pos = 0;
    }
    const start = this.pos;
    this.pos += n;
    const out = this.pool.slice(start, this.pos);
    this.pool.fill(0, start, this.pos);
    return out;
  }
}

/** The platform's CSPRNG (Web Crypto `getRandomValues`, in browsers and Node.js ≥ 19), pooled (`PooledSource`). */
export const cryptoSource: ByteSource = new PooledSource();

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

/**
 * A SHAKE-256 implementation: `shake(input)` is a byte source reading the
 * XOF output of `input` in order. `jsShake256` (pure JavaScript) runs
 * everywhere; `nativeShake256` of `ldp-client/node` (OpenSSL) is faster in
 * Node. Both give the same bytes (the vectors check each).
 */
export type Shake256 = (input: Uint8Array) => ByteSource;

/** SHAKE-256 in pure JavaScript (`hash/shake256.ts`, written from FIPS 202): every runtime, the browser's. */
export const jsShake256: Shake256 = shake256;

/**
 * The former name of `jsShake256` (the package's SHAKE-256 came from `@noble/hashes`).
 *
 * @deprecated use `jsShake256`: the same function.
 */
export const nobleShake256: Shake256 = jsShake256;

/** What `createHash` of `node:crypto` needs to be here (its SHAKE-256 with an output length). */
export type CreateHash = (algorithm: "shake256", options: { outputLength: number }) => {
  update(data: Uint8Array): { digest(): Uint8Array };
};

/**
 * SHAKE-256 output read in order from a `createHash` (Node's OpenSSL):
 * recomputed longer (doubled) when a read needs more; SHAKE's output of
 * length L is a prefix of every longer output, so the bytes are the stream's.
 */
class HashShakeStream implements ByteSource {
  private out: Uint8Array = new Uint8Array(0);
  private pos = 0;

  constructor(
    private readonly createHash: CreateHash,
    private readonly input: Uint8Array,
  ) {}

  read(n: number): Uint8Array {
    if (this.pos + n > this.out.length) {
      const outputLength = Math.max(this.pos + n, 2 * this.out.length);
      this.out = this.createHash("shake256", { outputLength }).update(this.input).digest();
    }
    // a plain Uint8Array view of the digest's bytes (no copy, nor a Buffer made a read): the digest is this
    // stream's own, never written after
    const chunk = new Uint8Array(this.out.buffer, this.out.byteOffset + this.pos, n);
    this.pos += n;
    return chunk;
  }
}

/** The SHAKE-256 of a `createHash` (`node:crypto`'s): the same bytes as `jsShake256`. */
export function hashShake256(createHash: CreateHash): Shake256 {
  return (input) => new HashShakeStream(createHash, input);
}

let runtimeShake: Shake256 | undefined;

/**
 * The SHAKE-256 of this runtime's `node:crypto` when it has one (Node ≥
 * 20.16 and 22.3, through `process.getBuiltinModule`: no import of a Node
 * module, so a browser bundle holds no Node code), else null. Found once.
 */
export function runtimeHashShake256(): Shake256 | null {
  if (runtimeShake === undefined) {
    runtimeShake = jsShake256;
    try {
      const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
      const nodeCrypto = proc?.getBuiltinModule?.("node:crypto") as { createHash?: CreateHash } | undefined;
      const createHash = nodeCrypto?.createHash;
      // OpenSSL may be built without SHAKE: try it once against a known output (SHAKE-256 of nothing begins 0x46)
      if (createHash && createHash("shake256", { outputLength: 1 }).update(new Uint8Array(0)).digest()[0] === 0x46) {
        runtimeShake = hashShake256(createHash);
      }
    } catch {
      // no usable node:crypto here: the pure JavaScript SHAKE-256
    }
  }
  return runtimeShake === jsShake256 ? null : runtimeShake;
}

/**
 * The default SHAKE-256 of every keyed stream (RAPPOR's permanent response,
 * the memoized mechanisms' PRFs): Node's OpenSSL where the runtime has it
 * (several times faster), else `jsShake256`. The same bytes either way.
 */
export const defaultShake256: Shake256 = (input) => (runtimeHashShake256() ?? jsShake256)(input);

/** A keyed pseudorandom stream: SHAKE-256 of `prfInput(...parts)`, read sequentially. */
export class PRFStream implements ByteSource {
  private readonly stream: ByteSource;

  constructor(...parts: Uint8Array[]) {
    this.stream = defaultShake256(prfInput(...parts));
  }

  read(n: number): Uint8Array {
    return this.stream.read(n);
  }
}

/** Top `k` bits of the first `nbytes` bytes of `bytes`, big-endian, as a non-negative Number (nbytes ≤ 6). */
function topBitsNumber(bytes: Uint8Array, nbytes: number, k: number): number {
  let x = 0;
  for (let i = 0; i < nbytes; i++) x = x * 256 + bytes[i];
  return Math.floor(x / 2 ** (8 * nbytes - k)); // exact: x < 2^56 is an integer Number, the divisor a power of two
}

/**
 * Uniform integers in [0, n) by rejection, as Python's `secrets.randbelow`:
 * each try reads ⌈k/8⌉ bytes (k = bit length of n), keeps the top k bits
 * big-endian, and accepts them when below n. The sizes are computed once.
 */
export class UniformBelow {
  private readonly k: number;
  private readonly nbytes: number;
  private readonly shift: bigint;
  private readonly small: number; // n as a Number when k ≤ 48 (the Number path), else 0

  constructor(readonly n: bigint) {
    if (n <= 0n) throw new RangeError("randbelow needs n > 0");
    this.k = bitLength(n);
    this.nbytes = Math.ceil(this.k / 8);
    this.shift = BigInt(8 * this.nbytes - this.k);
    this.small = this.k <= 48 ? Number(n) : 0;
  }

  /** One draw as a Number (only when n ≤ 2^48). */
  drawNumber(source: ByteSource): number {
    if (this.small === 0) throw new RangeError("drawNumber needs n < 2^48");
    for (;;) {
      const r = topBitsNumber(source.read(this.nbytes), this.nbytes, this.k);
      if (r < this.small) return r;
    }
  }

  draw(source: ByteSource): bigint {
    if (this.small !== 0) return BigInt(this.drawNumber(source));
    for (;;) {
      const r = bytesToBigIntBE(source.read(this.nbytes)) >> this.shift; // the top k bits
      if (r < this.n) return r;
    }
  }
}

/** Uniform integer in [0, n) by rejection, as Python's `secrets.randbelow`: k = bit length of n bits per try. */
export function randbelow(n: bigint, source: ByteSource): bigint {
  return new UniformBelow(n).draw(source);
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

/** A lane group with its mask as 32-bit words (lane i is bit i % 32 of word ⌊i/32⌋). */
export interface WordLaneGroup {
  mask: Uint32Array;
  probability: Fraction;
}

/** Planes are read in blocks of this many (as Python does); the unused rest of a block is dropped. */
const PLANES_PER_BLOCK = 12;

/**
 * The binary expansion of a probability num/den (not necessarily reduced): each call gives the next digit
 * (t = 1 gives 1 forever). Internal: shared with `reportbits.ts`, whose `useSamplers` swaps in
 * `reportbits-fast.ts`'s (the same digits, on Numbers for small denominators) with `useKeyedSamplers`.
 */
export let binaryDigits = ({ num, den }: Fraction): (() => boolean) => {
  if (!(0n <= num && num <= den && den > 0n)) throw new RangeError(`probability ${num}/${den} outside [0, 1]`);
  return () => (num *= 2n) >= den && ((num -= den), true);
};

/** Internal: installs `digits` as `binaryDigits` and `lanes` as `sampleLaneWords` (`useSamplers` of `reportbits.ts`). */
export function useKeyedSamplers(digits: typeof binaryDigits, lanes: typeof sampleLaneWords): void {
  binaryDigits = digits;
  sampleLaneWords = lanes;
}

/** Every lane of `width` set, as 32-bit words. */
export function fullWords(width: number): Uint32Array {
  const out = new Uint32Array((width + 31) >>> 5).fill(0xffffffff);
  if (width % 32) out[out.length - 1] = 2 ** (width % 32) - 1;
  return out;
}

/**
 * `width` independent exact coins, lane i with its group's probability, as
 * 32-bit words. Each lane compares a uniform real U (one binary digit per
 * round: one plane of ⌈width/8⌉ bytes, little-endian, read from the source in
 * blocks of 12 planes) with its probability t, digit by digit; the first
 * differing digit decides U < t. Exactly the bytes and results of Python's
 * bit-sliced sampler. Since the per-report samplers (`reportbits.ts`), the
 * keyed PRF streams' sampler only (RAPPOR's permanent response, memoized bits).
 * The main and node entries swap in `reportbits-fast.ts`'s (the same bytes and
 * lanes) with `useSamplers`.
 */
export let sampleLaneWords = (width: number, groups: readonly WordLaneGroup[], source: ByteSource): Uint32Array => {
  const nwords = (width + 31) >>> 5;
  const nbytes = (width + 7) >>> 3;
  const digits = groups.map((g) => binaryDigits(g.probability)); // one binary digit of each probability a round
  const on: boolean[] = [];
  const undecided = fullWords(width); // lanes past width: never undecided, never set
  const result = new Uint32Array(nwords);
  const plane = new Uint8Array(4 * nwords); // this round's plane, zero-padded to whole words
  const view = new DataView(plane.buffer);
  let buffer: Uint8Array = new Uint8Array(0);
  let offset = 0;
  for (let open = width > 0; open; offset += nbytes) {
    for (let j = 0; j < digits.length; j++) on[j] = digits[j]();
    if (offset === buffer.length) {
      buffer = source.read(nbytes * PLANES_PER_BLOCK);
      offset = 0;
    }
    plane.set(buffer.subarray(offset, offset + nbytes));
    open = false;
    for (let w = 0; w < nwords; w++) {
      let t = 0; // the lanes whose probability has digit 1 this round
      for (let j = 0; j < digits.length; j++) if (on[j]) t |= groups[j].mask[w];
      const u = undecided[w];
      const p = view.getUint32(4 * w, true); // U's digits, little-endian
      result[w] |= u & t & ~p; // U's digit 0 where t's is 1: U < t, the coin is 1
      if ((undecided[w] = u & ~(p ^ t))) open = true; // decided wherever the digits differ
    }
  }
  return result;
};

/** Lanes as a bigint ↔ 32-bit words. */
export function lanesToWords(lanes: bigint, width: number): Uint32Array {
  const out = new Uint32Array((width + 31) >>> 5);
  for (let w = 0; w < out.length; w++) out[w] = Number((lanes >> BigInt(32 * w)) & 0xffffffffn);
  return out;
}

export function wordsToLanes(words: Uint32Array): bigint {
  let x = 0n;
  for (let w = words.length - 1; w >= 0; w--) x = (x << 32n) | BigInt(words[w]);
  return x;
}

/** `sampleLaneWords` with bigint masks and result (bit i = lane i). */
export function sampleLanes(width: number, groups: readonly LaneGroup[], source: ByteSource): bigint {
  const full = (1n << BigInt(width)) - 1n;
  const wordGroups = groups.map((g) => ({ mask: lanesToWords(g.mask & full, width), probability: g.probability }));
  return wordsToLanes(sampleLaneWords(width, wordGroups, source));
}
