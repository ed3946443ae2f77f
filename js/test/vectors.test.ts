/** Cross-language vectors (../tests/vectors/vectors.json and numeric_tables.json): every section, nothing skipped. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { sha256 } from "@noble/hashes/sha2.js";
import { nativeShake256 } from "../src/node.js";
import {
  nobleShake256,
  type JsonObject,
  floatText,
  fromHex,
  loadSpec,
  parseJson,
  toHex,
  utf8,
  valueBytes,
  type Value,
  bloomPositions,
  lhBucket,
  lhCoefficients,
  lhCollisionProbability,
  fractionText,
  LH_PRIME,
  LH_SEED_SPACE,
  mmh3Digest,
  mmh3x64128,
  positionsToPacked,
  toBase64,
  type Report,
  reportToBinary,
  reportToJson,
  FixedSource,
  fraction,
  lanesToPacked,
  parseFraction,
  randbelow,
  randbits,
  sampleLanes,
  makeEncoder,
  sketchPosition,
  RapporEncoder,
  PRFStream,
  prfInput,
  type Spec,
  NumericEncoder,
  type NumericTable,
  tableDigest,
  twoPointTable,
} from "../src/index.js";
import { md5 } from "@noble/hashes/legacy.js";

const TEXT = readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8");
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const V: any = JSON.parse(TEXT); // plain reading, for everything but values
// The same file read with Python's number model (1.0 is a float, 1 an int): for encoded values.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const P: any = parseJson(TEXT);
// The full tables the numeric section abbreviates (by spec id), as the collector serves them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const TABLES: any = JSON.parse(readFileSync(new URL("../../tests/vectors/numeric_tables.json", import.meta.url), "utf8"));

describe("format", () => {
  it("is 1", () => assert.equal(V.format, 1));
});

describe("float_text", () => {
  for (const c of V.float_text) {
    it(c.text, () => {
      const x = new DataView(fromHex(c.bits).buffer).getFloat64(0, false);
      assert.equal(floatText(x), c.text);
    });
  }
});

describe("value_bytes", () => {
  for (const c of V.value_bytes) {
    it(c.value_json, () => assert.equal(toHex(valueBytes(parseJson(c.value_json) as Value)), c.bytes));
  }
});

describe("specs", () => {
  for (const c of V.specs.cases) {
    it(`cases ${c.id}`, () => {
      assert.equal(toHex(sha256(utf8(c.canonical_json))), c.sha256);
      const spec = loadSpec(c.canonical_json, c.fingerprint);
      assert.equal(spec.canonicalJson, c.canonical_json);
      assert.equal(spec.fingerprint, c.fingerprint);
      assert.equal(spec.mechanism, c.mechanism);
    });
  }
  for (const c of V.specs.from_text) {
    if (c.server_only) {
      // p (or q, g) left out: the server calibrates it from ε (libm exp); the client must refuse, not guess
      it(`from_text ${c.input_text} is refused (server only: ${c.calibrated.join(", ")})`, () => {
        assert.throws(() => loadSpec(c.input_text), /calibrated from epsilon/);
        const spec = loadSpec(c.canonical_json, c.fingerprint); // the server's canonical spec loads
        assert.equal(spec.canonicalJson, c.canonical_json);
      });
      continue;
    }
    it(`from_text ${c.input_text}`, () => {
      const spec = loadSpec(c.input_text);
      assert.equal(spec.canonicalJson, c.canonical_json);
      assert.equal(spec.fingerprint, c.fingerprint);
    });
  }
  it("some from_text cases are server only", () => {
    assert.ok(V.specs.from_text.filter((c: any) => c.server_only).length >= 2);
  });
  it("refuses a spec that needs calibration, with a clear error", () => {
    assert.throws(() => loadSpec('{"mechanism":"grr","domain":[1,2],"epsilon":1}'), /calibrated from epsilon/);
  });
  it("refuses a wrong fingerprint", () => {
    assert.throws(() => loadSpec(V.specs.cases[0].canonical_json, "0000000000000000"), /fingerprint/);
  });
});

describe("bloom", () => {
  for (const c of V.bloom.mmh3_x64_128) {
    it(`mmh3 seed ${c.seed} data ${c.data}`, () => {
      assert.equal(toHex(mmh3Digest(fromHex(c.data), c.seed)), c.digest);
      const [h1, h2] = mmh3x64128(fromHex(c.data), c.seed);
      assert.equal(h1.toString(), c.h1);
      assert.equal(h2.toString(), c.h2);
    });
  }
  for (const c of V.bloom.md5) {
    it(`md5 ${c.data}`, () => assert.equal(toHex(md5(fromHex(c.data))), c.digest));
  }
  V.bloom.positions.forEach((c: any, i: number) => {
    it(`positions ${c.hash} k=${c.num_bits} h=${c.num_hashes} cohort ${c.cohort} ${JSON.stringify(c.value)}`, () => {
      const data = valueBytes(P.bloom.positions[i].value as Value);
      assert.deepEqual(bloomPositions(data, c.cohort, c.num_hashes, c.num_bits, c.hash), c.positions);
    });
  });
});

describe("olh", () => {
  it("constants", () => {
    assert.equal(LH_PRIME, BigInt(V.olh.prime));
    assert.equal(LH_SEED_SPACE.toString(), V.olh.seed_space);
    for (const [g, p] of Object.entries(V.olh.collision_probability)) {
      assert.equal(fractionText(lhCollisionProbability(BigInt(g))), p);
    }
  });
  for (const c of V.olh.seeds) {
    it(`seed ${c.seed}`, () => {
      const seed = BigInt(c.seed);
      assert.deepEqual(lhCoefficients(seed), [BigInt(c.a), BigInt(c.b)]);
      for (const [g, buckets] of Object.entries(c.buckets)) {
        assert.deepEqual(V.olh.indices.map((x: number) => lhBucket(seed, x, BigInt(g))), buckets);
      }
    });
  }
});

describe("bit_packing", () => {
  for (const c of V.bit_packing) {
    it(`${c.num_bits} bits ${JSON.stringify(c.positions)}`, () => {
      const packed = positionsToPacked(c.positions, c.num_bits);
      assert.equal(toHex(packed), c.hex);
      assert.equal(toBase64(packed), c.base64);
    });
  }
});

/** A report from its JSON line (the test's reader: integers stay bigint, floats stay floats). */
function reportOf(line: string): Report {
  const d = parseJson(line) as JsonObject;
  const r: Report = { spec: d.spec as string };
  if (d.cohort !== undefined) r.cohort = Number(d.cohort);
  if (d.seed !== undefined) r.seed = d.seed as bigint;
  if (d.value !== undefined) r.value = d.value as string | bigint | number;
  if (d.bits !== undefined) r.bits = Uint8Array.from(Buffer.from(d.bits as string, "base64"));
  if (d.client !== undefined) r.client = d.client as string;
  if (d.group !== undefined) r.group = d.group as string;
  return r;
}

describe("reports", () => {
  for (const c of V.reports) {
    it(c.json, () => {
      const report = reportOf(c.json);
      assert.equal(reportToJson(report), c.json);
      assert.equal(toHex(reportToBinary(report)), c.binary);
    });
  }
});

describe("samplers", () => {
  for (const c of V.samplers.randbelow) {
    it(`randbelow ${c.case} n=${c.n}`, () => {
      const source = new FixedSource(fromHex(c.bytes));
      assert.equal(randbelow(BigInt(c.n), source).toString(), c.result);
      assert.deepEqual(source.reads, c.reads);
      assert.equal(source.remaining, 0);
    });
  }
  for (const c of V.samplers.randbits) {
    it(`randbits k=${c.k}`, () => {
      const source = new FixedSource(fromHex(c.bytes));
      assert.equal(randbits(c.k, source).toString(), c.result);
      assert.deepEqual(source.reads, c.reads);
    });
  }
  for (const c of V.samplers.lanes) {
    it(`lanes ${c.case}`, () => {
      const source = new FixedSource(fromHex(c.bytes));
      const groups = c.groups.map((g: any) => ({ mask: BigInt(g.mask), probability: parseFraction(g.probability) }));
      const lanes = sampleLanes(c.width, groups, source);
      assert.equal(lanes, BigInt(c.lanes));
      assert.equal(toHex(lanesToPacked(lanes, c.width)), c.packed);
      assert.deepEqual(source.reads, c.reads);
      assert.equal(source.remaining, 0);
    });
  }
});

const SPECS = new Map<string, Spec>(V.specs.cases.map((c: any) => [c.id, loadSpec(c.canonical_json, c.fingerprint)]));

describe("prr", () => {
  V.prr.forEach((c: any, i: number) => {
    it(`${c.spec} cohort ${c.cohort} ${JSON.stringify(c.value)}`, () => {
      const spec = SPECS.get(c.spec)!;
      assert.equal(spec.fingerprint, c.fingerprint);
      const encoder = new RapporEncoder(spec, { secret: fromHex(c.secret), cohort: c.cohort });
      const value = P.prr[i].value as Value;
      assert.deepEqual(encoder.truePositions(value), c.true_positions);
      assert.equal(toHex(positionsToPacked(c.true_positions, Number(spec.fields.num_bits))), c.true_bits);
      assert.equal(toHex(encoder.memoKey(value)), c.memo_key);
      if (c.prf_parts) {
        const parts = encoder.prfParts(value);
        assert.deepEqual(parts.map(toHex), c.prf_parts);
        assert.equal(toHex(prfInput(...parts)), c.prf_input);
        const total = c.prf_reads.reduce((a: number, b: number) => a + b, 0);
        assert.equal(toHex(new PRFStream(...parts).read(total)), c.prf_bytes);
      }
      const width = Number(spec.fields.num_bits);
      assert.equal(toHex(lanesToPacked(encoder.permanentBits(value), width)), c.prr_bits);
      // the same permanent response with Node's native SHAKE-256 (the default here) and the browser's noble one
      for (const shake of [nativeShake256, nobleShake256]) {
        const other = new RapporEncoder(spec, { secret: fromHex(c.secret), cohort: c.cohort }, undefined, shake);
        assert.equal(toHex(lanesToPacked(other.permanentBits(value), width)), c.prr_bits);
      }
    });
  });
});

/** The numeric vector of a spec id as a table: the whole table from numeric_tables.json when the vectors abbreviate it. */
function numericTable(id: string): NumericTable {
  const n = V.numeric.find((x: any) => x.spec === id);
  if (n.full_table === undefined) return n as NumericTable;
  assert.equal(n.full_table, "numeric_tables.json");
  const full = TABLES.tables[id];
  assert.equal(full.fingerprint, SPECS.get(id)!.fingerprint);
  assert.equal(full.digest, n.digest);
  return full as NumericTable;
}

describe("numeric", () => {
  for (const n of V.numeric) {
    const spec = SPECS.get(n.spec)!;
    it(`${n.spec} (${n.kind})`, () => {
      const table = numericTable(n.spec);
      assert.equal(spec.fields.low, n.low);
      assert.equal(spec.fields.high, n.high);
      if (n.kind === "two-point") {
        assert.equal(spec.fields.p, n.p);
        // C' = 1/(2p - 1) rounded from the exact fraction
        assert.deepEqual(twoPointTable(spec).outputs, n.outputs);
        return;
      }
      assert.equal(tableDigest(table), n.digest);
      assert.equal(table.outputs.length, n.num_outputs);
    });
  }
});

describe("sketch", () => {
  for (const c of P.sketch) {
    it(`${c.spec} ${String(c.value)}`, () => {
      const positions = c.positions.map((_: unknown, j: number) => sketchPosition(c.value as Value, j, Number(c.salt), Number(c.m)));
      assert.deepEqual(positions, c.positions.map(Number));
    });
  }
});

describe("encodings", () => {
  V.encodings.forEach((c: any, i: number) => {
    const spec = SPECS.get(c.spec)!;
    const numeric = V.numeric.some((n: any) => n.spec === c.spec);
    it(`${c.spec} ${JSON.stringify(c.value)}`, () => {
      const table = numeric ? numericTable(c.spec) : undefined;
      assert.equal(spec.fingerprint, c.fingerprint);
      const source = new FixedSource(fromHex(c.bytes));
      const client = c.secret === undefined ? undefined : { secret: fromHex(c.secret), cohort: c.cohort };
      // a record case's grid tables (c.tables), by attribute name, as the collector serves them
      const encoder = table ? new NumericEncoder(spec, table, source) : makeEncoder(spec, { source, client, tables: c.tables });
      const report = encoder.encode(P.encodings[i].value as Value);
      assert.equal(reportToJson(report), c.report_json);
      if (c.report_binary === undefined) assert.throws(() => reportToBinary(report), /has no binary form/);
      else assert.equal(toHex(reportToBinary(report)), c.report_binary);
      assert.deepEqual(source.reads, c.reads);
      assert.equal(source.remaining, 0);
    });
  });
});
