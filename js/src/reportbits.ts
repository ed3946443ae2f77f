/**
 * Exact per-report sampling that reads the CSPRNG bit by bit (Knuth–Yao),
 * as Python's `ldp.client.report_bits`: the same bits, the same outcomes.
 *
 * Every fresh coin of a report comes from the `BitReader` of its byte source
 * (`bitReader(source)`: one reader a source, so the bits a draw or a report
 * leaves serve the next), and every draw is a Knuth–Yao walk that reads a bit
 * only while the outcome is undecided: at most about H + 2 bits for a
 * distribution of entropy H, where the byte samplers of `random.ts` read whole
 * bytes per try. Keyed PRF streams (RAPPOR's permanent response, the memoized
 * mechanisms) keep `random.ts`'s byte samplers.
 *
 * - `KnuthYao`: groups of equally likely outcomes (count, exact probability).
 * - `uniform`, `uniformBig`, `coin`: its one-group and two-outcome cases.
 * - `runLaneWords`, `runLanes`: independent coins over lanes, drawn as runs of
 *   the likelier symbol (a run table of 256 outcomes, one walk a run).
 * - `uniformSubset`: a uniform k-subset, a uniform rank below C(n, k) unranked.
 *
 * The rules are those of tests/vectors/README.md, section `bits`.
 *
 * Two paths, the same bits: the code here is the plain one, small because
 * `ldp-client/frequency` bundles it under a 15 kB budget. The main entry and
 * `ldp-client/node` install the faster samplers of `reportbits-fast.ts` with
 * `useSamplers` (the walk's first 8 levels at once, runs a word at a time,
 * `uniformBig`'s leading zero levels at once, unranking in doubles), which
 * read the same bits and give the same outcomes; the frequency entry never
 * imports that module, so a bundler leaves it out. `KnuthYao.prototype.sample`,
 * `runLaneWords`, `uniformBig`, `unrankSubset`'s unranking and `random.ts`'s
 * `binaryDigits` and `sampleLaneWords` (the keyed streams' lanes) are swapped.
 */
import type { Fraction } from "./fraction.js";
import { type ByteSource, binaryDigits, type LaneGroup, PooledSource, type WordLaneGroup, lanesToWords, sampleLaneWords, useKeyedSamplers, wordsToLanes } from "./random.js";

/** Longest run of the likelier symbol one walk of `runLaneWords` draws. */
export const RUN_CAP = 255;

/**
 * Uniform bits from a byte source, most significant bit of each byte first.
 * A byte is read (`chunk` at a time, then served in order) only when a bit is
 * needed and none is left; the bits a draw leaves serve the next draw. A
 * served byte is zeroed in the reader's buffer. The bits handed out are 8 ×
 * the bytes read − `left`.
 */
export class BitReader {
  /** Bits of the last byte read not served yet. */
  left = 0;
  /** Internal (read by `reportbits-fast.ts`): the bytes of the last read, the next one's index, the last byte served. */
  buffer: Uint8Array = new Uint8Array(0);
  offset = 0;
  byte = 0;

  /** `chunk`: bytes asked of `source` at a time (1 for a fixed test stream: exactly the bytes the draws need). */
  constructor(
    private readonly source: ByteSource,
    private readonly chunk = 1,
  ) {}

  /** The next bit (0 or 1). */
  bit(): number {
    if (!this.left) {
      if (this.offset === this.buffer.length) {
        this.buffer = this.source.read(this.chunk);
        this.offset = 0;
        if (!this.buffer.length) throw new RangeError("the byte source returned no bytes");
      }
      this.byte = this.buffer[this.offset];
      this.buffer[this.offset++] = 0; // served: not kept
      this.left = 8;
    }
    return (this.byte >> --this.left) & 1;
  }
}

const readers = new WeakMap<ByteSource, BitReader>();

/**
 * The bit reader of `source`, made on first use and kept: every per-report
 * sampler reading `source` shares it, so no bit is served twice and none a
 * draw leaves is lost. A `PooledSource` (the CSPRNG) is read 64 bytes at a
 * time; any other source one byte at a time, so a fixed test stream is read
 * exactly as far as the draws need.
 */
export function bitReader(source: ByteSource): BitReader {
  let reader = readers.get(source);
  if (reader === undefined) {
    reader = new BitReader(source, source instanceof PooledSource ? 64 : 1); // a pooled CSPRNG 64 bytes a read
    readers.set(source, reader);
  }
  return reader;
}

/** A group of equally likely outcomes: `count` outcomes, each with the exact `probability`. */
export interface OutcomeGroup {
  count: bigint;
  probability: Fraction;
}

/** A level of the walk's tree: its leaves' groups and counts, in order, and their total. Internal: shared with `reportbits-fast.ts`. */
interface Level {
  total: number;
  groups: number[];
  counts: number[];
  bigTotal: bigint;
  bigCounts: bigint[];
  /** Every leaf here is its own group's (count 1): leaf d is group groups[d]. */
  unit: boolean;
}

/** Below this many outcomes the walk's node index stays an exact Number (d < 2·count). */
const NUMBER_OUTCOMES = 2 ** 51;

/**
 * A discrete distribution drawn by the Knuth–Yao walk, reading a bit only while undecided.
 *
 * Level j of the walk's tree has one leaf for each outcome whose probability
 * has binary digit j equal to 1, the groups in order and each group's
 * outcomes in order. The walk keeps d, its node's index among the level's
 * nodes: d = 2d + (next bit); the node is the leaf of (group g, member d′)
 * when d falls in g's leaves, else it is internal and d −= the level's leaf
 * count. Each outcome comes with probability exactly its digits' sum. Levels
 * are computed as walks first reach them, and kept. A distribution with one
 * outcome reads nothing. The walk runs on Numbers while its node index is
 * below 2^51 (always, with fewer than 2^51 outcomes), then on bigints.
 */
export class KnuthYao {
  /** The group of the only outcome (the walk reads nothing), else -1. */
  certain = -1;
  /**
   * The member (index in its group) of the outcome `sample` last returned: a Number when the walk ended on
   * Numbers (always, with fewer than 2^51 outcomes), a bigint when it went on with bigints.
   */
  member: number | bigint = 0;
  private readonly sizes: bigint[] = [];
  private readonly digits: (() => boolean)[] = [];
  /** Internal (read by `reportbits-fast.ts`): the levels computed so far. */
  readonly levels: Level[] = [];
  /** Internal: `reportbits-fast.ts`'s table of the walk's end for each 8-bit prefix, made on first use. */
  declare prefixTable?: Int32Array;

  /**
   * @param groups group g has `count` outcomes each of the exact `probability`; they must total exactly 1.
   * @param trusted the groups are known to total 1 (a run table): skip the check (their fractions need not be reduced).
   */
  constructor(groups: readonly OutcomeGroup[], trusted = false) {
    let num = 0n; // Σ count·p = num/den
    let den = 1n;
    groups.forEach(({ count, probability: p }, index) => {
      // a group of count 0 or probability 0 is never a leaf's (it adds 0 to a level): kept, so a leaf's group is its index
      this.sizes.push(count);
      this.digits.push(binaryDigits(p)); // refuses a probability outside [0, 1]
      if (!trusted) {
        num = num * p.den + count * p.num * den;
        den *= p.den;
      }
      if (count === 1n && p.num === p.den) this.certain = index; // probability 1: the only outcome
    });
    if (!trusted && num !== den) throw new RangeError(`the probabilities sum to ${num}/${den}, not 1`);
  }

  /** Internal (shared with `reportbits-fast.ts`): level `depth`, computed when first reached. */
  level(depth: number): Level {
    while (this.levels.length <= depth) {
      const groups: number[] = []; // the groups with a leaf at this level, in order
      const bigCounts: bigint[] = []; // their leaves
      this.digits.forEach((next, i) => next() && (groups.push(i), bigCounts.push(this.sizes[i])));
      const bigTotal = bigCounts.reduce((a, b) => a + b, 0n);
      const counts = bigCounts.map(Number);
      this.levels.push({ groups, bigCounts, bigTotal, counts, total: Number(bigTotal), unit: counts.every((c) => c === 1) });
    }
    return this.levels[depth];
  }

  /**
   * One outcome from `reader`: its group's index is returned, its member left in `member`. (Internal, for
   * `reportbits-fast.ts`: `d` and `depth` continue a walk from node d before level `depth`, d < 2^8.)
   */
  sample(reader: BitReader, d = 0, depth = 0): number {
    this.member = 0;
    if (this.certain >= 0) return this.certain;
    for (; ; depth++) {
      // exact on Numbers while d < 2^52: a count or total above d compares right even when rounded, and only
      // those at most d are subtracted (exactly); past 2^51 the walk goes on with bigints (2^51 outcomes or more)
      if (d >= NUMBER_OUTCOMES) return this.sampleBig(reader, BigInt(d), depth);
      d = 2 * d + reader.bit();
      const level = this.levels[depth] ?? this.level(depth);
      if (d < level.total) {
        if (level.unit) return level.groups[d]; // one leaf a group: the d-th
        for (let i = 0; ; i++) {
          const count = level.counts[i];
          if (d < count) {
            this.member = d;
            return level.groups[i];
          }
          d -= count;
        }
      }
      d -= level.total;
    }
  }

  /** The walk on from node d before level `depth`, on bigints. */
  private sampleBig(reader: BitReader, d: bigint, depth: number): number {
    for (; ; depth++) {
      d = 2n * d + BigInt(reader.bit());
      const level = this.level(depth);
      if (d < level.bigTotal) {
        for (let i = 0; ; i++) {
          const count = level.bigCounts[i];
          if (d < count) {
            this.member = d;
            return level.groups[i];
          }
          d -= count;
        }
      }
      d -= level.bigTotal;
    }
  }
}

/** A small memo: cleared when it holds 256 entries (the samplers' tables are few per process). */
function memo<K, V>(make: (key: K) => V): (key: K) => V {
  const cache = new Map<K, V>();
  return (key) => {
    let value = cache.get(key);
    if (value === undefined) {
      if (cache.size >= 256) cache.clear();
      value = make(key);
      cache.set(key, value);
    }
    return value;
  };
}

/** The walk over n outcomes of 1/n (kept per n; n ≤ 0 is refused: 1/n is outside [0, 1]). */
export const uniformTable: (n: bigint) => KnuthYao = memo((n: bigint) => new KnuthYao([{ count: n, probability: { num: 1n, den: n } }]));

/** A uniform integer in [0, n), n < 2^51 (the walk over n outcomes of 1/n). uniform(1) reads nothing. */
export function uniform(n: number, reader: BitReader): number {
  if (!Number.isSafeInteger(n) || n >= NUMBER_OUTCOMES) throw new RangeError(`uniform needs an integer n < 2^51, got ${n} (use uniformBig)`);
  const table = uniformTable(BigInt(n));
  table.sample(reader);
  return table.member as number; // fewer than 2^51 outcomes: a Number
}

/** A uniform integer in [0, n), any n > 0. */
export let uniformBig = (n: bigint, reader: BitReader): bigint => {
  const table = uniformTable(n);
  table.sample(reader);
  return BigInt(table.member);
};

/** The walk of `coin(t)`: group 0 (true) with t, group 1 with 1 − t; kept per Fraction object. */
export const coinTable: (t: Fraction) => KnuthYao = memo((t: Fraction) =>
  new KnuthYao([
    { count: 1n, probability: t },
    { count: 1n, probability: { num: t.den - t.num, den: t.den } },
  ]),
);

/** True with the exact probability t (the walk over (t, 1 − t)); coin(0) and coin(1) read nothing. */
export function coin(t: Fraction, reader: BitReader): boolean {
  return coinTable(t).sample(reader) === 0;
}

/**
 * `coin(t)` for a probability drawn once (a rounding coin, ⌊f·2^53⌋/2^53): the same walk over (t, 1 − t) and
 * the same bits, its digits computed as it goes instead of kept. `t` need not be reduced.
 */
export function coinOnce(t: Fraction, reader: BitReader): boolean {
  const den = t.den;
  let a = t.num; // the rest of t's expansion
  let b = den - a; // of 1 − t's
  if (a < 0n || b < 0n) throw new RangeError(`probability ${t.num}/${t.den} outside [0, 1]`);
  if (a === 0n || b === 0n) return b === 0n; // one outcome: nothing read
  for (let d = 0; ; ) {
    d = 2 * d + reader.bit(); // d ≤ 1: two outcomes leave at most one internal node a level
    a *= 2n;
    b *= 2n;
    const da = a >= den ? 1 : 0;
    const db = b >= den ? 1 : 0;
    if (da) a -= den;
    if (db) b -= den;
    if (d < da + db) return da === 1 && d === 0;
    d -= da + db;
  }
}

/**
 * Unbiased random rounding of pos ≥ 0 to ⌊pos⌋ or ⌊pos⌋ + 1: up with probability ⌊frac·2^53⌋/2^53 (frac =
 * pos − ⌊pos⌋; `coinOnce`, nothing read when frac = 0). The numeric encoders and 1BitMean's plain encoder.
 */
export function randomRound(pos: number, reader: BitReader): number {
  const i = Math.trunc(pos);
  const frac = pos - i;
  return frac !== 0 && coinOnce({ num: BigInt(Math.floor(frac * 2 ** 53)), den: 1n << 53n }, reader) ? i + 1 : i;
}

/**
 * Run lengths of the likelier symbol for a rarer symbol of probability s
 * (0 ≤ s ≤ 1/2): outcome k < RUN_CAP with s(1 − s)^k (k likelier symbols,
 * then one rarer), RUN_CAP with (1 − s)^RUN_CAP (RUN_CAP likelier symbols).
 * Made anew (the lane samplers keep theirs per probability).
 */
export function runTable({ num: a, den: b }: Fraction): KnuthYao {
  // group k: a·(b − a)^k / b^(k+1), exactly s·(1 − s)^k (not reduced: the walk needs only the digits)
  const groups: OutcomeGroup[] = [];
  let stay = 1n;
  let den = 1n;
  for (let k = 0; k < RUN_CAP; k++) {
    groups.push({ count: 1n, probability: { num: a * stay, den: den * b } });
    stay *= b - a;
    den *= b;
  }
  groups.push({ count: 1n, probability: { num: stay, den } });
  return new KnuthYao(groups, true);
}

/**
 * A lane group's probability t as its run table and whether the rarer symbol is 1 (kept per Fraction object).
 * Internal: shared with `reportbits-fast.ts`.
 */
export const runPlan = memo((t: Fraction): [KnuthYao, boolean] => {
  const rarerIsOne = 2n * t.num <= t.den;
  return [runTable(rarerIsOne ? t : { num: t.den - t.num, den: t.den }), rarerIsOne];
});

/**
 * Independent coins over `width` lanes as 32-bit words (lane i is bit i % 32
 * of word ⌊i/32⌋): lane i is 1 with its group's probability. The masks
 * partition [0, width); groups are drawn in order, a group's lanes in
 * increasing order forming one sequence of coins. With s the rarer symbol's
 * probability (t when t ≤ 1/2, the rarer symbol then 1; else 1 − t, the rarer
 * symbol 0), each walk of `runTable(s)` fills the next k lanes with the
 * likelier symbol and, when k < RUN_CAP, the lane after them with the rarer
 * one; the walk is drawn when a lane needs a symbol and the last run is used
 * up (a run passing the group's last lane is cut). t = 0 or 1 reads nothing.
 */
export let runLaneWords = (width: number, groups: readonly WordLaneGroup[], reader: BitReader): Uint32Array => {
  const out = new Uint32Array((width + 31) >>> 5);
  for (const { mask, probability: t } of groups) {
    // t = 0 or 1: s = 0, whose run table has one outcome (RUN_CAP likelier symbols): nothing is read
    const [table, rarerIsOne] = runPlan(t);
    let likelier = 0; // lanes of the likelier symbol left in the current run
    let rare = false; // the current run ends with a lane of the rarer symbol
    for (let w = 0; w < out.length; w++) {
      for (let m = mask[w]; m; ) {
        const lane = m & -m; // the group's lanes in increasing order
        m ^= lane;
        if (!likelier && !rare) {
          likelier = table.sample(reader);
          rare = likelier < RUN_CAP;
        }
        let one = rarerIsOne; // the symbol of this lane
        if (likelier) {
          likelier--;
          one = !one;
        } else rare = false;
        if (one) out[w] |= lane;
      }
    }
  }
  return out;
};

/** `runLaneWords` with bigint masks and result (bit i = lane i). */
export function runLanes(width: number, groups: readonly LaneGroup[], reader: BitReader): bigint {
  const words = groups.map((g) => ({ mask: lanesToWords(g.mask, width), probability: g.probability }));
  return wordsToLanes(runLaneWords(width, words, reader));
}

/** C(n, k) exactly. */
export function binomial(n: number, k: number): bigint {
  if (k < 0 || k > n) return 0n;
  k = Math.min(k, n - k);
  let c = 1n;
  for (let i = 1; i <= k; i++) c = (c * BigInt(n - k + i)) / BigInt(i);
  return c;
}

/** C(n, k) of the subsets drawn, kept per (n, k). */
const subsets = memo((key: string) => binomial(...(key.split(",").map(Number) as [number, number])));

/**
 * The k-subset of [0, n) whose colex rank is `rank` (rank = Σ C(c_i, i) over
 * its members c_1 < … < c_k), in increasing order: unrankSubset(r, 4, 2) for
 * r = 0 … 5 is [0, 1], [0, 2], [1, 2], [0, 3], [1, 3], [2, 3].
 */
export function unrankSubset(rank: bigint, n: number, k: number): number[] {
  const total = binomial(n, k);
  if (rank < 0n || rank >= total) throw new RangeError(`rank ${rank} is not the rank of a ${k}-subset of ${n}`);
  return unrank(rank, n, k, total);
}

/** `unrankSubset` of a rank below total = C(n, k). */
let unrank: Samplers["unrank"] = (rank, n, k, total) => {
  const members = new Array<number>(k);
  let c = n - 1;
  let binom = k ? (total * BigInt(n - k)) / BigInt(n) : 0n; // C(c, i) for the current c and i: C(n − 1, k) first
  for (let i = k; i > 0; i--) {
    while (binom > rank) {
      binom = (binom * BigInt(c - i)) / BigInt(c); // C(c − 1, i) = C(c, i)·(c − i)/c
      c--;
    }
    members[i - 1] = c;
    rank -= binom;
    binom = c ? (binom * BigInt(i)) / BigInt(c) : 0n; // C(c − 1, i − 1) = C(c, i)·i/c
    c--;
  }
  return members;
};

/** A uniform k-subset of [0, n) (integers, 0 ≤ k ≤ n), increasing: a uniform rank below C(n, k) (one walk), unranked. */
export function uniformSubset(n: number, k: number, reader: BitReader): number[] {
  if (!(k >= 0 && k <= n)) throw new RangeError(`cannot choose ${k} of ${n}`);
  const total = subsets(`${n},${k}`);
  return unrank(uniformBig(total, reader), n, k, total);
}

/** The samplers `useSamplers` swaps (see the module's doc): each reads the bits the plain one reads, with its outcomes. */
export interface Samplers {
  /** `KnuthYao.prototype.sample`. */
  sample: (this: KnuthYao, reader: BitReader) => number;
  runLaneWords: typeof runLaneWords;
  uniformBig: typeof uniformBig;
  /** `unrankSubset`'s unranking of a rank below total = C(n, k) (checked before). */
  unrank: (rank: bigint, n: number, k: number, total: bigint) => number[];
  /** `binaryDigits` of `random.ts` (the run tables' and the keyed lane sampler's digits). */
  binaryDigits: typeof binaryDigits;
  /** `sampleLaneWords` of `random.ts` (the keyed PRF streams' lanes: RAPPOR's permanent response). */
  sampleLaneWords: typeof sampleLaneWords;
}

let plain: Samplers | undefined;

/**
 * Installs `samplers` for every per-report sampler of the process (the main and node entries install
 * `reportbits-fast.ts`'s); `null` puts the plain ones of this module back.
 */
export function useSamplers(samplers: Samplers | null): void {
  plain ??= { sample: KnuthYao.prototype.sample, runLaneWords, uniformBig, unrank, binaryDigits, sampleLaneWords };
  const use = samplers ?? plain;
  ({ runLaneWords, uniformBig, unrank } = use);
  KnuthYao.prototype.sample = use.sample;
  useKeyedSamplers(use.binaryDigits, use.sampleLaneWords);
}
