/**
 * dBitFlip in TypeScript: the memoized client (its state file kept across
 * restarts), the memo keys the ledger charges, and the privacy facts. The
 * byte-for-byte agreement with Python is in vectors.test.ts.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { DBitFlipEncoder, sampledBuckets } from "../src/dbitflip.js";
import { type JsonObject, loadSpec, makeEncoder, privacyFacts, toHex } from "../src/index.js";
import { openClientEncoder } from "../src/node.js";

// Python: DBitFlip(domain=("a", ..., "h"), epsilon=1.0, d=3) and the same with gamma="1/10"
const SPEC = loadSpec('{"d":3,"domain":["a","b","c","d","e","f","g","h"],"epsilon":1.0,"format":1,"gamma":"0","mechanism":"dbitflip","p":"11482347978973015967/18446744073709551616"}');
const CLIENT = { secret: new Uint8Array(32).fill(9), cohort: 0 };

describe("dBitFlip", () => {
  it("γ = 0: one client reports one value identically; d + 1 memo keys; the sampled buckets are its secret's", () => {
    const encoder = makeEncoder(SPEC, { client: CLIENT }) as DBitFlipEncoder;
    const values = ["a", "b", "c", "d", "e", "f", "g", "h"];
    for (const v of values) assert.deepEqual(encoder.encode(v), encoder.encode(v));
    const keys = new Set(values.map((v) => toHex(encoder.memoKey(v))));
    assert.equal(keys.size, 4);
    assert.deepEqual(encoder.buckets, sampledBuckets(SPEC, CLIENT.secret));
    assert.equal(encoder.buckets.length, 3);
  });

  it("a client opened from its state file is the same client after a restart", async () => {
    const state = join(mkdtempSync(join(tmpdir(), "ldp-dbitflip-")), "client.json");
    const first = (await openClientEncoder(state, SPEC)) as DBitFlipEncoder;
    const again = (await openClientEncoder(state, SPEC)) as DBitFlipEncoder;
    assert.deepEqual(again.buckets, first.buckets);
    for (const v of ["a", "e", "h"]) assert.deepEqual(again.encode(v), first.encode(v));
  });

  it("privacy facts: (p′/q′)², (p/q)², min(d + 1, b) memo keys", () => {
    const facts = privacyFacts(SPEC.fields as JsonObject);
    assert.deepEqual(facts.ratio, facts.permanentRatio); // γ = 0
    assert.equal(facts.memoValues, 4n);
    const gamma = loadSpec(
      '{"d":3,"domain":[0,1,2,3,4,5,6,7,8,9],"epsilon":2.0,"format":1,"gamma":"1/10","mechanism":"dbitflip","p":"7275610059691632037/9223372036854775808"}',
    );
    const g = privacyFacts(gamma.fields as JsonObject);
    assert.ok(g.permanentRatio !== undefined && g.permanentRatio !== null);
    const ratio = Number(g.ratio!.num) / Number(g.ratio!.den);
    const permanent = Number(g.permanentRatio.num) / Number(g.permanentRatio.den);
    assert.ok(permanent > ratio);
  });
});
