#!/usr/bin/env node
/**
 * The browser bundles' size, min+gzip, and what is in them: esbuild bundles
 * an entry (`--minify`, ES module, platform neutral), gzip -9 measures it,
 * and the metafile names the largest inputs (minified bytes, before gzip).
 *
 *   node scripts/size.mjs                 # src/frequency.ts (frequency oracles + RAPPOR), src/web.ts, src/index.ts
 *   node scripts/size.mjs --check         # exit 1 when the frequency bundle is above BUDGET
 *
 * BUDGET is the target of issue 28 for frequency oracles + RAPPOR: 15 kB,
 * read as 15,000 bytes, min+gzip. `test/frequency.test.ts` imports BUDGET and
 * `measure` from here, so `npm test` holds the bundle to it too.
 */
import { build } from "esbuild";
import { gzipSync } from "node:zlib";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const BUDGET = 15000;
const ENTRIES = [
  ["frequency oracles + RAPPOR", "src/frequency.ts"],
  ["web page (+ budget, Uploader, browser storage)", "src/web.ts"],
  ["everything (ldp-client)", "src/index.ts"],
];

/** `entry` (a path under js/) bundled and minified: its min+gzip and minified sizes in bytes, and its 8 largest inputs. */
export async function measure(entry) {
  const result = await build({
    entryPoints: [entry],
    absWorkingDir: ROOT,
    bundle: true,
    minify: true,
    format: "esm",
    platform: "neutral",
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  const code = result.outputFiles[0].contents;
  const inputs = Object.values(result.metafile.outputs)[0].inputs;
  const largest = Object.entries(inputs)
    .map(([name, { bytesInOutput }]) => [name.replace(/^.*node_modules\//, ""), bytesInOutput])
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8);
  return { minified: code.length, gzip: gzipSync(code, { level: 9 }).length, largest };
}

async function main() {
  let over = false;
  for (const [name, entry] of ENTRIES) {
    const { minified, gzip, largest } = await measure(entry);
    const budget = entry === "src/frequency.ts" ? ` (budget ${BUDGET} B: ${gzip <= BUDGET ? "met" : "OVER"})` : "";
    if (budget && gzip > BUDGET) over = true;
    console.log(`${name} (${entry}): ${gzip} B min+gzip, ${minified} B minified${budget}`);
    for (const [input, bytes] of largest) console.log(`  ${String(bytes).padStart(6)} B  ${input}`);
  }
  if (process.argv.includes("--check") && over) process.exit(1);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
