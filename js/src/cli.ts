#!/usr/bin/env node
/**
 * `ldp-encode --spec spec.json values.txt > reports.jsonl`: one value per
 * line (each a string, as `ldp encode` reads a text file; an integer domain
 * finds its values by their decimal text), one report per line, every coin
 * from the CSPRNG.
 *
 *   --state DIR      RAPPOR: one persistent client (DIR/client.json; Python's
 *                    `ldp encode --state` instead needs a client_id table)
 *   --budget EPS     per-client budget (needs --state; DIR/client.ledger.json);
 *                    a refused line emits nothing, exit status 3
 *   --upload URL --task T [--spool FILE] [--batch-size N]
 *                    also send the reports through the Uploader (spool
 *                    default: values file + ".spool.jsonl")
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { BudgetExceededError, BudgetedEncoder, PrivacyLedger, makeBudget } from "./budget.js";
import { makeEncoder } from "./encoders.js";
import { FileLedgerStorage, FileSpool, nativeShake256, openClientState } from "./node.js";
import { reportToJson } from "./report.js";
import { loadSpec } from "./spec.js";
import { Uploader } from "./uploader.js";

const USAGE = "usage: ldp-encode --spec SPEC.json VALUES.txt [--state DIR [--budget EPS]] [--upload URL --task T [--spool FILE] [--batch-size N]]";
const OPTIONS = new Set(["--spec", "--state", "--budget", "--upload", "--task", "--spool", "--batch-size"]);

function parseArgs(argv: string[]): { options: Map<string, string>; input: string } {
  const options = new Map<string, string>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (OPTIONS.has(arg)) {
      if (i + 1 >= argv.length) throw new Error(`${arg} needs a value`);
      options.set(arg, argv[++i]);
    } else if (arg.startsWith("--")) throw new Error(`unknown option ${arg}`);
    else positional.push(arg);
  }
  if (!options.has("--spec") || positional.length !== 1) throw new Error(USAGE);
  if (options.has("--budget") && !options.has("--state")) throw new Error("--budget needs --state (the ledger lives beside the state)");
  if (options.has("--upload") !== options.has("--task")) throw new Error("--upload and --task go together");
  return { options, input: positional[0] };
}

/** Lines of a UTF-8 text file (a byte-order mark dropped, CR LF or LF), as Python's `read_lines`. */
function readLines(file: string): string[] {
  const text = fs.readFileSync(file, "utf8").replace(/^\uFEFF/, "");
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines.map((l: string) => l.replace(/\r$/, ""));
}

async function main(argv: string[]): Promise<number> {
  const { options, input } = parseArgs(argv);
  const spec = loadSpec(fs.readFileSync(options.get("--spec")!, "utf8"));
  const stateDir = options.get("--state");
  const client = spec.mechanism === "rappor" && stateDir ? openClientState(path.join(stateDir, "client.json"), spec) : undefined;
  const encoder = makeEncoder(spec, { client, shake: nativeShake256 });
  const budget = options.get("--budget");
  const budgeted = budget
    ? new BudgetedEncoder(encoder, new PrivacyLedger(new FileLedgerStorage(path.join(stateDir!, "client.ledger.json")), makeBudget(Number(budget))))
    : null;
  const reports: string[] = [];
  let printed = 0;
  const refused: number[] = [];
  for (const [i, value] of readLines(input).entries()) {
    try {
      // without --state every line is a new client (RAPPOR: makeEncoder per line makes a fresh secret)
      const e = client || spec.mechanism !== "rappor" ? encoder : makeEncoder(spec, { shake: nativeShake256 });
      reports.push(reportToJson(budgeted ? await budgeted.encode(value) : e.encode(value)));
    } catch (error) {
      if (error instanceof BudgetExceededError) refused.push(i + 1);
      else throw new Error(`line ${i + 1}: ${(error as Error).message}`);
    }
    if (reports.length - printed >= 4096) printed = print(reports, printed);
  }
  print(reports, printed);
  if (options.has("--upload")) await upload(options, input, reports);
  process.stderr.write(`encoded ${readLines(input).length - refused.length} values with ${spec.mechanism} (${spec.fingerprint})\n`);
  if (refused.length) {
    process.stderr.write(`${refused.length} lines refused: the client's privacy budget would be exceeded; nothing was emitted for them\n`);
    return 3;
  }
  return 0;
}

/** Write reports[from:] to stdout; returns the new count printed. */
function print(reports: string[], from: number): number {
  process.stdout.write(reports.slice(from).map((l) => l + "\n").join(""));
  return reports.length;
}

async function upload(options: Map<string, string>, input: string, reports: string[]): Promise<void> {
  const spool = new FileSpool(options.get("--spool") ?? input + ".spool.jsonl");
  const batchSize = options.has("--batch-size") ? Number(options.get("--batch-size")) : undefined;
  const uploader = new Uploader(options.get("--upload")!, options.get("--task")!, spool, { batchSize });
  await uploader.enqueue(reports);
  const s = await uploader.flush();
  process.stderr.write(`uploaded: ${s.accepted} accepted, ${s.replayed} already stored, ${s.rejected.length} rejected\n`);
  if (s.rejected.length) throw new Error(`${s.rejected.length} reports rejected: ${JSON.stringify(s.rejected.slice(0, 5))}`);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: Error) => {
    process.stderr.write(`ldp-encode: ${error.message}\n`);
    process.exit(2);
  },
);
