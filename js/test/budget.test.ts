/** The budget against Python's decisions: the `budget` section of ../tests/vectors/vectors.json. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import {
  BudgetExceededError,
  MemoryLedgerStorage,
  PrivacyLedger,
  RapporEncoder,
  type Spec,
  type Value,
  fsum,
  heterogeneousEpsilon,
  loadSpec,
  makeBudget,
  memoKeyCost,
  parseJson,
  rapporEpsilons,
  worstCaseMemoizedCost,
} from "../src/index.js";

const TEXT = readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8");
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const V: any = JSON.parse(TEXT);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const P: any = parseJson(TEXT); // values with Python's number model (3 is an int)
const SPECS = new Map<string, Spec>([
  ...V.specs.cases.map((c: { id: string; canonical_json: string }) => [c.id, loadSpec(c.canonical_json)] as [string, Spec]),
  ...Object.entries(V.budget.specs as Record<string, string>).map(([id, text]) => [id, loadSpec(text)] as [string, Spec]),
]);

/** Within a relative 1e-9 (the vectors round totals to 10 significant digits). */
function close(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected)), `${what}: ${actual} vs Python ${expected}`);
}

describe("budget: RAPPOR ε₁ and ε∞ (exactly Python's doubles)", () => {
  for (const c of V.budget.rappor_epsilons) {
    it(c.spec, () => {
      const { one, inf } = rapporEpsilons(SPECS.get(c.spec)!);
      assert.equal(one, c.epsilon_one);
      assert.equal(inf, c.epsilon_inf);
    });
  }
});

describe("budget: optimal composition of pure pieces (heterogeneous_epsilon)", () => {
  for (const c of V.budget.compositions) {
    const pieces: number[] = c.runs.flatMap(([eps, n]: [number, number]) => new Array<number>(n).fill(eps));
    it(`${JSON.stringify(c.runs)} at delta ${c.delta}`, () => close(heterogeneousEpsilon(pieces, c.delta), c.epsilon, "epsilon"));
  }
});

describe("budget: ledgers take Python's decisions", () => {
  V.budget.ledgers.forEach((ledgerCase: any, k: number) => {
    it(ledgerCase.id, async () => {
      const b = ledgerCase.budget;
      const ledger = new PrivacyLedger(new MemoryLedgerStorage(), makeBudget(b.epsilon, b.delta ?? 0, b.composition ?? "basic"));
      for (const [i, step] of ledgerCase.charges.entries()) {
        const spec = SPECS.get(step.spec)!;
        const value = P.budget.ledgers[k].charges[i].value as Value;
        let outcome = "charged";
        try {
          const memoKey = spec.mechanism === "rappor" ? new RapporEncoder(spec, { secret: new Uint8Array(32), cohort: 0 }).memoKey(value) : null;
          await ledger.charge(spec, memoKey);
        } catch (error) {
          if (error instanceof BudgetExceededError) outcome = "refused";
          else if (error instanceof RangeError) outcome = "parameter_error";
          else throw error;
        }
        const where = `${ledgerCase.id} charge ${i + 1} (${step.spec} ${JSON.stringify(step.value)})`;
        assert.equal(outcome, step.outcome, where);
        close(await ledger.committed(), step.committed, `${where} committed`);
        close(await ledger.spent(), step.spent, `${where} spent`);
      }
    });
  });
});

describe("budget rules", () => {
  it("fsum is exactly rounded (Python's math.fsum): ten 0.1 make 1", () => {
    assert.equal(fsum(new Array<number>(10).fill(0.1)), 1);
    assert.equal(fsum([1e100, 1, -1e100]), 1);
    assert.equal(fsum([]), 0);
  });
  it("makeBudget: basic or optimal in any case, delta in [0, 1), epsilon > 0", () => {
    assert.equal(makeBudget(1, 1e-6, "Optimal").composition, "optimal");
    assert.throws(() => makeBudget(1, 0, "advanced"), /basic, optimal/);
    assert.throws(() => makeBudget(0), /epsilon/);
    assert.throws(() => makeBudget(1, 1), /delta/);
  });
});

describe("budget: memoized costs (Python's memo_key_cost, worst_case_memoized_cost)", () => {
  for (const c of V.budget.memo_costs) {
    it(`${c.reports} reports, eps ${c.epsilon_one} (first ${c.epsilon_first}), eps_inf ${c.epsilon_inf}, ${c.values} keys, linear ${c.linear}`, () => {
      const first = c.epsilon_first ?? null; // ε₁ of a key's first report, below the per-report ε (a chain's ε′)
      const cost = memoKeyCost(c.reports, c.epsilon_one, c.epsilon_inf, c.linear, first);
      const worst = worstCaseMemoizedCost(c.reports, c.epsilon_one, c.epsilon_inf, c.values, c.linear, first);
      if (c.key_cost === null) assert.equal(cost, Infinity);
      else close(cost, c.key_cost, "key cost");
      if (c.worst_case === null) assert.equal(worst, Infinity);
      else close(worst, c.worst_case, "worst case");
    });
  }
});

describe("budget: ledger files as Python writes them", () => {
  for (const c of V.budget.ledger_files) {
    it(c.id, async () => {
      const storage = new MemoryLedgerStorage();
      storage.data = structuredClone(c.file);
      if (c.committed === null) {
        await assert.rejects(PrivacyLedger.open(storage), /does not compute yet; charge it with the Python client/);
        return;
      }
      const ledger = (await PrivacyLedger.open(storage))!;
      close(await ledger.committed(), c.committed, "committed");
      close(await ledger.spent(), c.spent, "spent");
    });
  }

  it("a stream that is not linear keeps the file at version 2, every stream stating linear", async () => {
    const c = V.budget.ledger_files.find((f: { id: string }) => f.id === "v2/capped-stream");
    const storage = new MemoryLedgerStorage();
    storage.data = structuredClone(c.file);
    const ledger = (await PrivacyLedger.open(storage))!;
    await ledger.charge(SPECS.get("budget/grr-0.1")!, null);
    assert.equal(storage.data!.format, "ldp-privacy-ledger/2");
    assert.ok(Object.values(storage.data!.streams).every((s) => typeof s.linear === "boolean"));
    const fresh = new PrivacyLedger(new MemoryLedgerStorage(), makeBudget(10));
    await fresh.charge(SPECS.get("budget/grr-0.1")!, null);
  });

  it("version 1 stays version 1, without linear (RAPPOR is linear)", async () => {
    const storage = new MemoryLedgerStorage();
    const ledger = new PrivacyLedger(storage, makeBudget(100));
    const rappor = [...SPECS.values()].find((s) => s.mechanism === "rappor")!;
    await ledger.charge(rappor, new Uint8Array([1, 2]));
    await ledger.charge(rappor, new Uint8Array([1, 2]));
    assert.equal(storage.data!.format, "ldp-privacy-ledger/1");
    assert.ok(Object.values(storage.data!.streams).every((s) => !("linear" in s)));
    const bad = structuredClone(storage.data!);
    Object.values(bad.streams)[0].linear = true; // linear in a version-1 file: not written by any ldp
    const other = new MemoryLedgerStorage();
    other.data = bad;
    await assert.rejects(PrivacyLedger.open(other), /is corrupt/);
  });
});
