/**
 * `ldp-client/frequency` (src/frequency.ts): the frequency oracles and RAPPOR
 * alone. Its `loadSpec` reads their specs as the main entry's does (same
 * fingerprints, Python's refusals word for word), its `makeEncoder` writes the
 * vectors' reports byte for byte, both refuse every other mechanism, and its
 * bundle holds no other mechanism family's encoder, spec entries or privacy
 * module (so a page importing it does not ship them).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { build } from "esbuild";
import { gzipSync } from "node:zlib";
import { BUDGET, measure } from "../scripts/size.mjs";
import * as frequency from "../src/frequency.js";
import { FREQUENCY_MECHANISMS, makeEncoder, reportToBinary, reportToJson } from "../src/frequency.js";
import { FixedSource, type JsonObject, type Spec, type Value, fromHex, loadSpec, parseJson } from "../src/index.js";

const TEXT = readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8");
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const V: any = JSON.parse(TEXT);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const P: any = parseJson(TEXT); // Python's number model, for the encoded values
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const SPECS = new Map<string, Spec>(V.specs.cases.map((c: any) => [c.id, loadSpec(c.canonical_json, c.fingerprint)]));
const SRC = fileURLToPath(new URL("../src/", import.meta.url));

/** src/frequency.ts bundled as `npm run size` bundles it (minified ES module, platform neutral), with its metafile. */
const bundle = () =>
  build({
    entryPoints: [`${SRC}frequency.ts`],
    bundle: true,
    minify: true,
    format: "esm",
    platform: "neutral",
    write: false,
    metafile: true,
    logLevel: "silent",
    absWorkingDir: fileURLToPath(new URL("..", import.meta.url)),
  });

describe("ldp-client/frequency", () => {
  it("encodes the vectors of its mechanisms byte for byte (every one of them has vectors)", () => {
    const covered = new Set<string>();
    V.encodings.forEach((c: { spec: string; bytes: string; secret?: string; cohort?: number; report_json: string; report_binary?: string }, i: number) => {
      const spec = SPECS.get(c.spec)!;
      if (!FREQUENCY_MECHANISMS.includes(spec.mechanism)) return;
      covered.add(spec.mechanism);
      const source = new FixedSource(fromHex(c.bytes));
      const client = c.secret === undefined ? undefined : { secret: fromHex(c.secret), cohort: c.cohort! };
      const report = makeEncoder(spec, { source, client }).encode(P.encodings[i].value as Value);
      assert.equal(reportToJson(report), c.report_json, `${c.spec} #${i}`);
      if (c.report_binary !== undefined) assert.equal(Buffer.from(reportToBinary(report)).toString("hex"), c.report_binary);
      assert.equal(source.remaining, 0);
    });
    assert.deepEqual([...covered].sort(), [...FREQUENCY_MECHANISMS].sort());
  });

  it("refuses a spec of another mechanism, naming the main entry", () => {
    const other = [...SPECS.values()].find((s) => !FREQUENCY_MECHANISMS.includes(s.mechanism))!;
    assert.ok(other);
    assert.throws(() => makeEncoder(other), new RegExp(`not ${other.mechanism}: use makeEncoder of ldp-client`));
  });

  it("loads the vectors' specs of its mechanisms as the main entry does (same canonical JSON and fingerprint)", () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const cases = V.specs.cases.filter((c: any) => FREQUENCY_MECHANISMS.includes(loadSpec(c.canonical_json).mechanism));
    assert.deepEqual([...new Set(cases.map((c: { canonical_json: string }) => loadSpec(c.canonical_json).mechanism))].sort(), [...FREQUENCY_MECHANISMS].sort());
    for (const c of cases) {
      const spec = frequency.loadSpec(c.canonical_json, c.fingerprint);
      assert.equal(spec.canonicalJson, c.canonical_json, c.id);
      assert.equal(spec.fingerprint, c.fingerprint, c.id);
      assert.equal(makeEncoder(spec).spec, spec); // checked once: a spec loaded here is one the encoders take
    }
  });

  it("refuses each invalid spec of its mechanisms with Python's message (the vectors' invalid_specs)", () => {
    let refused = 0;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    for (const c of V.invalid_specs as any[]) {
      const data = parseJson(c.input_json) as JsonObject;
      if (!FREQUENCY_MECHANISMS.includes(String(data.mechanism).toLowerCase().replaceAll("_", "-"))) continue;
      if (c.domain_size !== undefined) data.domain = Array.from({ length: c.domain_size }, (_, i) => BigInt(i));
      assert.throws(() => frequency.loadSpec(data), (e: unknown) => e instanceof RangeError && e.message === c.error, c.id);
      refused++;
    }
    assert.ok(refused >= 20, `only ${refused} invalid specs of the frequency mechanisms`);
  });

  it("refuses another mechanism's spec naming the main entry, and an unknown one as the main entry does", () => {
    const other = [...SPECS.values()].find((s) => !FREQUENCY_MECHANISMS.includes(s.mechanism))!;
    assert.throws(
      () => frequency.loadSpec(other.canonicalJson),
      new RegExp(`^RangeError: ${other.mechanism} is not loaded here \\(only grr, binary-rr, sue, oue, olh, blh, hr, ss, rappor\\): load it with loadSpec of ldp-client$`),
    );
    assert.throws(() => frequency.loadSpec({ mechanism: "no_such" }), { message: 'unknown mechanism "no_such"' });
    assert.throws(() => loadSpec({ mechanism: "no_such" }), { message: 'unknown mechanism "no_such"' });
  });

  it("re-checks a spec built by hand as the main entry does, against its encoder's mechanisms", () => {
    const grr = [...SPECS.values()].find((s) => s.mechanism === "grr")!;
    const forged = { ...grr, fields: { ...grr.fields, p: "1/2" } };
    assert.throws(() => makeEncoder(forged), /^RangeError: grr claims epsilon=1\.0 but its exact probabilities give epsilon=1\.94/);
    const copy = { ...grr, fields: { ...grr.fields } };
    assert.equal(makeEncoder(copy).spec, copy);
  });

  it("refuses a hand-built spec whose probabilities its encoder cannot use with the spec's own message (Python's)", () => {
    // the encoders do not check their probabilities again: checkedSpecIn refuses such a spec first
    const forged = (mechanism: string, change: JsonObject) => {
      const spec = [...SPECS.values()].find((s) => s.mechanism === mechanism)!;
      return { ...spec, fields: { ...spec.fields, ...change } };
    };
    assert.throws(() => makeEncoder(forged("sue", { q: "0" })), /^RangeError: q must be in \(0, 1\), got 0$/);
    assert.throws(() => makeEncoder(forged("oue", { p: "1/4", q: "1/3" })), /^RangeError: oue: p must exceed q, got p=1\/4, q=1\/3$/);
    const ss = forged("ss", {});
    const d = (ss.fields.domain as unknown[]).length;
    assert.throws(() => makeEncoder(forged("ss", { omega: BigInt(d) })), new RegExp(`^RangeError: omega must be in \\[1, ${d - 1}\\], got ${d}$`));
    assert.throws(() => makeEncoder(forged("rappor", { p: "1/2", q: "1/2" })), /^RangeError: rappor needs p < q \(IRR\), got p=1\/2, q=1\/2$/);
    assert.throws(() => makeEncoder(forged("rappor", { f: "1" })), /^RangeError: f must be in \[0, 1\), got 1$/);
  });

  // issue 28's budget for this bundle: 15 kB (15,000 bytes) min+gzip, as `node scripts/size.mjs --check` measures it
  // (BUDGET there); that script prints the figure and the bundle's largest inputs.
  it("bundles to at most 15 kB min+gzip (BUDGET of scripts/size.mjs)", async () => {
    const { gzip } = await measure("src/frequency.ts");
    assert.ok(gzip <= BUDGET, `${gzip} B min+gzip, over the budget of ${BUDGET} B`);
  });

  it("bundles the package's own hash functions, no @noble/hashes module (SHA-256, MD5, SHAKE-256 of src/hash/)", async () => {
    const inputs = Object.keys((await bundle()).metafile.inputs);
    assert.deepEqual(inputs.filter((f) => f.includes("@noble")), []);
    assert.deepEqual(inputs.filter((f) => f.startsWith("src/hash/")).sort(), ["src/hash/md.ts", "src/hash/md5.ts", "src/hash/sha256.ts", "src/hash/shake256.ts"]);
  });

  it("bundles only its own families' spec entries and privacy modules, not every mechanism's tables", async () => {
    const inputs = Object.keys((await bundle()).metafile.inputs);
    for (const table of ["src/specfields.ts", "src/privacyregistry.ts", "src/spec.ts", "src/claim.ts"]) {
      assert.ok(!inputs.includes(table), `${table} (every mechanism's) is bundled`);
    }
    const own = ["grr", "hadamard", "localhash", "rappor", "subset", "unary"];
    assert.deepEqual(inputs.filter((f) => f.startsWith("src/privacy/")).sort(), own.map((m) => `src/privacy/${m}.ts`));
    assert.deepEqual(
      inputs.filter((f) => f.startsWith("src/catalog/")).sort(),
      [...own.map((m) => `src/catalog/${m}.ts`), "src/catalog/names.ts"].sort(),
    );
  });

  it("bundles no reader of a composite spec's parts (specparts.ts: a multi-attribute record's attributes)", async () => {
    const result = await bundle();
    assert.ok(!Object.keys(result.metafile.inputs).includes("src/specparts.ts"));
    const code = new TextDecoder().decode(result.outputFiles[0].contents);
    for (const message of ["non-empty list of spec objects", "with 'name' and 'mechanism'", "multi-attribute: attribute"]) {
      assert.ok(!code.includes(message), `the parts reader is bundled (${message})`);
    }
  });

  it("bundles no other mechanism family's encoder module", async () => {
    // the family modules are families.ts's re-exports (generated from the @mechanisms tags)
    const families = [...readFileSync(new URL("../src/families.ts", import.meta.url), "utf8").matchAll(/from "\.\/(\w+)\.js"/g)].map(
      (m) => `src/${m[1]}.ts`,
    );
    const result = await bundle();
    const inputs = Object.keys(result.metafile.inputs);
    const bundled = families.filter((f) => inputs.includes(f)).sort();
    assert.deepEqual(bundled, ["src/grr.ts", "src/hadamard.ts", "src/localhash.ts", "src/rappor.ts", "src/subset.ts", "src/unary.ts"]);
    assert.ok(!inputs.some((f) => f.includes("registry.ts") && !f.includes("privacyregistry")), "the registry of every encoder");
  });
});
