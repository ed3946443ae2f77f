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
 */
import { type Fraction, add, compare, fraction, mul, ONE } from "./fraction.js";
import { type ByteSource, Digits, type LaneGroup, PooledSource, type WordLaneGroup, lanesToWords, wordsToLanes } from "./random.js";

/** Longest run of the likelier symbol one walk of `runLaneWords` draws. */
export const RUN_CAP = 255;

/** Bytes a reader asks a pooled CSPRNG (`PooledSource`) for at a time; any other source is read one byte at a time. */
const POOLED_CHUNK = 64;

/**
 * Uniform bits from a byte source, most significant bit of each byte first.
 * A byte is read (`chunk` at a time, then served in order) only when a bit is
 * needed and none is left; the bits a draw leaves serve the next draw. A
 * served byte is zeroed in the reader's buffer. `bitsRead` counts the bits
 * handed out.
 */
export class BitReader {
  bitsRead = 0;
  private buffer: Uint8Array = new Uint8Array(0);
  private offset = 0;
  private byte = 0;
  private left = 0;

  constructor(
    private readonly source: ByteSource,
    private readonly chunk = 1,
  ) {
    if (!Number.isInteger(chunk) || chunk < 1) throw new RangeError(`chunk must be at least 1 byte, got ${chunk}`);
  }

  /** The next bit (0 or 1). */
  bit(): number {
    if (this.left === 0) {
      if (this.offset === this.buffer.length) {
        this.buffer = this.source.read(this.chunk);
        this.offset = 0;
        if (this.buffer.length === 0) throw new RangeError("the byte source returned no bytes");
      }
      this.byte = this.buffer[this.offset];
      this.buffer[this.offset++] = 0;
      this.left = 8;
    }
    this.bitsRead++;
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
    reader = new BitReader(source, source instanceof PooledSource ? POOLED_CHUNK : 1);
    readers.set(source, reader);
  }
  return reader;
}

/** A group of equally likely outcomes: `count` outcomes, each with the exact `probability`. */
export interface OutcomeGroup {
  count: bigint;
  probability: Fraction;
}

/** A level of the walk's tree: its leaves' groups and counts, in order, and their total. */
interface Level {
  total: number;
  groups: number[];
  counts: number[];
  bigTotal: bigint;
  bigCounts: bigint[];
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
  readonly certain: number = -1;
  /** The member (index in its group) of the outcome `sample` last returned (a Number: `bigMember` when there are 2^51 outcomes or more). */
  member = 0;
  /** The member of the last outcome, when the distribution has 2^51 outcomes or more. */
  bigMember = 0n;
  private readonly live: number[] = [];
  private readonly sizes: bigint[] = [];
  private readonly digits: Digits[] = [];
  private readonly levels: Level[] = [];
  private readonly big: boolean;
  private readonly unit: boolean;

  /**
   * @param groups group g has `count` outcomes each of the exact `probability`; they must total exactly 1.
   * @param trusted the groups are known to total 1 (a run table): skip the check (their fractions need not be reduced).
   */
  constructor(groups: readonly OutcomeGroup[], trusted = false) {
    let total = fraction(0n);
    let outcomes = 0n;
    groups.forEach(({ count, probability: p }, index) => {
      if (!trusted) {
        if (count < 0n || p.num < 0n || p.num > p.den) {
          throw new RangeError(`group ${index}: count ${count} and probability ${p.num}/${p.den} out of range`);
        }
        total = add(total, mul(fraction(count), p));
      }
      if (count > 0n && p.num > 0n) {
        this.live.push(index);
        this.sizes.push(count);
        this.digits.push(new Digits(p));
        outcomes += count;
      }
    });
    if (!trusted && compare(total, ONE) !== 0) throw new RangeError(`the outcomes' probabilities sum to ${total.num}/${total.den}, not 1`);
    if (this.live.length === 1 && this.sizes[0] === 1n) this.certain = this.live[0];
    this.big = outcomes >= NUMBER_OUTCOMES;
    this.unit = this.sizes.every((c) => c === 1n);
  }

  private level(depth: number): Level {
    while (this.levels.length <= depth) {
      const level: Level = { total: 0, groups: [], counts: [], bigTotal: 0n, bigCounts: [] };
      this.digits.forEach((digits, i) => {
        if (!digits.next()) return;
        level.groups.push(this.live[i]);
        level.bigCounts.push(this.sizes[i]);
        level.bigTotal += this.sizes[i];
      });
      level.counts = level.bigCounts.map(Number);
      level.total = Number(level.bigTotal);
      this.levels.push(level);
    }
    return this.levels[depth];
  }

  /** One outcome from `reader`: its group's index is returned, its member left in `member` (and `bigMember`). */
  sample(reader: BitReader): number {
    if (this.certain >= 0) {
      this.member = 0;
      this.bigMember = 0n;
      return this.certain;
    }
    const levels = this.levels;
    let d = 0;
    for (let depth = 0; ; depth++) {
      // exact on Numbers while d < 2^52: a count or total above d compares right even when rounded, and only
      // those at most d are subtracted (exactly); past 2^51 the walk goes on with bigints (2^51 outcomes or more)
      if (d >= NUMBER_OUTCOMES) return this.sampleBig(reader, BigInt(d), depth);
      d = 2 * d + reader.bit();
      const level = depth < levels.length ? levels[depth] : this.level(depth);
      if (d < level.total) {
        if (this.unit) {
          this.member = 0;
          return level.groups[d];
        }
        for (let i = 0; ; i++) {
          const count = level.counts[i];
          if (d < count) {
            this.member = d;
            if (this.big) this.bigMember = BigInt(d);
            return level.groups[i];
          }
          d -= count;
        }
      }
      d -= level.total;
    }
  }

  private sampleBig(reader: BitReader, d: bigint, depth: number): number {
    for (; ; depth++) {
      d = 2n * d + BigInt(reader.bit());
      const level = depth < this.levels.length ? this.levels[depth] : this.level(depth);
      if (d < level.bigTotal) {
        for (let i = 0; ; i++) {
          const count = level.bigCounts[i];
          if (d < count) {
            this.bigMember = d;
            this.member = Number(d);
            return level.groups[i];
          }
          d -= count;
        }
      }
      d -= level.bigTotal;
    }
  }
}

/** A small memo: cleared when it holds `limit` entries (the samplers' tables are few per process). */
function memo<K, V>(limit: number, make: (key: K) => V): (key: K) => V {
  const cache = new Map<K, V>();
  return (key) => {
    let value = cache.get(key);
    if (value === undefined) {
      if (cache.size >= limit) cache.clear();
      value = make(key);
      cache.set(key, value);
    }
    return value;
  };
}

/** The walk over n outcomes of 1/n (kept per n). */
export const uniformTable: (n: bigint) => KnuthYao = memo(256, (n: bigint) => {
  if (n <= 0n) throw new RangeError(`uniform needs n > 0, got ${n}`);
  return new KnuthYao([{ count: n, probability: fraction(1n, n) }]);
});

/** A uniform integer in [0, n), n < 2^51 (the walk over n outcomes of 1/n). uniform(1) reads nothing. */
export function uniform(n: number, reader: BitReader): number {
  if (!Number.isSafeInteger(n) || n >= NUMBER_OUTCOMES) throw new RangeError(`uniform needs an integer n < 2^51, got ${n} (use uniformBig)`);
  const table = uniformTable(BigInt(n));
  table.sample(reader);
  return table.member;
}

/** A uniform integer in [0, n), any n > 0. */
export function uniformBig(n: bigint, reader: BitReader): bigint {
  const table = uniformTable(n);
  table.sample(reader);
  return n >= NUMBER_OUTCOMES ? table.bigMember : BigInt(table.member);
}

/** The walk over (t, 1 − t), kept per probability (group 0: the coin is true). */
const coinTables = new WeakMap<Fraction, KnuthYao>();

/** The walk of `coin(t)`: group 0 (true) with t, group 1 with 1 − t; kept per Fraction object. */
export function coinTable(t: Fraction): KnuthYao {
  let table = coinTables.get(t);
  if (table === undefined) {
    table = new KnuthYao([
      { count: 1n, probability: t },
      { count: 1n, probability: fraction(t.den - t.num, t.den) },
    ]);
    coinTables.set(t, table);
  }
  return table;
}

/** True with the exact probability t (the walk over (t, 1 − t)); coin(0) and coin(1) read nothing. */
export function coin(t: Fraction, reader: BitReader): boolean {
  return coinTable(t).sample(reader) === 0;
}

/**
 * Run lengths of the likelier symbol for a rarer symbol of probability s
 * (0 < s ≤ 1/2): outcome k < RUN_CAP with s(1 − s)^k (k likelier symbols,
 * then one rarer), RUN_CAP with (1 − s)^RUN_CAP (RUN_CAP likelier symbols).
 * Kept per s.
 */
export function runTable(s: Fraction): KnuthYao {
  if (s.num <= 0n || 2n * s.num > s.den) throw new RangeError(`the rarer symbol's probability must be in (0, 1/2], got ${s.num}/${s.den}`);
  return runTables(`${s.num}/${s.den}`);
}

const runTables = memo(64, (key: string) => {
  const [a, b] = key.split("/").map(BigInt);
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
});

/** A lane group's probability t as its run table and rarer symbol (kept per Fraction object). */
const runPlans = new WeakMap<Fraction, { table: KnuthYao; rarerIsOne: boolean }>();

function runPlan(t: Fraction): { table: KnuthYao; rarerIsOne: boolean } {
  let plan = runPlans.get(t);
  if (plan === undefined) {
    const rarerIsOne = 2n * t.num <= t.den;
    plan = { table: runTable(rarerIsOne ? t : fraction(t.den - t.num, t.den)), rarerIsOne };
    runPlans.set(t, plan);
  }
  return plan;
}

/** Scratch for a group's lane indices (grown as needed). */
let laneScratch = new Int32Array(1024);

/**
 * Independent coins over `width` lanes as 32-bit words (lane i is bit i % 32
 * of word ⌊i/32⌋): lane i is 1 with its group's probability. The masks
 * partition [0, width); groups are drawn in order, a group's lanes in
 * increasing order forming one sequence of coins. With s the rarer symbol's
 * probability (t when t ≤ 1/2, the rarer symbol then 1; else 1 − t, the rarer
 * symbol 0), each walk of `runTable(s)` fills the next k lanes with the
 * likelier symbol and, when k < RUN_CAP, the lane after them with the rarer
 * one; a run passing the group's last lane is cut. t = 0 or 1 reads nothing.
 */
export function runLaneWords(width: number, groups: readonly WordLaneGroup[], reader: BitReader): Uint32Array {
  const nwords = (width + 31) >>> 5;
  const out = new Uint32Array(nwords);
  for (const { mask, probability: t } of groups) {
    if (t.num === 0n) continue;
    let n = 0;
    for (let w = 0; w < nwords && w < mask.length; w++) {
      let m = mask[w];
      if (w === nwords - 1 && width % 32) m &= 2 ** (width % 32) - 1;
      if (t.num === t.den) {
        out[w] |= m;
        continue;
      }
      if (n + 32 > laneScratch.length) {
        const grown = new Int32Array(2 * laneScratch.length + 32);
        grown.set(laneScratch);
        laneScratch = grown;
      }
      while (m) {
        const low = m & -m;
        laneScratch[n++] = 32 * w + 31 - Math.clz32(low);
        m ^= low;
      }
    }
    if (n === 0) continue;
    const { table, rarerIsOne } = runPlan(t);
    if (!rarerIsOne) for (let i = 0; i < n; i++) out[laneScratch[i] >>> 5] |= 1 << (laneScratch[i] & 31);
    for (let position = 0; position < n; ) {
      const run = table.sample(reader);
      position += run;
      if (run < RUN_CAP) {
        if (position < n) out[laneScratch[position] >>> 5] ^= 1 << (laneScratch[position] & 31);
        position++;
      }
    }
  }
  return out;
}

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

/**
 * The k-subset of [0, n) whose colex rank is `rank` (rank = Σ C(c_i, i) over
 * its members c_1 < … < c_k), in increasing order: unrankSubset(r, 4, 2) for
 * r = 0 … 5 is [0, 1], [0, 2], [1, 2], [0, 3], [1, 3], [2, 3].
 */
export function unrankSubset(rank: bigint, n: number, k: number): number[] {
  if (!(Number.isSafeInteger(n) && Number.isSafeInteger(k) && 0 <= k && k <= n) || rank < 0n || rank >= binomial(n, k)) {
    throw new RangeError(`rank ${rank} is not the rank of a ${k}-subset of ${n}`);
  }
  const members = new Array<number>(k);
  let c = n - 1;
  let binom = k ? binomial(c, k) : 0n; // C(c, i) for the current c and i
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
}

/** A uniform k-subset of [0, n), increasing: a uniform rank below C(n, k) (one walk), unranked. */
export function uniformSubset(n: number, k: number, reader: BitReader): number[] {
  if (!(Number.isSafeInteger(n) && Number.isSafeInteger(k) && 0 <= k && k <= n)) throw new RangeError(`cannot choose ${k} of ${n}`);
  return unrankSubset(uniformBig(binomial(n, k), reader), n, k);
}
