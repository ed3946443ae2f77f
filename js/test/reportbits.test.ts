/** The per-report samplers (src/reportbits.ts): exactness, bits read, the `bits` vectors of ../tests/vectors/vectors.json. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import {
  BitReader,
  FixedSource,
  KnuthYao,
  type OutcomeGroup,
  PooledSource,
  RUN_CAP,
  binomial,
  bitReader,
  coin,
  coinOnce,
  fraction,
  fromHex,
  lanesToPacked,
  parseFraction,
  randomRound,
  runLanes,
  runTable,
  toHex,
  uniform,
  uniformBig,
  uniformSubset,
  unrankSubset,
} from "../src/index.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const V: any = JSON.parse(readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8"));

/** A reader over fixed bytes (one byte a read), its source, and the bits it has handed out (8 × bytes read − left). */
function fixed(bytes: number[] | Uint8Array): { reader: BitReader; source: FixedSource; bits: () => number } {
  const source = new FixedSource(Uint8Array.from(bytes));
  const reader = new BitReader(source);
  return { reader, source, bits: () => 8 * source.reads.length - reader.left };
}

const groupsOf = (groups: [number | bigint, Fraction][]): OutcomeGroup[] =>
  groups.map(([count, probability]) => ({ count: BigInt(count), probability }));
type Fraction = ReturnType<typeof fraction>;

/**
 * Every bit string of length L walked once: the walk's leaves at level j ≤ L are reached by 2^(L−j) strings
 * each, so outcome o is reached by exactly ⌊p_o·2^L⌋ strings (the first L digits of p_o), and the strings
 * left undecided number 2^L − Σ ⌊p_o·2^L⌋.
 */
function enumerate(groups: OutcomeGroup[], L: number): Map<string, number> {
  const walk = new KnuthYao(groups);
  const counts = new Map<string, number>();
  for (let s = 0; s < 2 ** L; s++) {
    const bytes = new Uint8Array(Math.ceil(L / 8));
    for (let i = 0; i < L; i++) if ((s >> (L - 1 - i)) & 1) bytes[i >> 3] |= 0x80 >> (i & 7);
    const { reader, bits } = fixed(bytes);
    let key = "undecided";
    try {
      const group = walk.sample(reader);
      if (bits() <= L) key = `${group}/${walk.member}`;
    } catch (e) {
      if (!(e instanceof RangeError)) throw e; // the L bits used up: undecided
    }
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

describe("KnuthYao walk", () => {
  const cases: [string, [number | bigint, Fraction][]][] = [
    ["a coin of 1/3", [[1, fraction(1n, 3n)], [1, fraction(2n, 3n)]]],
    ["uniform of 5", [[5, fraction(1n, 5n)]]],
    ["three groups", [[2, fraction(1n, 10n)], [1, fraction(1n, 2n)], [3, fraction(1n, 10n)]]],
    ["grr-like", [[1, fraction(7n, 19n)], [4, fraction(3n, 19n)]]],
    ["dropped groups", [[0, fraction(1n, 2n)], [2, fraction(0n)], [4, fraction(1n, 4n)]]],
  ];
  for (const [name, spec] of cases) {
    it(`${name}: each outcome is reached by exactly ⌊p·2^L⌋ of the 2^L bit strings (L = 14)`, () => {
      const L = 14;
      const groups = groupsOf(spec);
      const counts = enumerate(groups, L);
      let decided = 0;
      groups.forEach(({ count, probability: p }, g) => {
        for (let m = 0; m < Number(count); m++) {
          const expected = Number((p.num * 2n ** BigInt(L)) / p.den);
          assert.equal(counts.get(`${g}/${m}`) ?? 0, expected, `group ${g} member ${m}`);
          decided += expected;
        }
      });
      assert.equal(counts.get("undecided") ?? 0, 2 ** L - decided);
    });
  }
  it("the doc example: a uniform third from bits 1, 0 is member 2 of 3, in 2 bits", () => {
    const third = new KnuthYao(groupsOf([[3, fraction(1n, 3n)]]));
    const { reader, bits } = fixed([0b10010000]);
    assert.equal(third.sample(reader), 0);
    assert.equal(third.member, 2);
    assert.equal(bits(), 2);
  });
  it("refuses groups not totalling 1 and out-of-range groups, naming them", () => {
    assert.throws(() => new KnuthYao(groupsOf([[2, fraction(1n, 3n)]])), /sum to 2\/3, not 1/);
    assert.throws(() => new KnuthYao(groupsOf([[1, fraction(3n, 2n)]])), /probability 3\/2 outside \[0, 1\]/);
    assert.throws(() => new KnuthYao(groupsOf([[-1n, fraction(1n)]])), /sum to -1\/1, not 1/);
  });
});

describe("draws that read nothing", () => {
  it("uniform(1), coin(0), coin(1) and a certain outcome read no bit", () => {
    const { reader, source, bits } = fixed([]);
    assert.equal(uniform(1, reader), 0);
    assert.equal(coin(fraction(0n), reader), false);
    assert.equal(coin(fraction(1n), reader), true);
    assert.equal(new KnuthYao(groupsOf([[0, fraction(1n, 2n)], [1, fraction(1n)]])).sample(reader), 1);
    assert.equal(uniformSubset(5, 0, reader).length, 0);
    assert.deepEqual(uniformSubset(5, 5, reader), [0, 1, 2, 3, 4]);
    assert.equal(runLanes(3, [{ mask: 1n, probability: fraction(0n) }, { mask: 6n, probability: fraction(1n) }], reader), 6n);
    assert.equal(bits(), 0);
    assert.deepEqual(source.reads, []);
  });
});

describe("BitReader", () => {
  it("serves each byte most significant bit first, and a draw's leftover bits to the next draws", () => {
    const { reader, source, bits } = fixed([0b10110010, 0b01000000]);
    const draws = Array.from({ length: 10 }, () => uniform(2, reader)); // one bit each
    assert.deepEqual(draws, [1, 0, 1, 1, 0, 0, 1, 0, 0, 1]);
    assert.deepEqual(source.reads, [1, 1]); // the second byte only when the first is used up
    assert.equal(bits(), 10);
    assert.equal(reader.left, 6);
  });
  it("carries leftover bits across draws of different samplers", () => {
    // bits 10 | 1 | 000 | 11 | 1: uniform(4) = 2, coin(1/2) = false (group 1), uniform(8) = 0, uniform(4) = 3, then
    // uniform(2) takes the first bit of the second byte
    const { reader, source, bits } = fixed([0b10100011, 0b10000000]);
    assert.equal(uniform(4, reader), 2);
    assert.equal(coin(fraction(1n, 2n), reader), false);
    assert.equal(uniform(8, reader), 0);
    assert.equal(uniform(4, reader), 3);
    assert.deepEqual(source.reads, [1]);
    assert.equal(uniform(2, reader), 1);
    assert.deepEqual(source.reads, [1, 1]);
    assert.equal(bits(), 9);
  });
  it("zeroes each byte it takes in its buffer, and refuses an empty read and a bad chunk", () => {
    const held = Uint8Array.of(0xff, 0xff);
    const reader = new BitReader({ read: () => held }, 2);
    reader.bit();
    assert.deepEqual([...held], [0, 0xff]);
    assert.throws(() => new BitReader({ read: () => new Uint8Array(0) }).bit(), /returned no bytes/);
    assert.throws(() => new BitReader(new FixedSource(new Uint8Array(1)), 0).bit(), /returned no bytes/); // a chunk of 0
  });
  it("bitReader keeps one reader per source: a pooled CSPRNG's bytes are served in order, 64 bytes a read", () => {
    let next = 0;
    const fills: number[] = [];
    const source = new PooledSource(256, (out) => {
      fills.push(out.length);
      for (let i = 0; i < out.length; i++) out[i] = next++ % 251;
    });
    const reader = bitReader(source);
    assert.equal(bitReader(source), reader);
    for (let j = 0; j < 70; j++) assert.equal(uniform(256, reader), j); // 8 bits each: byte j of the pool
    assert.deepEqual(fills, [256]);
    const fixedSource = new FixedSource(Uint8Array.of(0x80));
    assert.notEqual(bitReader(fixedSource), reader);
    assert.equal(uniform(2, bitReader(fixedSource)), 1);
    assert.deepEqual(fixedSource.reads, [1]); // a fixed source is read one byte at a time
  });
});

describe("coinOnce and randomRound", () => {
  it("coinOnce reads the bits coin reads and gives its result, for reduced and unreduced fractions", () => {
    const cases: [bigint, bigint][] = [[1n, 3n], [2n, 6n], [5n, 8n], [10n, 16n], [7n, 1n << 53n], [(1n << 53n) - 1n, 1n << 53n], [0n, 5n], [5n, 5n]];
    for (const [num, den] of cases) {
      for (const byte of [0x00, 0x5a, 0xa5, 0xf0, 0x13]) {
        const a = fixed(Array(16).fill(byte));
        const b = fixed(Array(16).fill(byte));
        assert.equal(coinOnce({ num, den }, a.reader), coin(fraction(num, den), b.reader), `${num}/${den} on ${byte}`);
        assert.equal(a.bits(), b.bits(), `${num}/${den} on ${byte}: bits`);
      }
    }
    assert.throws(() => coinOnce({ num: 3n, den: 2n }, fixed([]).reader), /outside \[0, 1\]/);
  });
  it("randomRound: an integer position reads nothing; else up with ⌊frac·2^53⌋/2^53", () => {
    const none = fixed([]);
    assert.equal(randomRound(3, none.reader), 3);
    assert.equal(none.bits(), 0);
    // frac 1/2: the coin of 1/2 is one bit, 1 → group 1 (false, stay), 0 → group 0 (true, up)
    assert.equal(randomRound(2.5, fixed([0x00]).reader), 3);
    assert.equal(randomRound(2.5, fixed([0x80]).reader), 2);
  });
});

describe("uniform", () => {
  it("uniformBig above 2^51 walks on bigints; refuses n ≤ 0 and uniform beyond 2^51", () => {
    const { reader } = fixed(Array(16).fill(0));
    assert.equal(uniformBig(2n ** 60n + 3n, reader), 0n);
    assert.throws(() => uniformBig(0n, reader), /probability 1\/0 outside/);
    assert.throws(() => uniform(2 ** 52, reader), /uniformBig/);
  });
});

describe("runs", () => {
  it("the run table of s: k < 255 with s(1 − s)^k, 255 with (1 − s)^255 (all-ones bits: the cap, at s = 1/2)", () => {
    // s = 1/2: outcome k has probability 2^-(k+1) (k < 255), and the cap 2^-255: a 0 bit after k ones is outcome k
    const { reader, bits } = fixed([0b11101111, 0b11111111]);
    const table = runTable(fraction(1n, 2n));
    assert.equal(table.sample(reader), 3);
    assert.equal(bits(), 4);
    const ones = fixed(Array(32).fill(0xff));
    assert.equal(table.sample(ones.reader), RUN_CAP);
    assert.equal(ones.bits(), 255);
    const zero = runTable(fraction(0n)); // s = 0 (t = 0 or 1): one outcome, RUN_CAP, read without a bit
    assert.equal(zero.sample(reader), RUN_CAP);
    assert.equal(bits(), 4);
  });
  it("a likelier 1 (t > 1/2) fills the lanes and the runs clear the rarer ones", () => {
    // t = 3/4: s = 1/4, the rarer symbol 0; on zero bits each walk ends at level 2 on outcome 0 (1/4 = 0.01₂):
    // run 0, the next lane the rarer symbol
    const { reader, bits } = fixed(Array(1).fill(0));
    assert.equal(runLanes(4, [{ mask: 15n, probability: fraction(3n, 4n) }], reader), 0n);
    assert.equal(bits(), 8);
    // bits 1111 1111 then zeros: the first walk runs past level 2 (…), so at least one lane keeps the likelier 1
    const other = fixed([0xff, 0, 0, 0]);
    assert.notEqual(runLanes(4, [{ mask: 15n, probability: fraction(3n, 4n) }], other.reader), 0n);
  });
});

describe("subsets", () => {
  it("unrankSubset: the colex order of the doc example", () => {
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5].map((r) => unrankSubset(BigInt(r), 4, 2)),
      [
        [0, 1],
        [0, 2],
        [1, 2],
        [0, 3],
        [1, 3],
        [2, 3],
      ],
    );
    assert.throws(() => unrankSubset(6n, 4, 2), /not the rank of a 2-subset of 4/);
  });
  it("unranking inverts ranking (every 3-subset of 9)", () => {
    for (let r = 0n; r < binomial(9, 3); r++) {
      const members = unrankSubset(r, 9, 3);
      assert.equal(members.reduce((rank, c, i) => rank + binomial(c, i + 1), 0n), r);
    }
  });
  it("refuses k outside [0, n]", () => {
    assert.throws(() => uniformSubset(3, 4, fixed([]).reader), /cannot choose 4 of 3/);
  });
});

describe("bits vectors", () => {
  for (const c of V.bits.knuth_yao) {
    it(`knuth_yao ${c.case} (${c.bytes || "no bytes"})`, () => {
      const { reader, source, bits } = fixed(fromHex(c.bytes));
      const walk = new KnuthYao(c.groups.map((g: any) => ({ count: BigInt(g.count), probability: parseFraction(g.probability) })));
      assert.equal(walk.sample(reader), c.group);
      assert.equal(String(walk.member), c.member); // a Number, or a bigint when the walk went on with bigints
      assert.equal(bits(), c.bits);
      assert.equal(source.remaining, 0);
    });
  }
  for (const c of V.bits.runs) {
    it(`runs ${c.case} (${c.bits} bits)`, () => {
      const { reader, source, bits } = fixed(fromHex(c.bytes));
      const groups = c.groups.map((g: any) => ({ mask: BigInt(g.mask), probability: parseFraction(g.probability) }));
      const lanes = runLanes(c.width, groups, reader);
      assert.equal(lanes.toString(), c.lanes);
      assert.equal(toHex(lanesToPacked(lanes, c.width)), c.packed);
      assert.equal(bits(), c.bits);
      assert.equal(source.remaining, 0);
    });
  }
  for (const c of V.bits.subset) {
    it(`subset ${c.k} of ${c.n} (${c.bits} bits)`, () => {
      const { reader, source, bits } = fixed(fromHex(c.bytes));
      const members = uniformSubset(c.n, c.k, reader);
      assert.deepEqual(members, c.members);
      assert.equal(members.reduce((rank, m, i) => rank + binomial(m, i + 1), 0n).toString(), c.rank);
      assert.equal(bits(), c.bits);
      assert.equal(source.remaining, 0);
    });
  }
  it("every section has cases", () => {
    assert.ok(V.bits.knuth_yao.length >= 9 && V.bits.runs.length >= 7 && V.bits.subset.length >= 6);
  });
});
