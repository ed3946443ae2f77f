/**
 * The two paths of the per-report samplers: the plain ones of src/reportbits.ts (what `ldp-client/frequency`
 * bundles) and the fast ones of src/reportbits-fast.ts (what the main and node entries install) read the same
 * bits and give the same outcomes: the shared vectors' reports through both, the same draws on pooled readers
 * (where the fast walk takes 8 bits at once) against bit-by-bit references, and the bundles hold the fast
 * module only where it is installed.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { after, describe, it } from "node:test";
import { build } from "esbuild";
import * as frequency from "../src/frequency.js";
import {
  BitReader,
  FixedSource,
  type Fraction,
  PooledSource,
  RUN_CAP,
  type Samplers,
  type Value,
  binaryDigits,
  binomial,
  bitReader,
  coin,
  fraction,
  fromHex,
  loadSpec,
  makeEncoder,
  parseJson,
  reportToJson,
  runLaneWords,
  runTable,
  sampleLaneWords,
  toHex,
  uniform,
  uniformBig,
  uniformSubset,
  unrankSubset,
  useSamplers,
} from "../src/index.js";
import { fastSamplers } from "../src/reportbits-fast.js";

const TEXT = readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8");
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const V: any = JSON.parse(TEXT);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const P: any = parseJson(TEXT);

after(() => useSamplers(fastSamplers)); // the main entry's, as loaded

/** `run()` with the plain samplers (null) or the fast ones installed; the fast ones are back after. */
function using<T>(samplers: Samplers | null, run: () => T): T {
  useSamplers(samplers);
  try {
    return run();
  } finally {
    useSamplers(fastSamplers);
  }
}

/** The same bytes each time (xorshift32 from `seed`): `next()` the next byte. */
function xorshift(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x & 255;
  };
}

/** A source of fixed bytes, then xorshift bytes: one byte a read (`pooled` false) or a `PooledSource` (read 64 bytes at a time by `bitReader`). */
function stream(seed: number, pooled: boolean, first: Uint8Array = new Uint8Array(0)) {
  const next = xorshift(seed);
  let served = 0;
  const fill = (out: Uint8Array) => {
    for (let i = 0; i < out.length; i++, served++) out[i] = served < first.length ? first[served] : next();
  };
  if (pooled) return new PooledSource(4096, fill);
  return {
    read: (n: number) => {
      const out = new Uint8Array(n);
      fill(out);
      return out;
    },
  };
}

/** The next 64 bits of a source's shared reader, as hex: equal after two runs when they left it at the same bit (bar a 2^-64 chance). */
const next64 = (source: { read: (n: number) => Uint8Array }) => toHex(Uint8Array.from({ length: 8 }, () => Array.from({ length: 8 }, () => bitReader(source).bit()).reduce((a, b) => 2 * a + b, 0)));

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const SPECS = new Map<string, any>(V.specs.cases.map((c: any) => [c.id, loadSpec(c.canonical_json, c.fingerprint)]));
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const ENCODINGS = V.encodings.map((c: any, i: number) => ({ ...c, index: i })).filter((c: any) => !V.numeric.some((n: any) => n.spec === c.spec));

describe("plain and fast samplers: the vectors' reports", () => {
  it("the frequency entry with the plain samplers and the main entry with the fast ones write each vector's report from exactly its bytes", () => {
    let covered = 0;
    for (const c of ENCODINGS) {
      const spec = SPECS.get(c.spec);
      const value = P.encodings[c.index].value as Value;
      const client = c.secret === undefined ? undefined : { secret: fromHex(c.secret), cohort: c.cohort };
      for (const [samplers, make] of [
        [null, frequency.FREQUENCY_MECHANISMS.includes(spec.mechanism) ? frequency.makeEncoder : makeEncoder],
        [fastSamplers, makeEncoder],
      ] as const) {
        const source = new FixedSource(fromHex(c.bytes));
        const report = using(samplers, () => make(spec, { source, client, tables: c.tables }).encode(value));
        assert.equal(reportToJson(report), c.report_json, `${c.spec} #${c.index} (${samplers ? "fast" : "plain"})`);
        assert.deepEqual(source.reads, c.reads);
        assert.equal(source.remaining, 0);
      }
      covered++;
    }
    assert.ok(covered >= 100, `only ${covered} encodings`);
  });

  it("on a pooled source (the 8-bit walks), each vector's encoder writes the same reports and leaves its reader at the same bit on both paths", () => {
    for (const c of ENCODINGS) {
      const spec = SPECS.get(c.spec);
      const value = P.encodings[c.index].value as Value;
      const client = c.secret === undefined ? undefined : { secret: fromHex(c.secret), cohort: c.cohort };
      const run = (samplers: Samplers | null) =>
        using(samplers, () => {
          const source = stream(c.index + 1, true, fromHex(c.bytes));
          const encoder = makeEncoder(spec, { source, client, tables: c.tables });
          const reports = Array.from({ length: 5 }, () => reportToJson(encoder.encode(value)));
          return [...reports, next64(source)];
        });
      assert.deepEqual(run(fastSamplers), run(null), `${c.spec} #${c.index}`);
    }
  });
});

/** The lanes of `runLaneWords` drawn one lane a step, as the `bits` spec says. */
function lanesOneByOne(width: number, groups: { mask: Uint32Array; probability: Fraction }[], reader: BitReader): Uint32Array {
  const out = new Uint32Array((width + 31) >>> 5);
  for (const { mask, probability: t } of groups) {
    const rarerIsOne = 2n * t.num <= t.den;
    const table = runTable(rarerIsOne ? t : fraction(t.den - t.num, t.den));
    let likelier = 0;
    let rare = false;
    for (let w = 0; w < out.length; w++) {
      for (let m = mask[w]; m; ) {
        const lane = m & -m;
        m ^= lane;
        if (!likelier && !rare) {
          likelier = table.sample(reader);
          rare = likelier < RUN_CAP;
        }
        let one = rarerIsOne;
        if (likelier) {
          likelier--;
          one = !one;
        } else rare = false;
        if (one) out[w] |= lane;
      }
    }
  }
  return out;
}

/** The spec's unranking, one exact step at a time (C(c − 1, i) = C(c, i)·(c − i)/c, C(c − 1, i − 1) = C(c, i)·i/c). */
function unrankOneByOne(rank: bigint, n: number, k: number): number[] {
  const members: number[] = [];
  let c = n - 1;
  let binom = binomial(c, k);
  for (let i = k; i > 0; i--) {
    while (binom > rank) {
      binom = (binom * BigInt(c - i)) / BigInt(c);
      c--;
    }
    members.unshift(c);
    rank -= binom;
    binom = c ? (binom * BigInt(i)) / BigInt(c) : 0n;
    c--;
  }
  return members;
}

/** A range of 2^64 outcomes, past the Number walk (as the local hashing seeds'). */
const LH_SEED_SPACE_LIKE = 2n ** 64n;

/** `draw(reader)` on the plain path with a one-byte reader and on both paths with pooled readers, over the same bytes: the three results and the next 64 bits. */
function threeWays<T>(seed: number, draw: (reader: BitReader) => T): void {
  const runs = ([[null, false], [null, true], [fastSamplers, true]] as const).map(([samplers, pooled]) =>
    using(samplers, () => {
      const source = stream(seed, pooled);
      return [draw(bitReader(source)), next64(source)];
    }),
  );
  assert.deepEqual(runs[0], runs[1], "plain: one-byte reader against pooled reader");
  assert.deepEqual(runs[2], runs[1], "fast against plain, pooled readers");
}

describe("plain and fast samplers: the same draws and bits", () => {
  it("walks (run tables, coins, uniform members) take 8 bits at once on a pooled reader and leave it where bit-by-bit walks do", () => {
    const tables = [fraction(1n, 4n), fraction(269n, 1000n), fraction(1n, 2n), fraction(1n, 1000n)].map(runTable);
    const sizes = [3, 10, 255, 1000, 1023];
    threeWays(12345, (reader) =>
      Array.from({ length: 1000 }, (_, i) => [
        tables[i % tables.length].sample(reader),
        coin(fraction(BigInt(1 + (i % 7)), 9n), reader),
        uniform(sizes[i % sizes.length], reader), // members past 0: groups of n outcomes
      ]),
    );
  });

  it("runLaneWords (a run's lanes a word at a time on the fast path) gives the lanes of one lane a step", () => {
    const bytes = xorshift(99);
    const word = () => ((bytes() << 24) | (bytes() << 16) | (bytes() << 8) | bytes()) >>> 0;
    const probabilities = [fraction(1n, 4n), fraction(3n, 4n), fraction(269n, 1000n), fraction(1n, 2n), fraction(999n, 1000n), fraction(0n), fraction(1n)];
    const cases = Array.from({ length: 120 }, (_, i) => {
      const width = 1 + ((i * 37) % 200);
      const words = (width + 31) >>> 5;
      const full = Uint32Array.from({ length: words }, (_, w) => (w < words - 1 || width % 32 === 0 ? 0xffffffff : 2 ** (width % 32) - 1));
      const mask = i % 3 === 0 ? full.map((x) => x & ~(1 << i % 32)) : full.map((x) => x & word()); // near-full or scattered lanes
      const rest = mask.map((x, w) => ~x & full[w]);
      return {
        width,
        groups: [
          { mask, probability: probabilities[i % probabilities.length] },
          { mask: rest, probability: probabilities[(i + 3) % probabilities.length] },
        ],
      };
    });
    threeWays(777, (reader) => cases.map(({ width, groups }) => [...runLaneWords(width, groups, reader)]));
    const reference = stream(777, false);
    const expected = cases.map(({ width, groups }) => [...lanesOneByOne(width, groups, bitReader(reference))]);
    const source = stream(777, true);
    assert.deepEqual(
      cases.map(({ width, groups }) => [...runLaneWords(width, groups, bitReader(source))]),
      expected,
    );
    assert.equal(next64(source), next64(reference));
  });

  it("unrankSubset (doubles checked exactly near ties on the fast path) gives the spec's members on both paths", () => {
    const bytes = xorshift(2024);
    // C(1023, 511) and C(1100, 550) are past 2^1000 (the fast path's rank shifted a member), the others below it
    const cases: [number, number][] = [[1023, 256], [1023, 511], [1100, 550], [200, 100], [64, 1], [64, 63], [30, 15], [10, 10], [10, 0], [1, 1]];
    for (const [n, k] of cases) {
      const total = binomial(n, k);
      const ranks = [0n, 1n, total - 1n, total / 2n, total / 3n];
      for (let i = 0; i < 4; i++) ranks.push(BigInt(`0x${toHex(Uint8Array.from({ length: 140 }, bytes))}`) % total);
      for (let j = 1; j <= Math.min(k, 5); j++) ranks.push(binomial(n - j, k) % total, (binomial(n - j, k) + total - 1n) % total); // at a step's edge
      for (const rank of new Set(ranks.map((r) => r % total))) {
        const expected = unrankOneByOne(rank, n, k);
        for (const samplers of [null, fastSamplers]) assert.deepEqual(using(samplers, () => unrankSubset(rank, n, k)), expected, `rank ${rank} of C(${n}, ${k})`);
      }
    }
  });

  it("uniformBig (a wide range's leading zero digits as one integer on the fast path) and uniformSubset draw the spec's walk", () => {
    const n = 2n ** 200n + 12345n;
    threeWays(31, (reader) => Array.from({ length: 20 }, () => uniformBig(n, reader)));
    threeWays(32, (reader) => [uniformBig(LH_SEED_SPACE_LIKE, reader), uniformBig(7n, reader), uniformSubset(1024, 73, reader), uniformSubset(100, 99, reader)]);
    const source = stream(31, true);
    const slow = new BitReader(stream(31, false));
    for (let i = 0; i < 20; i++) {
      // the spec's walk over [(n, 1/n)] one level a step: d = 2d + bit; a level whose digit of 1/n is 1 ends at d < n, else d −= n
      let d = 0n;
      let rest = 1n;
      let member = -1n;
      while (member < 0n) {
        d = 2n * d + BigInt(slow.bit());
        rest *= 2n;
        if (rest >= n) {
          rest -= n;
          if (d < n) member = d;
          else d -= n;
        }
      }
      assert.equal(uniformBig(n, bitReader(source)), member);
    }
  });
});

describe("plain and fast samplers: the keyed streams' lanes", () => {
  /** A source of `first`, then xorshift bytes from `seed`, that records the size of every read. */
  const recording = (seed: number, first: number[] = []) => {
    const next = xorshift(seed);
    const reads: number[] = [];
    let served = 0;
    const read = (n: number) => {
      reads.push(n);
      return Uint8Array.from({ length: n }, () => (served < first.length ? first[served++] : (served++, next())));
    };
    return { read, reads };
  };
  const draw = (samplers: Samplers | null, seed: number, calls: [number, WordGroup[]][], first: number[] = []) =>
    using(samplers, () => {
      const source = recording(seed, first);
      const lanes = calls.map(([width, groups]) => [...sampleLaneWords(width, groups, source)]);
      return { lanes, reads: source.reads, next: toHex(source.read(8)) };
    });
  type WordGroup = { mask: Uint32Array; probability: Fraction };

  it("sampleLaneWords (digits kept per probability, planes read in place on the fast path) gives the same lanes and reads", () => {
    const bytes = xorshift(4242);
    const word = () => ((bytes() << 24) | (bytes() << 16) | (bytes() << 8) | bytes()) >>> 0;
    const big = 1n << 60n;
    // the same Fraction objects across calls (the fast path keeps their digits), long expansions, 0 and 1, den past 2^52
    const probabilities = [fraction(1n, 4n), fraction(3n, 4n), fraction(1n, 3n), fraction(269n, 1000n), fraction(0n), fraction(1n), { num: big / 3n, den: big + 1n }, fraction(999n, 1000n)];
    const calls: [number, WordGroup[]][] = Array.from({ length: 150 }, (_, i) => {
      const width = i % 50 === 7 ? 0 : 1 + ((i * 53) % 260); // widths across word and byte edges, and 0
      const words = (width + 31) >>> 5;
      const full = Uint32Array.from({ length: words }, (_, w) => (w < words - 1 || width % 32 === 0 ? 0xffffffff : 2 ** (width % 32) - 1));
      const mask = full.map((x) => x & word());
      const groups = [
        { mask, probability: probabilities[i % probabilities.length] },
        { mask: mask.map((x, w) => ~x & full[w]), probability: probabilities[(i + 3) % probabilities.length] },
      ];
      if (i % 4 === 0) groups.push({ mask: new Uint32Array(words), probability: probabilities[(i + 5) % probabilities.length] }); // an empty group
      return [width, groups];
    });
    assert.deepEqual(draw(fastSamplers, 5, calls), draw(null, 5, calls));
    // a lane undecided for 70 rounds (its planes equal 1/3's digits, 0101…), then decided: past the digits kept
    const third = [[8, [{ mask: Uint32Array.of(255), probability: probabilities[2] }]]] as [number, WordGroup[]][];
    const planes = Array.from({ length: 70 }, (_, r) => (r % 2 ? 255 : 0));
    for (const calls2 of [third, [...third, ...third, ...calls.slice(0, 10)]]) assert.deepEqual(draw(fastSamplers, 6, calls2, planes), draw(null, 6, calls2, planes));
    const once = draw(fastSamplers, 6, third, planes);
    assert.ok(once.reads.length >= 6, `${once.reads.length} blocks of 12 planes read`); // 70 rounds undecided: 6 blocks
  });

  it("sampleLaneWords refuses a probability outside [0, 1] on both paths before reading a byte", () => {
    for (const samplers of [null, fastSamplers]) {
      const source = recording(1);
      assert.throws(() => using(samplers, () => sampleLaneWords(8, [{ mask: Uint32Array.of(255), probability: { num: 5n, den: 4n } }], source)), { message: "probability 5/4 outside [0, 1]" });
      assert.deepEqual(source.reads, []);
    }
  });
});

describe("plain and fast samplers: binary digits", () => {
  it("binaryDigits (on Numbers for denominators to 2^52 on the fast path) gives the same digits and refusals", () => {
    const big = 1n << 52n;
    const cases = [fraction(0n, 5n), fraction(1n), fraction(1n, 3n), fraction(269n, 1000n), { num: big - 1n, den: big }, { num: 12345n, den: big }, { num: big, den: big + 1n }, { num: 7n * big, den: 9n * big + 1n }];
    for (const t of cases) {
      const digits = (samplers: Samplers | null) => using(samplers, () => binaryDigits(t));
      const [plain, fast] = [digits(null), digits(fastSamplers)];
      assert.deepEqual(Array.from({ length: 130 }, fast), Array.from({ length: 130 }, plain), `${t.num}/${t.den}`);
    }
    for (const t of [{ num: 2n, den: 1n }, { num: -1n, den: 3n }, { num: 0n, den: 0n }])
      assert.throws(() => using(fastSamplers, () => binaryDigits(t)), { message: `probability ${t.num}/${t.den} outside [0, 1]` });
  });
});

describe("plain and fast samplers: bundles", () => {
  const inputs = async (entry: string) =>
    Object.keys(
      (
        await build({
          entryPoints: [`src/${entry}`],
          absWorkingDir: fileURLToPath(new URL("..", import.meta.url)),
          bundle: true,
          minify: true,
          format: "esm",
          platform: "neutral",
          external: ["node:*"],
          write: false,
          metafile: true,
          logLevel: "silent",
        })
      ).metafile.inputs,
    );

  it("the frequency entry leaves reportbits-fast.ts out; the main and node entries bundle it", async () => {
    assert.ok(!(await inputs("frequency.ts")).includes("src/reportbits-fast.ts"));
    assert.ok((await inputs("index.ts")).includes("src/reportbits-fast.ts"));
    assert.ok((await inputs("node.ts")).includes("src/reportbits-fast.ts"));
  });
});
