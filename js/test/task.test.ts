/** A task's spec from its collector: the fingerprint from the task's JSON body (else the ETag), and loadSpec's explanations. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { TaskError, dumpJson, fetchTaskSpec, fingerprintOfTag, loadSpec, parseJson } from "../src/index.js";

const V = JSON.parse(readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8"));
const GRR = V.specs.cases.find((c: any) => c.id === "grr/str");
const TEXT: string = GRR.canonical_json;
const FP: string = GRR.fingerprint;

/** A collector as a page on another origin sees it: the ETag unreadable unless `etag` is given. */
function collector(options: { body?: Record<string, unknown>; etag?: string; spec?: string; status?: number }): typeof fetch {
  return (async (url: string) => {
    if (options.status) return new Response(JSON.stringify({ title: "Not Found", detail: "no task 'T' on this collector" }), { status: options.status });
    if (url.endsWith("/spec")) return new Response(options.spec ?? TEXT, { headers: options.etag ? { ETag: options.etag } : {} });
    return new Response(JSON.stringify(options.body ?? { task: "T", fingerprint: FP, time_precision: 3600 }));
  }) as typeof fetch;
}

describe("the spec's fingerprint across origins", () => {
  it("loadSpec(text, null) explains that the ETag could not be read and where the fingerprint is", () => {
    assert.throws(() => loadSpec(TEXT, null), (e: Error) => e instanceof RangeError && /no expected spec fingerprint \(got null\).*GET \/v1\/tasks\/\{task\}/.test(e.message));
  });
  it("an ETag's quotes and weak prefix are removed; anything but 16 hex digits is refused with the reason", () => {
    assert.equal(loadSpec(TEXT, `"${FP}"`).fingerprint, FP);
    assert.equal(loadSpec(TEXT, `W/"${FP}"`).fingerprint, FP);
    assert.equal(loadSpec(TEXT, ` "${FP.toUpperCase()}" `).fingerprint, FP);
    assert.equal(fingerprintOfTag(FP), FP);
    assert.throws(() => loadSpec(TEXT, '"7d94b1758a32"'), /is not 16 hex digits/);
    assert.throws(() => loadSpec(TEXT, `"${"0".repeat(16)}"`), /spec fingerprint [0-9a-f]{16} is not the expected 0000000000000000/);
    assert.throws(() => loadSpec(TEXT, 42 as unknown as string), /must be a string, got number/);
  });
  it("fetchTaskSpec takes the fingerprint from the task's JSON body (no ETag readable)", async () => {
    const got = await fetchTaskSpec("http://c.example/", "T", { fetch: collector({}) });
    assert.equal(got.spec.fingerprint, FP);
    assert.equal(got.fingerprintFrom, "body");
    assert.equal(got.task.time_precision, 3600n);
  });
  it("falls back to the spec's ETag (a collector whose description has no fingerprint)", async () => {
    const got = await fetchTaskSpec("http://c.example", "T", { fetch: collector({ body: { task: "T" }, etag: `W/"${FP}"` }) });
    assert.equal(got.spec.fingerprint, FP);
    assert.equal(got.fingerprintFrom, "etag");
  });
  it("neither: a TaskError saying what the collector must expose", async () => {
    await assert.rejects(fetchTaskSpec("http://c.example", "T", { fetch: collector({ body: { task: "T" } }) }), (e: Error) => e instanceof TaskError && /Access-Control-Expose-Headers/.test(e.message));
  });
  it("a spec that is not the task's, or whose probabilities give more than its ε, is refused", async () => {
    const other = V.specs.cases.find((c: any) => c.id === "grr/int").canonical_json;
    await assert.rejects(fetchTaskSpec("http://c.example", "T", { fetch: collector({ spec: other }) }), /is not the expected/);
    const fields = parseJson(TEXT) as Record<string, unknown>;
    const tampered = dumpJson({ ...fields, p: "99/100" } as never);
    await assert.rejects(fetchTaskSpec("http://c.example", "T", { fetch: collector({ spec: tampered }) }), /grr claims epsilon=\S+ but its exact probabilities give/);
  });
  it("a collector's problem detail is shown", async () => {
    await assert.rejects(fetchTaskSpec("http://c.example", "T", { fetch: collector({ status: 404 }) }), /HTTP 404 from http:\/\/c\.example\/v1\/tasks\/T: no task 'T' on this collector/);
  });
});
