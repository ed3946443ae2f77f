/** 1BitMean (onebitmean): α-point rounding as Python's, memoized bits per grid point, the claim of both modes. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import {
  BudgetedEncoder,
  FixedSource,
  type JsonObject,
  MemoryLedgerStorage,
  OneBitMeanEncoder,
  PrivacyLedger,
  alphaPoint,
  dumpJson,
  loadSpec,
  makeBudget,
  makeEncoder,
  parseJson,
  privacyFacts,
} from "../src/index.js";

const V = JSON.parse(readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8"));
const canonical = (id: string): string => V.specs.cases.find((c: { id: string }) => c.id === id).canonical_json;

describe("onebitmean", () => {
  it("α-point rounding: the cases of Python's alpha_point docstring", () => {
    assert.deepEqual([alphaPoint(0.0, 4, 123), alphaPoint(1.0, 4, 0), alphaPoint(0.5, 4, 7)], [0, 4, 2]);
    assert.deepEqual([alphaPoint(0.3, 4, 0), alphaPoint(0.3, 4, 2 ** 32 - 1)], [1, 2]);
    // 1.2 steps: ⌊0.2·2^32⌋ α indices round up, the rest down
    const fine = Math.floor((0.3 * 4 - 1) * 2 ** 32);
    assert.equal(alphaPoint(0.3, 4, 2 ** 32 - fine - 1), 1);
    assert.equal(alphaPoint(0.3, 4, 2 ** 32 - fine), 2);
  });

  it("a client reports an unchanged grid point identically (γ = 0), and its memo key is the point", () => {
    const spec = loadSpec(canonical("onebitmean/alpha"));
    const client = { secret: new Uint8Array(32).fill(7), cohort: 0 };
    const encoder = makeEncoder(spec, { client }) as OneBitMeanEncoder;
    const days = Array.from({ length: 20 }, () => encoder.encode(37.5).value);
    assert.equal(new Set(days).size, 1);
    const again = makeEncoder(spec, { client }) as OneBitMeanEncoder;
    assert.equal(again.encode(37.5).value, days[0]);
    assert.ok(["3", "4"].includes(new TextDecoder().decode(encoder.memoKey!(37.5))));
    assert.equal(new TextDecoder().decode(encoder.memoKey!(100)), "8");
  });

  it("plain mode needs no client; text and booleans are refused as Python refuses them", () => {
    const spec = loadSpec(canonical("onebitmean/plain"));
    const encoder = makeEncoder(spec, { source: new FixedSource(new Uint8Array(64)) });
    assert.equal(encoder.encode(0).value, 0);
    assert.throws(() => makeEncoder(spec).encode("12"), /must be a number/);
    assert.throws(() => makeEncoder(spec).encode(true), /must be a number/);
    assert.throws(() => new OneBitMeanEncoder(loadSpec(canonical("onebitmean/alpha"))), /needs its client's state/);
  });

  it("the claim: one report keeps with γ + (1 − 2γ)p; γ ≥ 1/2, or γ without rounding, is refused", () => {
    const fields = parseJson(canonical("onebitmean/alpha-gamma")) as JsonObject;
    loadSpec(fields);
    assert.throws(() => loadSpec(dumpJson({ ...fields, epsilon: 0.7 })), /claims epsilon/);
    assert.throws(() => loadSpec(dumpJson({ ...fields, gamma: "1/2" })), /gamma must be below 1\/2/);
    const plain = parseJson(canonical("onebitmean/plain")) as JsonObject;
    assert.throws(() => loadSpec(dumpJson({ ...plain, gamma: "1/8" })), /gamma \(output perturbation of a memoized bit\) applies with rounding='alpha' only/);
  });

  it("privacy facts: memoized per grid point (s + 1 keys) only with α-point rounding", () => {
    const alpha = privacyFacts(loadSpec(canonical("onebitmean/alpha-gamma")).fields as JsonObject);
    assert.deepEqual([alpha.ratio, alpha.permanentRatio, alpha.memoValues], [{ num: 11n, den: 5n }, { num: 3n, den: 1n }, 17n]);
    const plain = privacyFacts(loadSpec(canonical("onebitmean/plain")).fields as JsonObject);
    assert.equal(plain.permanentRatio, undefined);
  });

  it("the budgeted encoder charges one stream per grid point the client visits", async () => {
    const spec = loadSpec(canonical("onebitmean/alpha"));
    const storage = new MemoryLedgerStorage();
    const client = { secret: new Uint8Array(32).fill(3), cohort: 0 };
    const encoder = new BudgetedEncoder(makeEncoder(spec, { client }), new PrivacyLedger(storage, makeBudget(100)));
    for (const value of [0, 0, 0, 100, 100]) await encoder.encode(value);
    const streams = Object.values(storage.data!.streams);
    assert.deepEqual(streams.map((s) => s.reports).sort(), [2, 3]);
  });
});
