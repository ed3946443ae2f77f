/** LOLOHA in TypeScript: the privacy facts, the PRF memo and pool index of a client, its ledger streams. */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  BudgetedEncoder,
  type JsonObject,
  LolohaEncoder,
  MemoryLedgerStorage,
  PrivacyLedger,
  add,
  div,
  divInt,
  epsilonBoundOfRatio,
  loadSpec,
  makeBudget,
  makeEncoder,
  mul,
  ONE,
  parseFraction,
  privacyFacts,
  sub,
  streamParameters,
} from "../src/index.js";
import { openClientEncoder } from "../src/node.js";

const V = JSON.parse(readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8"));
const CASES: { id: string; canonical_json: string }[] = V.specs.cases.filter((c: { id: string }) => c.id.startsWith("loloha/"));
const CLIENT = { secret: new Uint8Array(32).fill(3), cohort: 0 };

describe("loloha", () => {
  it("has vectors", () => assert.equal(CASES.length, 3));

  for (const c of CASES) {
    it(`${c.id}: one report's ratio is the chain's A/B, the memo's p1/q1, g memo keys`, () => {
      const spec = loadSpec(c.canonical_json);
      const f = spec.fields as JsonObject;
      const [p1, p2, g] = [parseFraction(f.p1 as string), parseFraction(f.p2 as string), f.g as bigint];
      const [q1, q2] = [divInt(sub(ONE, p1), g - 1n), divInt(sub(ONE, p2), g - 1n)];
      const a = add(mul(p1, p2), mul(sub(ONE, p1), q2));
      const b = add(mul(q1, p2), mul(sub(ONE, q1), q2));
      const facts = privacyFacts(f);
      assert.deepEqual(facts.ratio, div(a, b));
      assert.deepEqual(facts.permanentRatio, div(p1, q1));
      assert.equal(facts.memoValues, g);
    });
  }

  it("a client's pool index and memos depend on its secret only; round 2 is fresh", () => {
    const spec = loadSpec(CASES[1].canonical_json); // g = 2, pool of 64
    const first = makeEncoder(spec, { client: CLIENT }) as LolohaEncoder;
    const again = new LolohaEncoder(spec, CLIENT);
    assert.equal(first.seedIndex, again.seedIndex);
    assert.ok(first.seedIndex >= 0 && first.seedIndex < 64);
    for (const v of ["a", "b", "c"]) {
      assert.equal(first.permanentBucket(v), again.permanentBucket(v));
      assert.deepEqual(first.memoKey(v), new TextEncoder().encode(String(first.bucket(v))));
    }
    const values = new Set<bigint>();
    for (let i = 0; i < 64; i++) {
      const report = first.encode("a");
      assert.equal(report.seed, BigInt(first.seedIndex));
      values.add(report.value as bigint);
    }
    assert.equal(values.size, 2); // both buckets reported: round 2 draws anew (P[one bucket 64 times] < 1e-9)
  });

  it("the ledger charges each bucket's stream min(r·ε₁, ε∞)", async () => {
    const spec = loadSpec(CASES[1].canonical_json);
    const storage = new MemoryLedgerStorage();
    const encoder = new BudgetedEncoder(makeEncoder(spec, { client: CLIENT }), new PrivacyLedger(storage, makeBudget(100)));
    for (let i = 0; i < 10; i++) await encoder.encode("a");
    const streams = Object.values(storage.data!.streams);
    assert.equal(streams.length, 1);
    assert.equal(streams[0].reports, 10);
    const f = spec.fields as JsonObject;
    const inf = f.epsilon_inf as number;
    assert.ok(10 * (f.epsilon as number) > inf && epsilonBoundOfRatio(privacyFacts(f).permanentRatio!) <= inf);
  });

  it("r reports of one bucket are L-GRR's over g: the ledger charges Python's memo_report_epsilon from a bucket's second report", async () => {
    // Python: LOLOHA(domain=list("abcdef"), epsilon=0.2, epsilon_inf=3.0, g=5, pool_size=64).memo_report_epsilon
    const spec = loadSpec(
      '{"domain":["a","b","c","d","e","f"],"epsilon":0.2,"epsilon_inf":3.0,"format":1,"g":5,"mechanism":"loloha","p1":"15383205298130006975/18446744073709551616","p2":"4479040366852076251/18446744073709551616","pool_size":64}',
    );
    const params = streamParameters(spec);
    assert.ok(Math.abs(params.epsilon - 0.20424570878003262) <= 1e-9 * 0.2043, `${params.epsilon}`);
    assert.equal(params.linear, true);
    assert.equal(params.epsilon_first, 0.2); // one report: ε₁
    for (const c of CASES) assert.equal(streamParameters(loadSpec(c.canonical_json)).epsilon, (loadSpec(c.canonical_json).fields as JsonObject).epsilon); // ε′ = ε₁
    const ledger = new PrivacyLedger(new MemoryLedgerStorage(), makeBudget(100));
    const encoder = makeEncoder(spec, { client: CLIENT }) as LolohaEncoder;
    assert.equal(await ledger.charge(spec, encoder.memoKey("a")), 0.2);
    const two = await ledger.charge(spec, encoder.memoKey("a"));
    assert.ok(Math.abs(two - 2 * params.epsilon) <= 1e-12, `${two}`); // 2ε′ = 0.4085, not ε∞ = 3
  });

  it("a persistent client (node): its state file is made once, with no cohort, and keeps its function and memos", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ldp-loloha-"));
    const spec = loadSpec(CASES[0].canonical_json);
    const first = (await openClientEncoder(join(dir, "client.json"), spec)) as LolohaEncoder;
    const again = (await openClientEncoder(join(dir, "client.json"), spec)) as LolohaEncoder;
    assert.equal(first.client.cohort, 0);
    assert.equal(first.seedIndex, again.seedIndex);
    for (const v of [0, 7, 29]) assert.equal(first.permanentBucket(v), again.permanentBucket(v));
  });
});
