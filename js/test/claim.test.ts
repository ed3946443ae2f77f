/**
 * The privacy claim: a spec whose exact probabilities give more ε than it
 * states is refused at every entry point (spec text or object, a Spec built by
 * hand and passed to an encoder or the ledger, the collector's spec, the
 * ldp-encode file), for every mechanism with a stated ε; so is a stated ε
 * clearly above what the probabilities give, and a numeric table that gives
 * more ε than its spec.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  EPSILON_LIMITS,
  type JsonObject,
  MemoryLedgerStorage,
  NumericEncoder,
  type NumericTable,
  PrivacyLedger,
  type Spec,
  dumpJson,
  fingerprintOf,
  type Fraction,
  compare,
  divInt,
  fraction,
  fractionText,
  loadSpec,
  makeBudget,
  makeEncoder,
  parseFraction,
  parseJson,
  tablePrivacyRatio,
} from "../src/index.js";
import { ENCODED_MECHANISMS } from "../src/registry.js";
import { SPEC_FIELDS } from "../src/specfields.js";

const V = JSON.parse(readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8"));
const CASES: { id: string; canonical_json: string; mechanism: string }[] = V.specs.cases.filter((c: any) => c.canonical_json);
/**
 * Whether a mechanism's spec states ε and the probabilities it gives (the generated `SPEC_FIELDS`): an
 * `epsilon` field and a probability field, or parts that have them (a composite spec). Not RAPPOR (no
 * stated ε), nor a grid mechanism (piecewise, hybrid, Laplace, Gaussian: its probabilities are the server's table).
 */
const statesProbabilities = (mechanism: string): boolean => {
  const fields = SPEC_FIELDS[mechanism];
  return "epsilon" in fields && Object.values(fields).some(([kind]) => kind === "probability" || kind === "parts");
};
/** One canonical spec (Python's) per mechanism with a stated ε and its probabilities. */
const STATED = [...new Map(CASES.filter((c) => statesProbabilities(c.mechanism)).map((c) => [c.mechanism, c])).values()];
/** The encoder of a spec: `makeEncoder`'s, else (Duchi, stochastic rounding) `NumericEncoder` with the spec's own table. */
const encoderOf = (spec: Spec) => (ENCODED_MECHANISMS.includes(spec.mechanism) ? makeEncoder(spec) : new NumericEncoder(spec));

/**
 * The fields with p raised: 1 − (1 − p)/8, the ratio at least 8 times larger (ε + ln 8 or more). A
 * longitudinal chain's fresh round likewise, keeping the form its fields have: p₂ raised with
 * q₂ = 1 − p₂ kept so (l-osue, l-sue) or q₂ = (1 − p₂)/(k − 1) (l-grr); a fixed p₂ (l-oue's ½) with
 * q₂ divided by 8; p₂ raised alone when q₂ is not a field (loloha); a key keep probability p₁ without
 * a q₁ (privkvm) raised the same way. Read from the fields alone: a new mechanism of one of these forms
 * needs no edit here.
 */
function tampered(json: string): JsonObject {
  const fields = parseJson(json) as JsonObject;
  const raised = (p: Fraction): Fraction => fraction(7n * p.den + p.num, 8n * p.den);
  const complement = (p: Fraction): Fraction => fraction(p.den - p.num, p.den);
  if (Array.isArray(fields.attributes)) {
    // a composite spec (multi-attribute): its first attribute's p raised (a GRR in the vectors)
    const first = fields.attributes[0] as JsonObject;
    first.p = fractionText(raised(parseFraction(first.p as string)));
    return fields;
  }
  if (fields.p !== undefined) {
    fields.p = fractionText(raised(parseFraction(fields.p as string)));
    return fields;
  }
  if (fields.p1 !== undefined && fields.q1 === undefined) {
    // a key and a value keep probability (privkvm): the key's raised
    fields.p1 = fractionText(raised(parseFraction(fields.p1 as string)));
    return fields;
  }
  const p2 = parseFraction(fields.p2 as string);
  if (fields.q2 === undefined) {
    fields.p2 = fractionText(raised(p2)); // its fresh round's keep probability (loloha: q2 is not a field)
    return fields;
  }
  const q2 = parseFraction(fields.q2 as string);
  const others = BigInt((fields.domain as unknown[]).length) - 1n;
  const symmetric = compare(q2, complement(p2)) === 0;
  if (!symmetric && compare(q2, divInt(complement(p2), others)) !== 0) {
    fields.q2 = fractionText(divInt(q2, 8n)); // p₂ fixed (OUE's ½)
    return fields;
  }
  const p = raised(p2);
  fields.p2 = fractionText(p);
  fields.q2 = fractionText(symmetric ? complement(p) : divInt(complement(p), others));
  return fields;
}

/** A Spec object built by hand for `fields`, its fingerprint recomputed: what a caller could pass an encoder. */
function handMade(fields: JsonObject): Spec {
  const canonicalJson = dumpJson(fields);
  return { mechanism: fields.mechanism as string, fields, canonicalJson, fingerprint: fingerprintOf(canonicalJson) };
}

const CLAIMS = /claims epsilon=\S+ but its exact probabilities give epsilon=\S+; the claim must be at least what the probabilities give/;

describe("the stated ε is checked against the exact probabilities", () => {
  it("covers every mechanism with a stated ε and probabilities (from the registry's SPEC_FIELDS) in the vectors, each with an ε limit", () => {
    assert.deepEqual(STATED.map((c) => c.mechanism).sort(), Object.keys(SPEC_FIELDS).filter(statesProbabilities).sort());
    assert.deepEqual(STATED.map((c) => c.mechanism).filter((m) => !(m in EPSILON_LIMITS)), []);
  });
  for (const c of STATED) {
    it(`${c.mechanism}: tampered probabilities are refused as text, as an object, and by hand to the encoder and the ledger`, async () => {
      loadSpec(c.canonical_json); // Python's spec is accepted
      const fields = tampered(c.canonical_json);
      assert.throws(() => loadSpec(dumpJson(fields)), CLAIMS);
      assert.throws(() => loadSpec(fields), CLAIMS);
      const spec = handMade(fields);
      assert.throws(() => encoderOf(spec), CLAIMS);
      await assert.rejects(new PrivacyLedger(new MemoryLedgerStorage(), makeBudget(100)).charge(spec, null), CLAIMS);
    });
  }
  it("the issue's case: probabilities of ε = 4 stated as ε = 1 (GRR, d = 3)", () => {
    // Python's GRR at ε = 4 over a, b, c, its epsilon edited to 1
    const grr4 = '{"domain":["a","b","c"],"epsilon":4.0,"format":1,"mechanism":"grr","p":"556090448610958455/576460752303423488"}';
    loadSpec(grr4);
    assert.throws(() => loadSpec(grr4.replace('"epsilon":4.0', '"epsilon":1.0')), /grr claims epsilon=1\.0 but its exact probabilities give epsilon=(4\.0|3\.9999)\d*;/);
  });
  it("a stated ε clearly above what the probabilities give is refused (1e-9 relative on e^ε); a hair above is not", () => {
    const grr1 = parseJson(CASES.find((c) => c.id === "grr/str")!.canonical_json) as JsonObject;
    const epsilon = grr1.epsilon as number;
    assert.throws(() => loadSpec({ ...grr1, epsilon: epsilon + 0.01 }), /states epsilon=\S+ but its exact probabilities give epsilon=\S+; the stated epsilon must match them/);
    loadSpec({ ...grr1, epsilon: epsilon + 1e-12 });
  });
  it("ε must be finite, > 0 and within the mechanism's limit", () => {
    const grr1 = parseJson(CASES.find((c) => c.id === "grr/str")!.canonical_json) as JsonObject;
    assert.throws(() => loadSpec({ ...grr1, epsilon: 0 }), /epsilon must be a finite number > 0/);
    assert.throws(() => loadSpec({ ...grr1, epsilon: -1 }), /epsilon must be a finite number > 0/);
    assert.throws(() => loadSpec({ ...grr1, epsilon: 30 }), /above 23, the largest epsilon grr supports/);
  });
  it("a hand-made spec whose fingerprint is not its fields' is refused by the encoder", () => {
    const good = loadSpec(CASES.find((c) => c.id === "grr/str")!.canonical_json);
    const forged: Spec = { ...good, fingerprint: "0123456789abcdef" };
    assert.throws(() => makeEncoder(forged), /does not match its fields/);
  });
  it("a loaded spec is frozen: its probabilities cannot be changed after the check", () => {
    const spec = loadSpec(CASES.find((c) => c.id === "grr/str")!.canonical_json);
    assert.throws(() => {
      (spec.fields as JsonObject).p = "99/100";
    }, TypeError);
  });
  it("ldp-encode refuses a spec file with tampered probabilities (exit 2, one line), before any report", () => {
    const dir = mkdtempSync(join(tmpdir(), "ldp-claim-"));
    const c = STATED.find((x) => x.mechanism === "oue")!;
    writeFileSync(join(dir, "spec.json"), dumpJson(tampered(c.canonical_json)));
    writeFileSync(join(dir, "values.txt"), "1\n");
    try {
      execFileSync("node", ["dist/cli.js", "--spec", join(dir, "spec.json"), join(dir, "values.txt")], { stdio: "pipe" });
      assert.fail("ldp-encode accepted a tampered spec");
    } catch (error: any) {
      assert.equal(error.status, 2);
      assert.equal(error.stdout.toString(), "");
      assert.match(error.stderr.toString(), /^ldp-encode: oue claims epsilon=\S+ but its exact probabilities give/);
      assert.equal(error.stderr.toString().trim().split("\n").length, 1);
    }
  });
});

describe("numeric tables honour their spec's ε", () => {
  const vector = (id: string) => ({
    spec: loadSpec(CASES.find((c) => c.id === id)!.canonical_json),
    table: structuredClone(V.numeric.find((t: any) => t.spec === id)) as NumericTable,
  });
  it("the server's tables are accepted (their exact ratios are Python's)", () => {
    for (const id of ["piecewise/grid8", "hybrid/grid8", "hybrid/alpha0", "laplace/grid8", "gaussian/grid8"]) {
      const { spec, table } = vector(id);
      new NumericEncoder(spec, table);
    }
    assert.equal(fractionText(tablePrivacyRatio(vector("piecewise/grid8").table)), "364841611/134217728");
    assert.equal(fractionText(tablePrivacyRatio(vector("laplace/grid8").table)), "96214624/35395389");
  });
  it("piecewise: a band weight raised fourfold is refused", () => {
    const { spec, table } = vector("piecewise/grid8");
    table.band = { ...table.band!, a: (BigInt(table.band!.a) * 4n).toString() };
    delete table.digest;
    assert.throws(() => new NumericEncoder(spec, table), /piecewise claims epsilon=\S+ but its exact probabilities give/);
  });
  it("laplace: a noise weight raised is refused", () => {
    const { spec, table } = vector("laplace/grid8");
    const w = table.weights!.map((x) => BigInt(x));
    w[Math.floor(w.length / 2)] *= 16n;
    table.weights = w;
    delete table.digest;
    assert.throws(() => new NumericEncoder(spec, table), /laplace claims epsilon=\S+ but its exact probabilities give/);
  });
  it("hybrid: a Duchi part with a larger p is refused", () => {
    const { spec, table } = vector("hybrid/grid8");
    const p = parseFraction(table.duchi_p!);
    table.duchi_p = fractionText(fraction(7n * p.den + p.num, 8n * p.den));
    assert.throws(() => new NumericEncoder(spec, table), /hybrid claims epsilon=\S+ but its exact probabilities give/);
  });
  it("duchi: a two-point table other than the spec's is refused; a table of another grid or kind too", () => {
    const duchi = vector("duchi/default").spec;
    assert.throws(() => new NumericEncoder(duchi, { kind: "two-point", p: "99/100", outputs: [-1.02, 1.02] }), /the table is not the spec's/);
    const { spec, table } = vector("piecewise/grid8");
    assert.throws(() => new NumericEncoder(spec, { ...table, K: 16 }), /grid 16 is not the spec's 8/);
    assert.throws(() => new NumericEncoder(spec, vector("laplace/grid8").table), /needs a rows table, got shift/);
  });
});
