/** Browser storage through the localStorage fallback (a Map-backed Storage); IndexedDB itself is not exercised in Node. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BrowserLedgerStorage, BrowserSpool, LocalStorageStore, openBrowserClient } from "../src/browser.js";
import { BudgetExceededError, type LongitudinalEncoder, PrivacyLedger, fromHex, loadSpec, makeBudget, makeEncoder, toHex } from "../src/index.js";

class MapStorage {
  private readonly map = new Map<string, string>();
  getItem(k: string): string | null {
    return this.map.get(k) ?? null;
  }
  setItem(k: string, v: string): void {
    this.map.set(k, v);
  }
  removeItem(k: string): void {
    this.map.delete(k);
  }
}

const RAPPOR = loadSpec('{"domain":null,"encoding":"bloom","f":"1/2","format":1,"hash":"mmh3","mechanism":"rappor","num_bits":16,"num_cohorts":4,"num_hashes":2,"p":"1/4","q":"3/4"}');
// GRR at ε = 1 (the canonical spec Python writes)
const GRR = loadSpec('{"domain":["a","b","c"],"epsilon":1.0,"format":1,"mechanism":"grr","p":"10627480729818062551/18446744073709551616"}');
// L-GRR over 8 values at ε₁ = 1, ε∞ = 2 (Python's canonical spec), and the memo Python's client derives
// from the secret 00 01 02 … 1f: make_encoder(spec, state=ClientState(spec.fingerprint, bytes(range(32)))).memo(v)
const L_GRR = loadSpec(
  '{"domain":["a","b","c","d","e","f","g","h"],"epsilon":1.0,"epsilon_inf":2.0,"format":1,"mechanism":"l-grr","p1":"9472756646864836623/18446744073709551616","p2":"8733138810307629517/18446744073709551616","q1":"8973987426844714993/129127208515966861312","q2":"1387657894771703157/18446744073709551616"}',
);
const PYTHON_MEMO = [2, 1, 7, 4, 2, 5, 2, 2];
const store = () => new LocalStorageStore("t:", new MapStorage() as unknown as Storage);

describe("browser storage (localStorage fallback)", () => {
  it("the RAPPOR client is created once and reused", async () => {
    const s = store();
    const first = await openBrowserClient(s, RAPPOR);
    assert.deepEqual(await openBrowserClient(s, RAPPOR), first);
  });
  it("a longitudinal chain's client holds the secret its memo is derived from: created once, the same memo after a reopen", async () => {
    const raw = new MapStorage();
    const s = new LocalStorageStore("t:", raw as unknown as Storage);
    const first = await openBrowserClient(s, L_GRR);
    const stored = raw.getItem(`t:state:${L_GRR.fingerprint}`);
    assert.deepEqual(JSON.parse(stored!), { secret: toHex(first.secret), cohort: 0 }); // no cohorts: 0
    const values = L_GRR.fields.domain as string[];
    const memo = (client: typeof first) => values.map((v) => (makeEncoder(L_GRR, { client }) as LongitudinalEncoder).memoIndex(v));
    const again = await openBrowserClient(s, L_GRR); // another page load: read, never re-drawn
    assert.deepEqual(again, first);
    assert.equal(raw.getItem(`t:state:${L_GRR.fingerprint}`), stored);
    assert.deepEqual(memo(again), memo(first));
    // the memo is Python's for the same secret: a state stored by either client gives the same memos
    raw.setItem(`t:state:${L_GRR.fingerprint}`, JSON.stringify({ secret: toHex(fromHex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")), cohort: 0 }));
    assert.deepEqual(memo(await openBrowserClient(s, L_GRR)), PYTHON_MEMO);
  });
  it("a stored client state that is not a 32-byte secret and a cohort of the spec is an error, kept, never re-drawn", async () => {
    const cases: [ReturnType<typeof loadSpec>, string, RegExp][] = [
      [L_GRR, '{"secret":"00","cohort":0}', /secret is not 32 bytes/],
      [L_GRR, `{"secret":"${"ab".repeat(32)}","cohort":1}`, /cohort is not an integer in \[0, 1\)/],
      [RAPPOR, `{"secret":"${"ab".repeat(32)}","cohort":4}`, /cohort is not an integer in \[0, 4\)/],
      [RAPPOR, `{"secret":"${"AB".repeat(32)}","cohort":0.5}`, /secret is not 32 bytes/],
      [L_GRR, "{not json", /not JSON/],
    ];
    for (const [spec, text, message] of cases) {
      const raw = new MapStorage();
      raw.setItem(`t:state:${spec.fingerprint}`, text);
      await assert.rejects(openBrowserClient(new LocalStorageStore("t:", raw as unknown as Storage), spec), message);
      assert.equal(raw.getItem(`t:state:${spec.fingerprint}`), text);
    }
  });
  it("the ledger persists across ledger objects", async () => {
    const s = store();
    await new PrivacyLedger(new BrowserLedgerStorage(s), makeBudget(2)).charge(GRR, null);
    const again = new PrivacyLedger(new BrowserLedgerStorage(s), makeBudget(2));
    await again.charge(GRR, null);
    await assert.rejects(again.charge(GRR, null), BudgetExceededError);
  });
  it("the spool keeps envelopes until removed, with a synchronous copy for beacons", async () => {
    const spool = new BrowserSpool(store());
    await spool.append(['{"id":"A"}', '{"id":"B"}']);
    assert.deepEqual(spool.cached, ['{"id":"A"}', '{"id":"B"}']);
    await spool.remove(new Set(["A"]));
    assert.deepEqual(await spool.load(), ['{"id":"B"}']);
  });
});
