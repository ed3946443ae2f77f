/**
 * The module graph of src/ (its subfolders included) has no cycles: every
 * relative import (`import`, `import type`, `export ... from`, a dynamic
 * `import()`) is an edge, and no strongly connected component has more than
 * one module. A cycle makes the evaluation order of the modules depend on
 * which one is imported first.
 */
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { posix } from "node:path";
import { describe, it } from "node:test";

const SRC = new URL("../src/", import.meta.url);

/** Every relative module a TypeScript source names, as `name.ts`. */
export function relativeImports(source: string): string[] {
  const out = new Set<string>();
  const pattern = /(?:\bfrom\s*|\bimport\s*\(?\s*)["']\.\/([\w.-]+)\.js["']/g;
  for (const match of source.matchAll(pattern)) out.add(`${match[1]}.ts`);
  return [...out].sort();
}

/** Every relative module (`./x.js`, `../x.js`, `./dir/x.js`) the module `path` of src/ names, as a path in src/ (`dir/x.ts`). */
export function resolvedImports(path: string, source: string): string[] {
  const out = new Set<string>();
  const pattern = /(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.\.?\/[\w./-]+)\.js["']/g;
  for (const match of source.matchAll(pattern)) out.add(posix.join(posix.dirname(path), `${match[1]}.ts`));
  return [...out].sort();
}

/** The import graph of src/ and its subfolders: module path -> the module paths it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const files = readdirSync(SRC, { recursive: true, encoding: "utf8" }).map((f) => f.split("\\").join("/"));
  for (const name of files.filter((f) => f.endsWith(".ts")).sort()) {
    graph.set(name, resolvedImports(name, readFileSync(new URL(name, SRC), "utf8")));
  }
  return graph;
}

/** Strongly connected components of more than one module, or of one importing itself (Tarjan). */
export function cycles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found.sort((x, y) => x[0].localeCompare(y[0]));
}

describe("module graph", () => {
  it("reads every kind of relative import", () => {
    const source = [
      'import { a } from "./a.js";',
      'import type { B } from "./b.js";',
      "import {\n  c,\n  d,\n} from './c.js';",
      'export * from "./e.js";',
      'export { f } from "./f.js";',
      'const g = await import("./g.js");',
      'import "./h.js";',
      'import { x } from "@noble/hashes/sha2.js";',
      'import * as fs from "node:fs";',
    ].join("\n");
    assert.deepEqual(relativeImports(source), ["a.ts", "b.ts", "c.ts", "e.ts", "f.ts", "g.ts", "h.ts"]);
    assert.deepEqual(resolvedImports("a.ts", source), ["a.ts", "b.ts", "c.ts", "e.ts", "f.ts", "g.ts", "h.ts"]);
  });

  it("resolves imports of and from a subfolder", () => {
    const source = 'import { a } from "../a.js";\nimport { b } from "./b.js";\nexport { c } from "./sub/c.js";';
    assert.deepEqual(resolvedImports("privacy/x.ts", source), ["a.ts", "privacy/b.ts", "privacy/sub/c.ts"]);
    assert.deepEqual(resolvedImports("x.ts", 'import { g } from "./privacy/g.js";'), ["privacy/g.ts"]);
  });

  it("finds a cycle when there is one", () => {
    const graph = new Map([
      ["a.ts", ["b.ts"]],
      ["b.ts", ["c.ts"]],
      ["c.ts", ["a.ts", "d.ts"]],
      ["d.ts", []],
      ["e.ts", ["e.ts"]],
    ]);
    assert.deepEqual(cycles(graph), [["a.ts", "b.ts", "c.ts"], ["e.ts"]]);
  });

  it("src/ has no import cycle", () => {
    const graph = importGraph();
    assert.ok(graph.has("privacy/grr.ts"), "the graph has the modules of src/'s subfolders");
    for (const [module, imports] of graph) {
      for (const target of imports) assert.ok(graph.has(target), `${module} imports ./${target.replace(/\.ts$/, ".js")}, which is not in src/`);
    }
    assert.deepEqual(cycles(graph), [], "modules that import each other, directly or through others");
  });
});
