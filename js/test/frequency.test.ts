/**
 * `ldp-client/frequency` (src/frequency.ts): the frequency oracles and RAPPOR
 * alone. Its `makeEncoder` writes the vectors' reports byte for byte, refuses
 * every other mechanism, and its bundle holds no other mechanism family's
 * encoder module (so a page importing it does not ship them).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { build } from "esbuild";
import { gzipSync } from "node:zlib";
import { FREQUENCY_MECHANISMS, makeEncoder, reportToBinary, reportToJson } from "../src/frequency.js";
import { FixedSource, type Value, fromHex, loadSpec, parseJson } from "../src/index.js";

const TEXT = readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8");
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const V: any = JSON.parse(TEXT);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const P: any = parseJson(TEXT); // Python's number model, for the encoded values
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const SPECS = new Map(V.specs.cases.map((c: any) => [c.id, loadSpec(c.canonical_json, c.fingerprint)]));
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
      const spec = SPECS.get(c.spec)! as ReturnType<typeof loadSpec>;
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

  // issue 28's budget for this bundle. A todo until it is met: the spec fields and privacy modules of every
  // mechanism (specfields.ts, privacyregistry.ts, reached through loadSpec and each encoder's spec check)
  // are still bundled; `node scripts/size.mjs` prints the figure and its largest inputs.
  it("bundles to at most 15 kB min+gzip", { todo: "over budget (about 23.6 kB): the spec and privacy tables of every mechanism" }, async () => {
    const gzip = gzipSync((await bundle()).outputFiles[0].contents, { level: 9 }).length;
    assert.ok(gzip <= 15000, `${gzip} B min+gzip`);
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
