/** The public API with the real CSPRNG: reports are well formed, and no source file uses Math.random. */
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import {
  NumericEncoder,
  loadSpec,
  makeEncoder,
  newRapporClient,
  parseJson,
  reportToBinary,
  reportToJson,
  twoPointTable,
} from "../src/index.js";

const V = JSON.parse(readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8"));
const spec = (id: string) => loadSpec(V.specs.cases.find((c: any) => c.id === id).canonical_json);

describe("CSPRNG encoders", () => {
  it("GRR reports a domain value", () => {
    const s = spec("grr/str");
    for (let n = 0; n < 50; n++) {
      const r = makeEncoder(s).encode("red");
      assert.ok(["red", "green", "blue"].includes(r.value as string));
      assert.equal(reportToBinary(r)[0], 1);
    }
  });
  it("OLH reports a seed in the seed space and a bucket in [0, g)", () => {
    const r = makeEncoder(spec("olh/explicit-g")).encode(3n);
    assert.ok(r.seed! >= 0n && r.seed! < 4611686011984936962n);
    assert.ok((r.value as bigint) >= 0n && (r.value as bigint) < 7n);
    assert.match(reportToJson(r), /^\{"v":1,"spec":"7601f75ca9a63687","seed":\d+,"value":\d\}$/);
  });
  it("RAPPOR: a fresh client has a 32-byte secret and a cohort; the PRR is memoized", () => {
    const s = spec("rappor/mmh3-wide");
    const client = newRapporClient(s);
    assert.equal(client.secret.length, 32);
    assert.ok(client.cohort >= 0 && client.cohort < 64);
    const r = makeEncoder(s, { client }).encode("hello");
    assert.equal(r.bits!.length, 13);
    const parsed = parseJson(reportToJson(r)) as any;
    assert.equal(parsed.cohort, BigInt(client.cohort));
  });
  it("numeric: Duchi reports ±C′", () => {
    const s = spec("duchi/default");
    const out = twoPointTable(s).outputs;
    for (let n = 0; n < 20; n++) assert.ok(out.includes(new NumericEncoder(s).encode(0.3).value as number));
  });
  it("values outside the domain are refused", () => {
    assert.throws(() => makeEncoder(spec("grr/str")).encode("purple"), /not in the domain/);
  });
});

describe("sources", () => {
  it("no Math.random in src/ (its subfolders included)", () => {
    const dir = new URL("../src/", import.meta.url);
    for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const name = relative(fileURLToPath(dir), join(entry.parentPath, entry.name));
      assert.doesNotMatch(readFileSync(join(fileURLToPath(dir), name), "utf8"), /Math\.random/, name);
    }
  });
});

describe("spec sanity", () => {
  it("refuses probabilities that give no privacy or no signal, when the spec is loaded", () => {
    assert.throws(() => loadSpec('{"mechanism":"grr","domain":["a","b","c"],"epsilon":1.0,"p":"1/3"}'), /p must exceed 1\/d = 1\/3/);
    assert.throws(() => loadSpec('{"mechanism":"oue","domain":["a","b"],"epsilon":1.0,"p":"1/4","q":"1/2"}'), /p must exceed q/);
    // refused by loadSpec as Python refuses it (it loaded, and only its encoder refused it)
    assert.throws(
      () => loadSpec('{"mechanism":"rappor","num_bits":8,"num_hashes":2,"f":"1/2","p":"3/4","q":"1/4"}'),
      /^RangeError: rappor needs p < q \(IRR\), got p=3\/4, q=1\/4$/,
    );
  });
  it("refuses unknown mechanisms and fields", () => {
    assert.throws(() => loadSpec('{"mechanism":"nope"}'), /unknown mechanism/);
    assert.throws(() => loadSpec('{"mechanism":"grr","domain":[1,2],"epsilon":1.0,"p":"3/4","x":1}'), /unknown fields/);
  });
});
