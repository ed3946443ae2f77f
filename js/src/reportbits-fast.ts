/**
 * The faster per-report samplers of the main entry and `ldp-client/node`:
 * the same bits and outcomes as the plain ones of `reportbits.ts`, which
 * `ldp-client/frequency` keeps (its bundle has a 15 kB budget; this module
 * is what it leaves out). `installFastSamplers()` swaps them in with
 * `useSamplers`; the entries call it when loaded.
 *
 * - `KnuthYao.prototype.sample`: when the reader holds the next 8 bits
 *   already (a pooled source), a table of the walk's end (or its node) for
 *   each 8-bit prefix, made once per table, takes the first 8 levels at once
 *   and serves only the bits the walk reads; a walk past 8 levels goes on
 *   from its node. A fixed one-byte-a-read stream is still read bit by bit.
 * - `runLaneWords`: a run's likelier lanes in a word at once (one block when
 *   consecutive, else cleared lowest first), the run walks' prefix tables
 *   read in place on local copies of the reader's state.
 * - `uniformBig` from 2^51: 1/n's leading zero levels read as one integer
 *   (whole bytes from the reader's buffer when aligned), then the walk in
 *   bigints.
 * - `unrankSubset`'s unranking: steps decided in doubles while certain,
 *   pending factors applied exactly several at a time, exact comparisons near
 *   a tie; below 2^1000 the rank's top is Number(rank), no shift a member.
 * - `binaryDigits` (`random.ts`) on Numbers for denominators up to 2^52.
 * - `sampleLaneWords` (`random.ts`, the keyed streams' lanes: RAPPOR's
 *   permanent response, a report): each probability's digits kept, the
 *   planes' words read in place.
 */
import { type BitReader, KnuthYao, RUN_CAP, type Samplers, runPlan, uniform, useSamplers } from "./reportbits.js";
import type { Fraction } from "./fraction.js";
import { type ByteSource, type WordLaneGroup, binaryDigits as liveBinaryDigits, fullWords } from "./random.js";

/** The plain walk (`reportbits.ts`), captured before any swap: it draws what the prefix tables do not. */
const plainSample = KnuthYao.prototype.sample;

/** The plain `binaryDigits` (an import is a live binding: this is its value before any swap). */
const plainBinaryDigits = liveBinaryDigits;

/** Below this many outcomes `uniform` draws (the walk on Numbers). */
const NUMBER_OUTCOMES = 2 ** 51;

/**
 * The next 8 bits of `reader` (the first most significant) without serving them, or 256 when they are not all
 * read yet: a walk then reads bit by bit, so no byte is read before a bit of it is needed.
 */
function peek(reader: BitReader): number {
  if (reader.left === 8) return reader.byte;
  return reader.offset < reader.buffer.length ? (((reader.byte << 8) | reader.buffer[reader.offset]) >> reader.left) & 255 : 256;
}

/** Serves `n` ≤ 8 bits that `peek` showed (the byte they reach into served and zeroed as `bit` does). */
function skip(reader: BitReader, n: number): void {
  if (n > reader.left) {
    reader.byte = reader.buffer[reader.offset];
    reader.buffer[reader.offset++] = 0;
    reader.left += 8;
  }
  reader.left -= n;
}

/**
 * The next `count` bits as one integer, the first most significant (what `count` calls of `bit` serve): a
 * whole byte at a time from the reader's buffer while it holds one and 8 or more bits are wanted from a byte
 * boundary (served and zeroed as `bit` does), else bit by bit.
 */
function take(reader: BitReader, count: number): bigint {
  let out = 0n;
  let acc = 0;
  let got = 0;
  while (count) {
    if (!reader.left && count >= 8 && reader.offset < reader.buffer.length) {
      reader.byte = reader.buffer[reader.offset];
      reader.buffer[reader.offset++] = 0;
      acc = 256 * acc + reader.byte;
      got += 8;
      count -= 8;
    } else {
      acc = 2 * acc + reader.bit();
      got++;
      count--;
    }
    if (got >= 45) {
      out = (out << BigInt(got)) | BigInt(acc);
      acc = got = 0;
    }
  }
  return (out << BigInt(got)) | BigInt(acc);
}

/**
 * The walk's first 8 levels for each 8-bit prefix: group·2^12 + member·2^4 + bits read when it ends there (0
 * for a group from 2^19: the plain walk then), else −(d + 1) for its node d after level 7 (d < 2^8); entry 256
 * (no prefix read yet) 0.
 */
function prefixes(table: KnuthYao): Int32Array {
  const ends = new Int32Array(257);
  for (let prefix = 0; prefix < 256; prefix++) {
    let d = 0;
    let entry = 0;
    for (let depth = 0; depth < 8; depth++) {
      d = 2 * d + ((prefix >> (7 - depth)) & 1);
      const level = table.levels[depth] ?? table.level(depth);
      if (d < level.total) {
        let i = 0;
        while (d >= level.counts[i]) d -= level.counts[i++];
        const group = level.groups[i];
        entry = group < 2 ** 19 ? group * 4096 + d * 16 + depth + 1 : 0; // d < 2^8: the member
        break;
      }
      d -= level.total;
      entry = -(d + 1);
    }
    ends[prefix] = entry;
  }
  return ends;
}

/**
 * `KnuthYao.prototype.sample`: the first 8 levels from the prefix table when the reader holds 8 bits, then the
 * walk on from the node they reach; else the plain walk.
 */
function sample(this: KnuthYao, reader: BitReader): number {
  if (this.certain >= 0) return plainSample.call(this, reader); // one outcome: nothing read
  const entry = (this.prefixTable ??= prefixes(this))[peek(reader)];
  if (entry > 0) {
    skip(reader, entry & 15);
    this.member = (entry >> 4) & 255;
    return entry >>> 12;
  }
  if (entry === 0) return plainSample.call(this, reader);
  skip(reader, 8);
  return plainSample.call(this, reader, -entry - 1, 8); // the plain walk on from node d after level 7
}

/**
 * `runLaneWords` (its spec in `reportbits.ts`): a run's likelier lanes of a word at once (one block when
 * consecutive, else cleared lowest first), each word's lanes of 1 gathered before one write, and the run
 * table's walk read from its prefix table in place, on local copies of the reader's state (`peek` and `skip`
 * inlined; the state is written back before any other walk reads the reader and at the end).
 */
function runLaneWords(width: number, groups: readonly WordLaneGroup[], reader: BitReader): Uint32Array {
  const nwords = (width + 31) >>> 5;
  const out = new Uint32Array(nwords);
  let { buffer, offset, byte, left } = reader;
  for (const { mask, probability: t } of groups) {
    const [table, rarerIsOne] = runPlan(t);
    const certain = table.certain; // t = 0 or 1: every walk is RUN_CAP likelier lanes, nothing read
    const ends = certain < 0 ? (table.prefixTable ??= prefixes(table)) : null;
    let likelier = 0; // lanes of the likelier symbol left in the current run
    let rare = false; // the current run ends with a lane of the rarer symbol
    for (let w = 0; w < nwords; w++) {
      let ones = 0; // this word's lanes of 1
      for (let m = mask[w] | 0; m; ) {
        if (!likelier && !rare) {
          const prefix = left === 8 ? byte : offset < buffer.length ? (((byte << 8) | buffer[offset]) >> left) & 255 : 256;
          const entry = ends === null ? 0 : ends[prefix];
          if (entry > 0) {
            // the walk ends within the 8 bits: serve the bits it reads (the next byte served, zeroed, when reached)
            const bits = entry & 15;
            if (bits > left) {
              byte = buffer[offset];
              buffer[offset++] = 0;
              left += 8;
            }
            left -= bits;
            likelier = entry >>> 12;
          } else if (ends === null) likelier = certain;
          else {
            // past 8 levels, or fewer than 8 bits held: the walk on the reader itself
            reader.offset = offset;
            reader.byte = byte;
            reader.left = left;
            likelier = table.sample(reader);
            ({ buffer, offset, byte, left } = reader);
          }
          rare = likelier < RUN_CAP;
        }
        if (likelier) {
          // the run's next n = min(likelier, lanes left) lanes: one block when consecutive bits (a full mask's)
          const low = 31 - Math.clz32(m & -m);
          let n = likelier < 32 - low ? likelier : 32 - low;
          let lanes = (-1 >>> (32 - n)) << low;
          if ((m & lanes) !== lanes) {
            let rest = m;
            for (n = 0; n < likelier && rest; n++) rest &= rest - 1; // the lowest lane cleared
            lanes = m ^ rest;
          }
          likelier -= n;
          if (!rarerIsOne) ones |= lanes;
          m ^= lanes;
          if (likelier || !rare || !m) continue; // the run goes on (or ends without a rarer lane, or in a later word)
        }
        // the run's lane of the rarer symbol (in the same step as its likelier lanes when in this word)
        rare = false;
        const lane = m & -m;
        if (rarerIsOne) ones |= lane;
        m ^= lane;
      }
      out[w] |= ones;
    }
  }
  reader.offset = offset;
  reader.byte = byte;
  reader.left = left;
  return out;
}

/**
 * `uniformBig`: from 2^51 on, the walk over n outcomes of 1/n in bigints: 1/n has ⌈log₂ n⌉ − 1 leading zero
 * digits (levels without leaves: their bits are read as one integer d); from there each level whose digit is 1
 * ends the walk at d when d < n, else d −= n.
 */
function uniformBig(n: bigint, reader: BitReader): bigint {
  if (n < NUMBER_OUTCOMES) return BigInt(uniform(Number(n), reader)); // refuses n ≤ 0
  const bits = n.toString(2).length;
  const zeros = n & (n - 1n) ? bits - 1 : bits - 2;
  let rest = 1n << BigInt(zeros); // 2^j mod n after level j: digit j + 1 is 1 when twice it reaches n
  let d = take(reader, zeros);
  for (;;) {
    d = 2n * d + BigInt(reader.bit());
    rest *= 2n;
    if (rest >= n) {
      rest -= n;
      if (d < n) return d;
      d -= n;
    }
  }
}

/**
 * `unrankSubset` of a rank below total = C(n, k): the steps of the `bits` spec, c stepped down while
 * C(c, i) > rank. A step's factor C(c − 1, i)/C(c, i) = (c − i)/c (and C(c − 1, i − 1)/C(c, i) = i/c after a
 * member) is kept pending, several multiplied together while below 2^53, and applied exactly to C(c, i)
 * (one multiplication and one exact division) at a member. The comparisons before it are made in doubles
 * while they are certain: C(c, i) ≈ a·2^e is tracked step by step (relative error below (4n + 8)·2^-53 over
 * all steps) against the rank's top bits (below 3·2^-53), a step taken while a > rank's·2^-e/(1 − eps), eps
 * = (n + 4)·2^-50 above both; near a tie the exact comparisons decide. Below 2^1000 (C(1024, 512) is below
 * 2^1020, but most SS subsets are far below) e = 0 and the rank's top is Number(rank) itself (rounded to
 * nearest: within 2^-53), with no shift a member (a shifted copy of the rank per member was a third of the
 * time at d = 1,024).
 */
function unrank(rank: bigint, n: number, k: number, total: bigint): number[] {
  const members = new Array<number>(k);
  const eps = (n + 4) / 2 ** 50;
  let c = n - 1;
  let binom = total; // C(c, i) = binom·num/den: C(n − 1, k) = C(n, k)·(n − k)/n
  let num = n - k;
  let den = n;
  const wide = !(Number(total) < 2 ** 1000); // doubles hold C(c, i) and the rank unscaled below 2^1000
  let e = wide ? total.toString(16).length * 4 - 64 : 0; // C(c, i) ≈ a·2^e
  let a = (Number(total >> BigInt(e)) * num) / den;
  let shift = BigInt(e); // wide: rank ≈ Number(rank >> shift)·2^shift, the top at least 2^60 (or shift 0)
  for (let i = k; i > 0; i--) {
    if (!rank) {
      for (; i > 0; i--) members[i - 1] = i - 1; // rank 0: C(c, i) > 0 down to c = i − 1, and every c after it
      break;
    }
    let top = Number(wide ? rank >> shift : rank);
    while (top < 2 ** 60 && shift) {
      shift = shift > 32n ? shift - 32n : 0n;
      top = Number(rank >> shift);
    }
    if (a < 2 ** -900) {
      a *= 2 ** 900;
      e -= 900;
    }
    const above = (top * 2 ** (Number(shift) - e)) / (1 - eps); // C(c, i) ≈ a beyond it: certainly above rank
    while (a > above && c > i) {
      a = (a * (c - i)) / c; // C(c − 1, i) = C(c, i)·(c − i)/c
      if (den * c >= 2 ** 53) {
        binom = (binom * BigInt(num)) / BigInt(den);
        num = den = 1;
      }
      num *= c - i;
      den *= c;
      c--;
    }
    binom = (binom * BigInt(num)) / BigInt(den); // C(c, i)
    while (binom > rank) {
      a = (a * (c - i)) / c;
      binom = (binom * BigInt(c - i)) / BigInt(c);
      c--;
    }
    members[i - 1] = c;
    rank -= binom;
    a = (a * i) / c; // C(c − 1, i − 1) = C(c, i)·i/c
    num = i;
    den = c--;
  }
  return members;
}

/**
 * `binaryDigits`: the digits of num/den on Numbers when den ≤ 2^52 (2·num ≤ 2·den ≤ 2^53 stays exact), else
 * the plain bigint ones (captured before any swap).
 */
function binaryDigits(t: Fraction): () => boolean {
  const { num, den } = t;
  if (!(0n <= num && num <= den && den > 0n && den <= 1n << 52n)) return plainBinaryDigits(t); // its refusal outside [0, 1]
  let n = Number(num);
  const d = Number(den);
  return () => (n *= 2) >= d && ((n -= d), true);
}

/** A probability's binary digits drawn so far (1 or 0 each) and the generator of the rest (`binaryDigits`). */
interface DigitRun {
  digits: number[];
  next: () => boolean;
}

/** The keyed lane sampler's digit runs, kept per Fraction object (an encoder's probabilities are its own). */
const digitRuns = new WeakMap<Fraction, DigitRun>();

/** `t`'s digit run, made on first use (`binaryDigits` refuses a probability outside [0, 1]). */
function digitRun(t: Fraction): DigitRun {
  let run = digitRuns.get(t);
  if (run === undefined) digitRuns.set(t, (run = { digits: [], next: binaryDigits(t) }));
  return run;
}

/** No bytes: a sampler's buffer before its first read (never written). */
const NO_BYTES = new Uint8Array(0);

/** Planes of the keyed lane sampler read at a time (`random.ts`). */
const PLANES_PER_BLOCK = 12;

/**
 * `sampleLaneWords` of `random.ts` (its spec there): the same rounds, planes and bytes, with each probability's
 * digits kept per Fraction (not drawn again a call) and each plane's words read in place from the block.
 */
function sampleLaneWords(width: number, groups: readonly WordLaneGroup[], source: ByteSource): Uint32Array {
  const nwords = (width + 31) >>> 5;
  const nbytes = (width + 7) >>> 3;
  const runs = groups.map((g) => digitRun(g.probability)); // refusals before any byte is read, as the plain one
  const masks = groups.map((g) => g.mask);
  const on: number[] = [];
  const undecided = fullWords(width); // lanes past width: never undecided, never set
  const result = new Uint32Array(nwords);
  let buffer: Uint8Array = NO_BYTES; // no typed array made a call before the first read
  let offset = 0;
  for (let round = 0, open = width > 0; open; round++, offset += nbytes) {
    for (let j = 0; j < runs.length; j++) {
      const { digits, next } = runs[j];
      while (digits.length <= round) digits.push(next() ? 1 : 0);
      on[j] = digits[round];
    }
    if (offset === buffer.length) {
      buffer = source.read(nbytes * PLANES_PER_BLOCK);
      offset = 0;
    }
    open = false;
    const end = offset + nbytes; // the plane's bytes; its last word zero-padded
    for (let w = 0, b = offset; w < nwords; w++, b += 4) {
      let t = 0; // the lanes whose probability has digit 1 this round
      for (let j = 0; j < masks.length; j++) if (on[j]) t |= masks[j][w];
      let p = buffer[b]; // U's digits, little-endian
      if (b + 1 < end) p |= buffer[b + 1] << 8;
      if (b + 2 < end) p |= buffer[b + 2] << 16;
      if (b + 3 < end) p |= buffer[b + 3] << 24;
      const u = undecided[w];
      result[w] |= u & t & ~p; // U's digit 0 where t's is 1: U < t, the coin is 1
      if ((undecided[w] = u & ~(p ^ t))) open = true; // decided wherever the digits differ
    }
  }
  return result;
}

/** The samplers of this module. */
export const fastSamplers: Samplers = { sample, runLaneWords, uniformBig, unrank, binaryDigits, sampleLaneWords };

/** Swaps this module's samplers in for every per-report sampler of the process (what the main and node entries do). */
export function installFastSamplers(): void {
  useSamplers(fastSamplers);
}
