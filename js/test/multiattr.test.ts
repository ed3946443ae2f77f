/**
 * Multi-attribute specs: the TypeScript client reads them as Python writes them
 * (the same canonical JSON and fingerprint, each attribute a spec of its own)
 * and checks the record's claim: the product of the sampled attributes' exact
 * ratios (smp), or the RS+FD ratio, and by composition of the attributes'
 * stated ε where an attribute's ratio is in a server table (a numeric one).
 * The specs below are Python's (`MultiAttribute(...).to_json()`); the record
 * encoder's reports are checked byte for byte by the vectors (vectors.test.ts).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readFileSync } from "node:fs";
import { loadSpec, makeEncoder, parseJson, reportToJson, type JsonObject, type Value } from "../src/index.js";
import { type Fraction, add, compare, div, fraction } from "../src/fraction.js";
import { maxRatioOfSums } from "../src/privacy/multiattr.js";

const SMP = "{\"attributes\":[{\"domain\":[\"l\",\"m\",\"w\"],\"epsilon\":1.0,\"mechanism\":\"grr\",\"name\":\"os\",\"p\":\"10627480729818062551/18446744073709551616\"},{\"domain\":[\"x\",\"y\"],\"epsilon\":1.0,\"mechanism\":\"oue\",\"name\":\"b\",\"p\":\"1/2\",\"q\":\"4961093570831984269/18446744073709551616\"},{\"epsilon\":1.0,\"grid\":256,\"high\":100.0,\"low\":0.0,\"mechanism\":\"piecewise\",\"name\":\"ms\"}],\"epsilon\":1.0,\"format\":1,\"mechanism\":\"multi-attribute\",\"method\":\"smp\",\"sample\":1}";
const RSFD = "{\"attributes\":[{\"domain\":[\"a\",\"b\",\"c\"],\"epsilon\":1.8172396554020775,\"mechanism\":\"grr\",\"name\":\"g0\",\"p\":\"870164092053976567/1152921504606846976\"},{\"domain\":[\"a\",\"b\",\"c\"],\"epsilon\":1.8172396554020775,\"mechanism\":\"grr\",\"name\":\"g1\",\"p\":\"870164092053976567/1152921504606846976\"},{\"domain\":[\"a\",\"b\",\"c\"],\"epsilon\":1.8172396554020775,\"mechanism\":\"grr\",\"name\":\"g2\",\"p\":\"870164092053976567/1152921504606846976\"}],\"epsilon\":1.8172396554020775,\"format\":1,\"mechanism\":\"multi-attribute\",\"method\":\"rsfd-grr\",\"sample\":1}";

function edited(text: string, edit: (fields: JsonObject) => void): JsonObject {
  const fields = parseJson(text) as JsonObject;
  edit(fields);
  return fields;
}

describe("multi-attribute specs", () => {
  it("load with Python's canonical JSON and fingerprint", () => {
    for (const [text, fingerprint] of [[SMP, "3599ec251de56407"], [RSFD, "f75bc8c1b4e82d1b"]]) {
      const spec = loadSpec(text);
      assert.equal(spec.canonicalJson, text);
      assert.equal(spec.fingerprint, fingerprint);
    }
  });

  it("refuse a record claim below what the attributes give", () => {
    assert.throws(() => loadSpec(edited(SMP, (f) => { f.epsilon = 0.5; })), /attributes' epsilon add up to 1/);
    assert.throws(() => loadSpec(edited(SMP, (f) => { f.sample = 3n; })), /attributes' epsilon add up to 3/);
    assert.throws(() => loadSpec(edited(RSFD, (f) => { f.epsilon = 1.0; })), /epsilon/);
  });

  it("check RS+FD over SUE and OUE by the exact ratio of sums (Dinkelbach), -r fake data included", () => {
    const vectors = JSON.parse(readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8"));
    for (const id of ["multi-attribute/rsfd-sue-z", "multi-attribute/rsfd-oue-r"]) {
      const input = vectors.specs.cases.find((c: any) => c.id === id).input_json;
      const spec = loadSpec(input);
      assert.equal(spec.mechanism, "multi-attribute");
      // a claim 1e-6 below Python's certified record ε is refused: the TS ratio is the exact one, not a bound
      assert.throws(() => loadSpec(edited(input, (f) => { f.epsilon = Number(f.epsilon) - 1e-6; })), /exact probabilities give epsilon=1\.4/);
    }
    // against every choice: the maximum of Σu/Σw over one pair per part
    let seed = 7;
    const next = (): bigint => BigInt(1 + ((seed = (seed * 1103515245 + 12345) % 2147483648) % 19));
    for (let trial = 0; trial < 40; trial++) {
      const parts: [Fraction, Fraction][][] = [];
      for (let j = 0; j < 1 + (trial % 3); j++) {
        parts.push(Array.from({ length: 1 + ((trial + j) % 3) }, () => [fraction(next()), fraction(next())] as [Fraction, Fraction]));
      }
      let best = fraction(0n);
      const walk = (j: number, u: Fraction, w: Fraction): void => {
        if (j === parts.length) {
          if (compare(div(u, w), best) > 0) best = div(u, w);
          return;
        }
        for (const [a, b] of parts[j]) walk(j + 1, add(u, a), add(w, b));
      };
      walk(0, fraction(0n), fraction(0n));
      assert.deepEqual(maxRatioOfSums(parts), best);
    }
  });

  it("refuse a record claim above what the attributes give, as Python does (its stated ε must match)", () => {
    // a numeric attribute's ratio is in the server's table: its stated ε bounds it, so ε above their sum is refused
    assert.throws(() => loadSpec(edited(SMP, (f) => { f.epsilon = 2.0; })), /states epsilon=2 but its attributes' epsilon add up to 1/);
    assert.equal(loadSpec(edited(SMP, (f) => { f.epsilon = 1.0 + 1e-12; })).mechanism, "multi-attribute");
  });
  it("check every attribute as a spec of its own", () => {
    const lowered = edited(SMP, (f) => { ((f.attributes as JsonObject[])[0] as JsonObject).epsilon = 0.5; });
    assert.throws(() => loadSpec(lowered), /grr claims epsilon=0.5/);
    const unnamed = edited(SMP, (f) => { delete ((f.attributes as JsonObject[])[1] as JsonObject).name; });
    assert.throws(() => loadSpec(unnamed), /attributes\[1\] needs a non-empty 'name'/);
  });

  it("encode records of categorical attributes, and numeric ones with the server's tables (digest-checked)", () => {
    assert.throws(() => makeEncoder(loadSpec(SMP)), /attribute "ms" \(piecewise\) needs the server's sampling table/);
    const encoder = makeEncoder(loadSpec(RSFD));
    for (let i = 0; i < 20; i++) {
      const report = encoder.encode({ g0: "a", g1: "b", g2: "c" } as unknown as Value);
      assert.deepEqual(report.extra!.map(([name]) => name), ["a0_value", "a1_value", "a2_value"]);
    }
    assert.throws(() => encoder.encode({ g0: "a", g1: "b", g2: "zz" } as unknown as Value), /attribute "g2"/);
    assert.throws(() => encoder.encode(["a", "b"] as unknown as Value), /record has 2 values, the spec 3 attributes/);
    // the vectors' record of grr, piecewise, hybrid and duchi (spl), with its tables as the collector serves them
    const vectors = JSON.parse(readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8"));
    const input = vectors.specs.cases.find((c: any) => c.id === "multi-attribute/numeric").input_json;
    const tables = vectors.encodings.find((c: any) => c.spec === "multi-attribute/numeric").tables;
    const spec = loadSpec(input);
    const numeric = makeEncoder(spec, { tables });
    const report = numeric.encode({ os: "mac", ms: 20, kb: 0.5, load: 1n } as unknown as Value);
    assert.deepEqual(report.extra!.map(([name]) => name), ["a0_value", "a1_value", "a2_value", "a3_value"]);
    assert.match(reportToJson(report), /"a3_value":-?\d+\.\d+/); // floats as Python writes them
    assert.throws(() => numeric.encode({ os: "mac", ms: "20", kb: 0.5, load: 1 } as unknown as Value), /attribute "ms": numeric value must be a number/);
    assert.throws(() => numeric.encode({ os: "mac", ms: Number.NaN, kb: 0.5, load: 1 } as unknown as Value), /attribute "ms"/);
    assert.throws(() => makeEncoder(spec, { tables: { ms: tables.ms } }), /attribute "kb" \(hybrid\) needs the server's sampling table/);
    assert.throws(() => makeEncoder(spec, { tables: { ...tables, os: tables.ms } }), /a table is given for "os"/);
    const forged = { ...tables, ms: { ...tables.ms, outputs: tables.ms.outputs.map((y: number, i: number) => (i === 0 ? y - 1 : y)) } };
    assert.throws(() => makeEncoder(spec, { tables: forged }), /attribute "ms": piecewise table does not match its digest/);
    const undigested = { ...tables, kb: { ...tables.kb, digest: undefined } };
    assert.throws(() => makeEncoder(spec, { tables: undigested }), /attribute "kb": its table has no digest/);
  });
});
