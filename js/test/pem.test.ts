/** PEM in TypeScript: the bit encoding, prefix keys and rounds of tests/vectors/vectors.json, and clear errors. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import {
  FixedSource,
  bigIntToBytesBE,
  loadSpec,
  makeEncoder,
  pemPrefixLengths,
  pemValueBits,
  prefixKey,
  toHex,
  treeHistPrefixLengths,
} from "../src/index.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const V: any = JSON.parse(readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8"));

describe("pem vectors", () => {
  const maxLength: number = V.pem.max_length;
  for (const c of V.pem.values) {
    it(`bits and prefix keys of ${JSON.stringify(c.value)}`, () => {
      const bits = pemValueBits(c.value, maxLength);
      assert.equal(toHex(bigIntToBytesBE(bits, maxLength)), c.bits);
      for (const p of c.prefixes) {
        const prefix = bits >> BigInt(8 * maxLength - p.length);
        const size = Math.ceil(p.length / 8);
        assert.equal(toHex(bigIntToBytesBE(prefix << BigInt(8 * size - p.length), size)), p.prefix_bytes);
        assert.equal(prefixKey(prefix, p.length), BigInt(p.key));
      }
    });
  }
  for (const [k, r] of Object.entries(V.pem.rounds) as [string, { eta: number; lengths: number[] }][]) {
    it(`prefix lengths of top_k ${k}, eta ${r.eta}`, () => {
      assert.deepEqual(pemPrefixLengths(maxLength, Number(k), r.eta), r.lengths);
    });
  }
});

describe("pem values", () => {
  const spec = loadSpec(V.specs.cases.find((c: { id: string }) => c.id === "pem/default").canonical_json);
  const encoder = makeEncoder(spec, { source: new FixedSource(new Uint8Array(64)) });
  for (const [value, message] of [
    [5n, /values are strings/],
    ["a\u0000b", /U\+0000/],
    ["abcdefghé", /is 10 bytes of UTF-8, above max_length=8/],
    ["a\ud800", /not encodable as UTF-8/],
  ] as const) {
    it(`refuses ${JSON.stringify(String(value))}`, () => {
      assert.throws(() => encoder.encode(value), message);
    });
  }
});

describe("treehist", () => {
  it("has m + 1 groups: prefixes of 1..m bits, then the whole value", () => {
    assert.deepEqual(treeHistPrefixLengths(1), [1, 2, 3, 4, 5, 6, 7, 8, 8]);
  });
});
