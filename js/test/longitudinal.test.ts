/** The longitudinal chains l-grr, l-osue, l-oue, l-sue: memo, claims and the ledger's charge (docs/longitudinal/chains.md). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LongitudinalEncoder, MemoryLedgerStorage, PrivacyLedger, loadSpec, makeBudget, makeEncoder, parseJson, streamParameters, toHex } from "../src/index.js";
import type { JsonObject } from "../src/index.js";

// Python's canonical specs (ldp.specs.longitudinal) and their memo_report_epsilon
const L_OUE =
  '{"domain":["a","b","c","d","e"],"epsilon":1.0,"epsilon_inf":4.0,"format":1,"mechanism":"l-oue","p1":"1/2","p2":"1/2","q1":"165893506013354227/9223372036854775808","q2":"2611755612806323709/18446744073709551616"}';
const L_GRR =
  '{"domain":["a","b","c","d","e"],"epsilon":0.2,"epsilon_inf":3.0,"format":1,"mechanism":"l-grr","p1":"15383205298130006975/18446744073709551616","p2":"4479040366852076251/18446744073709551616","q1":"3063538775579544641/73786976294838206464","q2":"13967703706857475365/73786976294838206464"}';
const L_OSUE =
  '{"domain":["a","b","c"],"epsilon":1.0,"epsilon_inf":2.0,"format":1,"mechanism":"l-osue","p1":"1/2","p2":"7409947029683332555/9223372036854775808","q1":"549726448845090125/4611686018427387904","q2":"1813425007171443253/9223372036854775808"}';

describe("longitudinal chains", () => {
  it("one client's memo is the same for every report of a value, and another client's differs", () => {
    for (const text of [L_GRR, L_OSUE]) {
      const spec = loadSpec(text);
      const a = makeEncoder(spec) as LongitudinalEncoder;
      const b = makeEncoder(spec) as LongitudinalEncoder;
      const memo = (e: LongitudinalEncoder, v: string) => (spec.mechanism === "l-grr" ? String(e.memoIndex(v)) : toHex(new Uint8Array(e.memoWords(v).buffer)));
      const values = spec.fields.domain as string[];
      assert.deepEqual(values.map((v) => memo(a, v)), values.map((v) => memo(a, v)));
      // 40 independent clients whose memos of every value are all equal: the likeliest memo tuple has
      // probability at most p1^k (L-GRR: 0.834^5 = 0.40; L-OSUE: below 1/2), so at most 0.41^39 < 1e-15
      const tuples = new Set([a, b, ...Array.from({ length: 38 }, () => makeEncoder(spec) as LongitudinalEncoder)].map((e) => values.map((v) => memo(e, v)).join()));
      assert.ok(tuples.size > 1, "every client drew the same memo");
      assert.deepEqual(a.memoKey("b"), new TextEncoder().encode("1"));
    }
  });
  it("the ledger charges Python's memo_report_epsilon: r reports of one memo may cost more than r·ε₁", () => {
    for (const [text, expected] of [
      [L_OUE, 1.0544541288467977],
      [L_GRR, 0.20424570878003262],
      [L_OSUE, 1.0],
    ] as const) {
      const params = streamParameters(loadSpec(text));
      assert.ok(Math.abs(params.epsilon - expected) <= 1e-9 * expected, `${params.epsilon} vs ${expected}`);
      assert.equal(params.memoized, true);
      assert.equal(params.linear, true); // Python's memo_linear: r reports of one memo cost min(r·ε′, ε∞)
      assert.equal(params.values, (parseJson(text) as JsonObject).mechanism === "l-osue" ? 3 : 5);
    }
  });
  it("two reports of one value of L-GRR (ε′ = 0.2042, ε∞ = 3) cost 2ε′, not ε∞, as Python's ledger charges", async () => {
    const spec = loadSpec(L_GRR);
    const encoder = makeEncoder(spec) as LongitudinalEncoder;
    const ledger = new PrivacyLedger(new MemoryLedgerStorage(), makeBudget(1));
    await ledger.charge(spec, encoder.memoKey("a"));
    await ledger.charge(spec, encoder.memoKey("a"));
  });
  it("a value's first report of L-GRR costs ε₁ = 0.2, its second brings it to 2ε′ (Python's epsilon_first)", async () => {
    const spec = loadSpec(L_GRR);
    assert.equal(streamParameters(spec).epsilon_first, 0.2);
    const encoder = makeEncoder(spec) as LongitudinalEncoder;
    const ledger = new PrivacyLedger(new MemoryLedgerStorage(), makeBudget(1));
    assert.equal(await ledger.charge(spec, encoder.memoKey("a")), 0.2);
    assert.equal(await ledger.committed(), 0.2);
    const two = await ledger.charge(spec, encoder.memoKey("a"));
    assert.ok(Math.abs(two - 2 * 0.20424570878003262) <= 1e-9, `${two}`);
  });
  it("a budget of 2 over one value of L-OUE (ε₁ = 1, ε∞ = 4) refuses the second report (2 × 1.054 > 2)", async () => {
    const spec = loadSpec(L_OUE);
    const encoder = makeEncoder(spec) as LongitudinalEncoder;
    const ledger = new PrivacyLedger(new MemoryLedgerStorage(), makeBudget(2));
    await ledger.charge(spec, encoder.memoKey("a"));
    await assert.rejects(ledger.charge(spec, encoder.memoKey("a")), /budget/);
  });
  it("a chain whose probabilities lose their form, or whose epsilon_inf is edited, is refused", () => {
    const fields = parseJson(L_OSUE) as JsonObject;
    assert.throws(() => loadSpec({ ...fields, q2: "1/3" }), /the SUE round needs q2 = 1 - p2 and p2 > 1\/2/);
    assert.throws(() => loadSpec({ ...fields, epsilon_inf: 1.5 }), /epsilon_inf/);
  });
});
