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
 *   consecutive, else cleared lowest first).
 * - `uniformBig` from 2^51: 1/n's leading zero levels read as one integer,
 *   then the walk in bigints.
 * - `unrankSubset`'s unranking: steps decided in doubles while certain,
 *   pending factors applied exactly several at a time, exact comparisons near
 *   a tie.
 * - `binaryDigits` (`random.ts`) on Numbers for denominators up to 2^52 (the
 *   keyed lane sampler of RAPPOR's permanent response draws them a report).
 */
import { type BitReader, KnuthYao, RUN_CAP, type Samplers, runPlan, uniform, useSamplers } from "./reportbits.js";
import type { Fraction } from "./fraction.js";
import { type WordLaneGroup, binaryDigits as liveBinaryDigits } from "./random.js";

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

/** The next `count` bits as one integer, the first most significant (what `count` calls of `bit` serve). */
function take(reader: BitReader, count: number): bigint {
  let out = 0n;
  let acc = 0;
  let got = 0;
  while (count--) {
    acc = 2 * acc + reader.bit();
    if (++got === 48) {
      out = (out << 48n) | BigInt(acc);
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
  this.member = 0;
  return walkOn(this, reader, -entry - 1);
}

/** The plain walk (`reportbits.ts`) on from node d after level 7 (a Number: d < 2^8 there). */
function walkOn(table: KnuthYao, reader: BitReader, d: number): number {
  for (let depth = 8; ; depth++) {
    if (d >= NUMBER_OUTCOMES) return table.sampleBig(reader, BigInt(d), depth);
    d = 2 * d + reader.bit();
    const level = table.levels[depth] ?? table.level(depth);
    if (d < level.total) {
      if (level.unit) return level.groups[d]; // one leaf a group: the d-th
      for (let i = 0; ; i++) {
        const count = level.counts[i];
        if (d < count) {
          table.member = d;
          return level.groups[i];
        }
        d -= count;
      }
    }
    d -= level.total;
  }
}

/** `runLaneWords` (its spec in `reportbits.ts`), a run's likelier lanes of a word at once. */
function runLaneWords(width: number, groups: readonly WordLaneGroup[], reader: BitReader): Uint32Array {
  const out = new Uint32Array((width + 31) >>> 5);
  for (const { mask, probability: t } of groups) {
    const [table, rarerIsOne] = runPlan(t);
    let likelier = 0; // lanes of the likelier symbol left in the current run
    let rare = false; // the current run ends with a lane of the rarer symbol
    for (let w = 0; w < out.length; w++) {
      for (let m = mask[w] | 0; m; ) {
        if (!likelier && !rare) {
          likelier = table.sample(reader);
          rare = likelier < RUN_CAP;
        }
        let lanes = m & -m; // the group's next lane (its lanes in increasing order)
        if (likelier) {
          // the run's likelier lanes in this word at once: the group's next t = min(likelier, lanes left),
          // one block when they are consecutive bits (a full mask's), else cleared one by one
          const low = 31 - Math.clz32(lanes);
          let t = Math.min(likelier, 32 - low);
          lanes = (-1 >>> (32 - t)) << low;
          if ((m & lanes) !== lanes) {
            let rest = m;
            for (t = 0; t < likelier && rest; t++) rest &= rest - 1; // the lowest lane cleared
            lanes = m ^ rest;
          }
          likelier -= t;
          if (!rarerIsOne) out[w] |= lanes;
        } else {
          rare = false;
          if (rarerIsOne) out[w] |= lanes;
        }
        m ^= lanes;
      }
    }
  }
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
 * = (n + 4)·2^-50 above both; near a tie the exact comparisons decide.
 */
function unrank(rank: bigint, n: number, k: number, total: bigint): number[] {
  const members = new Array<number>(k);
  const eps = (n + 4) / 2 ** 50;
  let c = n - 1;
  let binom = total; // C(c, i) = binom·num/den: C(n − 1, k) = C(n, k)·(n − k)/n
  let num = n - k;
  let den = n;
  let e = Math.max(0, total.toString(16).length * 4 - 64); // C(c, i) ≈ a·2^e
  let a = (Number(total >> BigInt(e)) * num) / den;
  let shift = BigInt(e); // rank ≈ Number(rank >> shift)·2^shift, the top at least 2^60 (or shift 0)
  for (let i = k; i > 0; i--) {
    if (!rank) {
      for (; i > 0; i--) members[i - 1] = i - 1; // rank 0: C(c, i) > 0 down to c = i − 1, and every c after it
      break;
    }
    let top = Number(rank >> shift);
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

/** The samplers of this module. */
export const fastSamplers: Samplers = { sample, runLaneWords, uniformBig, unrank, binaryDigits };

/** Swaps this module's samplers in for every per-report sampler of the process (what the main and node entries do). */
export function installFastSamplers(): void {
  useSamplers(fastSamplers);
}
