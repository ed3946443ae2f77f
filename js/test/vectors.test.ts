/** Cross-language vectors (../tests/vectors/vectors.json): every section, or an explicit skip with the reason. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { sha256 } from "@noble/hashes/sha2.js";
import {
  type JsonObject,
  floatText,
  fromHex,
  loadSpec,
  parseJson,
  toHex,
  utf8,
  valueBytes,
  type Value,
} from "../src/index.js";

const TEXT = readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8");
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const V: any = JSON.parse(TEXT); // plain reading, for everything but values
// The same file read with Python's number model (1.0 is a float, 1 an int): for encoded values.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const P: any = parseJson(TEXT);

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
    const data = parseJson(c.input_text) as JsonObject;
    const calibrated = ["duchi", "stochastic-rounding", "grr", "binary-rr", "sue", "oue", "olh", "blh"].includes(
      String(data.mechanism).toLowerCase().replaceAll("_", "-"),
    ) && !("p" in data);
    const reason = "needs p calibrated from epsilon (libm exp): by design the client loads the server's spec";
    it(`from_text ${c.input_text}`, { skip: calibrated ? reason : false }, () => {
      const spec = loadSpec(c.input_text);
      assert.equal(spec.canonicalJson, c.canonical_json);
      assert.equal(spec.fingerprint, c.fingerprint);
    });
  }
  it("refuses a spec that needs calibration, with a clear error", () => {
    assert.throws(() => loadSpec('{"mechanism":"grr","domain":[1,2],"epsilon":1}'), /calibrated from epsilon/);
  });
  it("refuses a wrong fingerprint", () => {
    assert.throws(() => loadSpec(V.specs.cases[0].canonical_json, "0000000000000000"), /fingerprint/);
  });
});
