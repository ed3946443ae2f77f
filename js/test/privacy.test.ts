/**
 * The per-family privacy facts (`src/privacy/`, dispatched by the generated
 * `mechanismPrivacy`) and what reads them: the claim check and the ledger's
 * generic memoized path (any memoized mechanism, any encoder with a memoKey).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import {
  BudgetedEncoder,
  EPSILON_LIMITS,
  type Encoder,
  type JsonObject,
  parseJson,
  MemoryLedgerStorage,
  PrivacyLedger,
  checkClaim,
  cohortsOf,
  isMemoizedSpec,
  newClient,
  epsilonBoundOfRatio,
  fraction,
  loadSpec,
  makeBudget,
  makeEncoder,
  mechanismPrivacy,
  memoizedEpsilons,
  privacyFacts,
  streamParameters,
} from "../src/index.js";

const V = JSON.parse(readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8"));
const CASES: { id: string; canonical_json: string; fingerprint: string; mechanism: string; memoized: boolean }[] = V.specs.cases.filter((c: { canonical_json?: string }) => c.canonical_json);

const RAPPOR = loadSpec('{"domain":null,"encoding":"bloom","f":"1/2","format":1,"hash":"mmh3","mechanism":"rappor","num_bits":16,"num_cohorts":4,"num_hashes":2,"p":"1/4","q":"3/4"}');
const BOOL = loadSpec('{"domain":null,"encoding":"boolean","f":"1/2","format":1,"hash":"mmh3","mechanism":"rappor","num_bits":1,"num_cohorts":1,"num_hashes":1,"p":"1/4","q":"3/4"}');
const BASIC = loadSpec('{"domain":["a","b","c"],"encoding":"basic","f":"1/2","format":1,"mechanism":"rappor","num_cohorts":1,"p":"1/4","q":"3/4"}');
const CLIENT = { secret: new Uint8Array(32).fill(7), cohort: 0 };

describe("privacy facts: one module per family, a generated dispatch", () => {
  it("every mechanism of the vectors has facts, with a permanent response exactly when the Python spec is memoized", () => {
    // memoized in the vectors: RAPPOR, dBitFlip, 1BitMean with α-point rounding and the specs that state an epsilon_inf
    assert.ok(CASES.some((c) => c.memoized) && CASES.some((c) => !c.memoized));
    for (const c of CASES) {
      const fields = loadSpec(c.canonical_json).fields as JsonObject;
      assert.equal(typeof c.memoized, "boolean", c.mechanism);
      assert.equal(privacyFacts(fields).permanentRatio !== undefined, c.memoized, c.mechanism);
      assert.equal(isMemoizedSpec(loadSpec(c.canonical_json)), c.memoized, c.mechanism);
    }
  });

  it("a mechanism with no privacy module is refused, naming it", () => {
    assert.equal(mechanismPrivacy({ mechanism: "no-such-mechanism" }), null);
    assert.throws(() => privacyFacts({ mechanism: "no-such-mechanism" }), /no-such-mechanism: this client cannot check its privacy claim/);
  });

  it("RAPPOR: the permanent response's ratio ((1 − f/2)/(f/2))^(2h) and the memo's size", () => {
    assert.deepEqual(privacyFacts(RAPPOR.fields as JsonObject).permanentRatio, fraction(81n)); // 3^(2·2)
    assert.deepEqual(privacyFacts(BOOL.fields as JsonObject).permanentRatio, fraction(3n));
    assert.deepEqual(
      [RAPPOR, BOOL, BASIC].map((s) => privacyFacts(s.fields as JsonObject).memoValues),
      [null, 2n, 3n],
    );
    assert.deepEqual(
      [RAPPOR, BOOL, BASIC].map((s) => streamParameters(s).values),
      [null, 2, 3],
    );
    assert.equal(memoizedEpsilons(RAPPOR).inf, epsilonBoundOfRatio(fraction(81n)));
    const noPermanent = loadSpec({ ...(BOOL.fields as JsonObject), f: "0" });
    assert.equal(privacyFacts(noPermanent.fields as JsonObject).permanentRatio, null);
    assert.equal(streamParameters(noPermanent).epsilon_cap, null);
  });

  it("RAPPOR whose reported bit can be certain is refused when loaded (as Python's Rappor)", () => {
    const certain = { ...(BOOL.fields as JsonObject), f: "0", p: "0" };
    assert.throws(() => loadSpec(certain), /rappor parameters give no single-report privacy \(a reported bit can be certain\); got f=0, p=0, q=3\/4/);
  });

  it("a memoized spec's stated epsilon_inf is checked against its permanent response", () => {
    const inf = memoizedEpsilons(RAPPOR).inf!;
    checkClaim({ ...(RAPPOR.fields as JsonObject), epsilon_inf: inf });
    assert.throws(() => checkClaim({ ...(RAPPOR.fields as JsonObject), epsilon_inf: 4 }), /rappor claims epsilon_inf=4\.0 but its exact probabilities give epsilon_inf=4\.39/);
    assert.throws(() => checkClaim({ ...(RAPPOR.fields as JsonObject), epsilon_inf: 5 }), /rappor states epsilon_inf=5\.0 .* the stated epsilon_inf must match them/);
    assert.throws(() => checkClaim({ ...(RAPPOR.fields as JsonObject), epsilon_inf: 800 }), /epsilon_inf=800 is above 700/);
    assert.throws(() => checkClaim({ ...(BOOL.fields as JsonObject), f: "0", epsilon_inf: 5 }), /permanent response is not randomized: epsilon_inf is unbounded/);
  });
});

describe("the ε limits come from the Python specs (generated EPSILON_LIMITS)", () => {
  it("a stated ε above its mechanism's limit is refused, saying why", () => {
    const grr = '{"domain":["a","b","c"],"epsilon":30.0,"format":1,"mechanism":"grr","p":"1/2"}';
    assert.throws(() => loadSpec(grr), /grr: epsilon=30 is above 23, the largest epsilon grr supports \(its smallest probability, about 1\/\(e\^epsilon \+ 1\)/);
    assert.equal(EPSILON_LIMITS.olh[0], 21);
    const olh = CASES.find((c) => c.mechanism === "olh")!;
    assert.equal(privacyFacts(loadSpec(olh.canonical_json).fields as JsonObject).maxEpsilon, 21);
  });

  it("a limit that depends on the grid is the server's: Laplace on grid 256 takes ε = 20 (above grid 1's 13.16), never above 700", () => {
    const laplace = { epsilon: 20.0, format: 1n, grid: 256n, high: 1.0, low: -1.0, mechanism: "laplace" };
    assert.equal(loadSpec(laplace).fields.epsilon, 20);
    assert.equal("laplace" in EPSILON_LIMITS, false);
    assert.equal(privacyFacts(loadSpec(laplace).fields as JsonObject).claimMatches, false); // Python's claim_matches_probabilities
    assert.equal(privacyFacts(BOOL.fields as JsonObject).claimMatches, undefined);
    assert.throws(() => loadSpec({ ...laplace, epsilon: 800.0 }), /laplace: epsilon=800 is above 700, the largest epsilon laplace supports \(e\^epsilon must be a finite double/);
  });

  it("RAPPOR's unstated ε₁ must be certifiable (ln of its ratio at most 700), as Python's", () => {
    const tiny = `1/${2n ** 1100n}`; // p* = 2^-1100: q*/p* alone is above e^700
    assert.throws(() => loadSpec({ ...(BOOL.fields as JsonObject), f: "0", p: tiny }), /rappor: epsilon_one=\S+ is above 700, the largest epsilon rappor supports/);
  });
});

describe("no shared module names a mechanism", () => {
  it("a memoized spec's client keeps a state; the cohorts are num_cohorts when the spec has them, else 1 (Python's ClientState.new)", () => {
    const grr = loadSpec(CASES.find((c) => c.mechanism === "grr")!.canonical_json);
    assert.deepEqual([isMemoizedSpec(RAPPOR), isMemoizedSpec(BOOL), isMemoizedSpec(grr)], [true, true, false]);
    assert.equal(cohortsOf(grr), 1n);
    assert.equal(newClient(grr).cohort, 0);
    assert.equal(cohortsOf(RAPPOR), 4n);
  });

  it("a missing field is named as the server's calibration from the Python defaults (CALIBRATED_FIELDS)", () => {
    assert.throws(() => loadSpec('{"mechanism":"olh","domain":[1,2],"epsilon":1,"p":"1/2"}'), /olh: g is calibrated from epsilon by the server/);
    assert.throws(() => loadSpec('{"mechanism":"pem","epsilon":1,"p":"1/2"}'), /pem: g is calibrated from epsilon by the server/);
    // PEM's width follows from top_k and eta, not from ε: a spec without it takes Python's default
    const pem = CASES.find((c) => c.id === "pem/default")!;
    const { width, ...rest } = parseJson(pem.canonical_json) as JsonObject;
    assert.equal(width, 40n);
    assert.equal(loadSpec(rest).fingerprint, pem.fingerprint);
    assert.throws(() => loadSpec('{"mechanism":"rappor","encoding":"boolean","f":"1/2","q":"3/4"}'), /rappor: p is required/);
    assert.throws(() => loadSpec('{"mechanism":"olh","epsilon":1}'), /olh: domain is required/);
  });
});

describe("the ledger's memoized path is generic", () => {
  it("a budgeted encoder charges each value's stream through the encoder's memoKey, whatever its class", async () => {
    const rappor = makeEncoder(BASIC, { client: CLIENT });
    // not a RapporEncoder: any encoder of a memoized spec that has a memoKey
    const wrapped: Encoder = { spec: BASIC, encode: (v) => rappor.encode(v), memoKey: (v) => rappor.memoKey!(v) };
    const storage = new MemoryLedgerStorage();
    const encoder = new BudgetedEncoder(wrapped, new PrivacyLedger(storage, makeBudget(100)));
    for (const value of ["a", "a", "b"]) await encoder.encode(value);
    const streams = Object.values(storage.data!.streams);
    assert.deepEqual(streams.map((s) => s.reports).sort(), [1, 2]);
    assert.ok(Object.keys(storage.data!.streams).every((name) => name.startsWith("value:")));
  });

  it("a memoized report charged without its memo key is refused, recording nothing", async () => {
    const storage = new MemoryLedgerStorage();
    const ledger = new PrivacyLedger(storage, makeBudget(100));
    await assert.rejects(ledger.charge(RAPPOR, null), /rappor is memoized: a report is charged with its value's memo key/);
    assert.equal(storage.data, null);
  });
});
