/** Browser storage through the localStorage fallback (a Map-backed Storage); IndexedDB itself is not exercised in Node. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BrowserLedgerStorage, BrowserSpool, LocalStorageStore, openBrowserClient } from "../src/browser.js";
import { BudgetExceededError, PrivacyLedger, loadSpec, makeBudget } from "../src/index.js";

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
const store = () => new LocalStorageStore("t:", new MapStorage() as unknown as Storage);

describe("browser storage (localStorage fallback)", () => {
  it("the RAPPOR client is created once and reused", async () => {
    const s = store();
    const first = await openBrowserClient(s, RAPPOR);
    assert.deepEqual(await openBrowserClient(s, RAPPOR), first);
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
