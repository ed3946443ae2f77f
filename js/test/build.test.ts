/**
 * The built package (`npm run build`, run by `npm test` first): the library
 * entry points share their code (split chunks: importing two entry points
 * never loads the encoders twice), and `dist/web/` is self-contained ESM a
 * page can load with `<script type="module">` and no bundler.
 */
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { describe, it } from "node:test";

const dist = new URL("../dist/", import.meta.url);
const web = new URL("web/", dist);
const js = (dir: URL) => readdirSync(dir).filter((f) => f.endsWith(".js"));
/** Import specifiers of a built module (static and dynamic). */
const specifiers = (text: string) => [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)"([^"]+)"/g)].map((m) => m[1]);
/** How many files of `dir` define the class `name` (esbuild writes `class X` or `X = class`). */
const definitions = (dir: URL, name: string) =>
  js(dir).filter((f) => new RegExp(`class ${name}\\b|\\b${name} = class\\b`).test(readFileSync(new URL(f, dir), "utf8"))).length;

describe("the built package", () => {
  it("dist/web imports nothing by bare name: every import is a relative file", () => {
    const files = js(web);
    assert.ok(files.includes("index.js") && files.includes("browser.js") && files.includes("web.js"));
    for (const f of files) {
      for (const s of specifiers(readFileSync(new URL(f, web), "utf8"))) assert.match(s, /^\.\/[\w.-]+\.js$/, `${f} imports ${s}`);
    }
  });
  it("each encoder and storage class is defined once in dist/ and once in dist/web/ (shared chunks)", () => {
    for (const name of ["GRREncoder", "RapporEncoder", "Uploader", "PrivacyLedger", "BrowserSpool", "UploadError"]) {
      assert.equal(definitions(dist, name), 1, `${name} in dist/`);
      assert.equal(definitions(web, name), 1, `${name} in dist/web/`);
    }
  });
  it("dist/web's entry points load together and work (one Uploader class for both)", async () => {
    const core = await import(new URL("index.js", web).href);
    const store = await import(new URL("browser.js", web).href);
    const page = await import(new URL("web.js", web).href);
    assert.equal(page.Uploader, core.Uploader);
    assert.equal(page.BrowserSpool, store.BrowserSpool);
    const V = JSON.parse(readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8"));
    const spec = core.loadSpec(V.specs.cases.find((c: { id: string }) => c.id === "grr/str").canonical_json);
    assert.ok(["red", "green", "blue"].includes(core.makeEncoder(spec).encode("red").value));
  });
});
