/**
 * Specs Python refuses (tests/vectors/vectors.json `invalid_specs`, one field out of range): loadSpec refuses
 * each one too, with Python's message (the constructors' range checks, in each family's privacy module).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { type JsonObject, loadSpec, parseJson } from "../src/index.js";

interface InvalidSpec {
  id: string;
  input_json: string;
  domain_size?: number;
  error: string;
  match: string;
}

const TEXT = readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8");
const CASES = (JSON.parse(TEXT) as { invalid_specs: InvalidSpec[] }).invalid_specs;

function specOf(c: InvalidSpec): JsonObject {
  const data = parseJson(c.input_json) as JsonObject;
  if (c.domain_size !== undefined) data.domain = Array.from({ length: c.domain_size }, (_, i) => BigInt(i));
  return data;
}

describe("invalid specs: refused as Python refuses them", () => {
  it("has cases", () => assert.ok(CASES.length > 0));
  for (const c of CASES) {
    it(c.id, () => {
      assert.throws(
        () => loadSpec(specOf(c)),
        (error: unknown) => {
          assert.ok(error instanceof RangeError, `${c.id}: not a RangeError: ${String(error)}`);
          assert.equal(error.message, c.error, `${c.id}: not Python's message`);
          return true;
        },
      );
    });
  }
});
