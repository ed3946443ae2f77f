#!/usr/bin/env node
/**
 * `ldp-encode --spec spec.json values.txt > reports.jsonl`: one value per
 * line (each a string, as `ldp encode` reads a text file; an integer domain
 * finds its values by their decimal text), one report per line, every coin
 * from the CSPRNG. A `.csv` input (a header row; cells are text) is read as
 * `ldp encode` reads it: the values from `--column`, else the only column
 * besides `client_id`, else `value`. A multi-attribute spec reads a CSV with
 * one column per attribute (named after it; other columns ignored), each row
 * one record: a numeric attribute's cell is parsed as a number, and no cell
 * may be empty.
 *
 *   --column C       CSV: the column of values (not for a multi-attribute spec)
 *   --tables FILE    a multi-attribute spec's grid tables (piecewise, hybrid,
 *                    Laplace, Gaussian attributes): the JSON the collector serves
 *                    at GET /v1/tasks/{task}/tables (its fingerprint must be the spec's)
 *   --state DIR      persistent clients. CSV: each row's `client_id` selects its
 *                    client, state file DIR/<first 32 hex digits of SHA-256 of
 *                    the canonical id>.json, the file Python's `ldp encode
 *                    --state` uses for that id (memoized mechanisms, RAPPOR,
 *                    ...: the secret and cohort; others keep no state). Text: one client
 *                    (DIR/client.json)
 *   --budget EPS [--budget-delta D] [--composition basic|optimal]
 *                    the budget of each client that has none yet (needs --state),
 *                    kept in a ledger beside the client's state (DIR/<hash>.ledger.json;
 *                    text: DIR/client.ledger.json). A client's budget is set once:
 *                    once its ledger exists, every report of the client is charged
 *                    to it under its stored budget, with or without --budget, and a
 *                    --budget other than the stored one is an error (exit status 2).
 *                    --budget-delta and --composition need --budget. A refused row
 *                    emits nothing, exit status 3
 *   --upload URL --task T [--spool FILE] [--batch-size N]
 *                    also send the reports through the Uploader (spool
 *                    default: values file + ".spool.jsonl")
 */
import { BudgetExceededError, isMemoizedSpec, makeBudget } from "./budget.js";
import { StateClients } from "./clients.js";
import { makeEncoder } from "./encoders.js";
import { FileSpool, nativeShake256 } from "./node.js";
import type { JsonObject } from "./json.js";
import type { NumericTable } from "./numeric.js";
import { type Report, reportToJson } from "./report.js";
import { type Spec, loadSpec } from "./spec.js";
import { clip } from "./text.js";
import type { Value } from "./values.js";
import { Uploader } from "./uploader.js";
import { CLIENT_COLUMN, canonicalClientId, pickColumn, readCsv, readUtf8Text } from "./table.js";

/** Rows per chunk, as Python's `ldp encode`: a ledger another process created since the run opened its client is looked for at each. */
const CHUNK = 65_536;

const USAGE =
  "usage: ldp-encode --spec SPEC.json VALUES.txt|VALUES.csv [--column C] [--tables TABLES.json] [--state DIR [--budget EPS [--budget-delta D] [--composition basic|optimal]]] " +
  "[--upload URL --task T [--spool FILE] [--batch-size N]]";
const OPTIONS = new Set(["--spec", "--column", "--tables", "--state", "--budget", "--budget-delta", "--composition", "--upload", "--task", "--spool", "--batch-size"]);

function parseArgs(argv: string[]): { options: Map<string, string>; input: string } {
  const options = new Map<string, string>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (OPTIONS.has(arg)) {
      if (i + 1 >= argv.length) throw new Error(`${arg} needs a value`);
      options.set(arg, argv[++i]);
    } else if (arg.startsWith("--")) throw new Error(`unknown option ${clip(arg, 40, true)}`);
    else positional.push(arg);
  }
  if (!options.has("--spec") || positional.length !== 1) throw new Error(USAGE);
  if (options.has("--budget") && !options.has("--state")) throw new Error("--budget needs --state (the ledger lives beside the state)");
  if ((options.has("--budget-delta") || options.has("--composition")) && !options.has("--budget")) {
    // a stored ledger's budget is read from it whole: these alone would be ignored
    throw new Error("--budget-delta and --composition go with --budget (a client's existing ledger keeps its stored budget)");
  }
  if (options.has("--upload") !== options.has("--task")) throw new Error("--upload and --task go together");
  return { options, input: positional[0] };
}

/** Lines of a UTF-8 text file (a byte-order mark dropped, CR LF or LF), as Python's `read_lines`. */
function readLines(file: string): string[] {
  const text = readUtf8Text(file, "input file").replace(/^\uFEFF/, "");
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines.map((l: string) => l.replace(/\r$/, ""));
}

/** One input row: its number (CSV: the data row, from 1; text: the line), value (a record: by attribute) and client id (CSV with --state). */
interface Row {
  n: number;
  value: Value;
  client?: string;
}

/** A multi-attribute spec's attributes: their names (the columns), and which are numeric. */
interface RecordColumns {
  names: string[];
  numeric: Set<string>;
}

function recordColumns(spec: Spec): RecordColumns | null {
  if (!Array.isArray(spec.fields.attributes)) return null; // a spec of records: its attributes are specs of their own
  const attributes = spec.fields.attributes as JsonObject[];
  const names = attributes.map((a) => String(a.name));
  return { names, numeric: new Set(attributes.filter((a) => !Array.isArray(a.domain)).map((a) => String(a.name))) };
}

/** A numeric cell as Python's `parse_numeric_text` reads it: the trimmed text as a finite number. */
function numericCell(text: string): number {
  const trimmed = text.trim();
  const x = trimmed === "" ? Number.NaN : Number(trimmed);
  if (!Number.isFinite(x)) throw new Error(`numeric value must be a finite number, got ${JSON.stringify(clip(text, 80))}`);
  return x;
}

/** A CSV table's records: one column per attribute (numbers parsed), as Python's `ldp encode` reads them. */
function recordRows(input: string, columns: RecordColumns, withClient: boolean): Row[] {
  const table = readCsv(readUtf8Text(input, "input file"), input);
  const listed = table.header.map((n) => `'${n}'`).join(", ");
  const at = columns.names.map((name) => {
    const j = table.header.indexOf(name);
    if (j < 0) throw new Error(`${input} has no column '${clip(name, 80)}'; its columns: ${clip(listed, 200)}`);
    return j;
  });
  const clientAt = table.header.indexOf(CLIENT_COLUMN);
  if (withClient && clientAt < 0) throw new Error(`--state needs a '${CLIENT_COLUMN}' column in ${input}`);
  return table.rows.map(({ cells }, i) => {
    if (withClient && cells[clientAt] === "") throw new Error(`row ${i + 1} of ${input}: the ${CLIENT_COLUMN} is missing`);
    const record: Record<string, Value> = {};
    columns.names.forEach((name, k) => {
      const cell = cells[at[k]];
      if (cell === "") throw new Error(`row ${i + 1}: the value is missing (column '${name}')`);
      try {
        record[name] = columns.numeric.has(name) ? numericCell(cell) : cell;
      } catch (error) {
        throw new Error(`row ${i + 1}: ${(error as Error).message} (column '${name}')`);
      }
    });
    return { n: i + 1, value: record as unknown as Value, client: withClient ? cells[clientAt] : undefined };
  });
}

/** The rows of the input: a CSV table (value column, or a record's columns; client ids) or the lines of a text file. */
function readRows(input: string, column: string | undefined, withClient: boolean, record: RecordColumns | null): { rows: Row[]; label: string } {
  if (record !== null) {
    if (!input.toLowerCase().endsWith(".csv")) {
      throw new Error(`this spec reads records of the columns ${record.names.join(", ")}: give a CSV table`);
    }
    if (column !== undefined) throw new Error(`--column does not apply to a multi-attribute spec (it reads the columns ${record.names.join(", ")})`);
    return { rows: recordRows(input, record, withClient), label: "row" };
  }
  if (!input.toLowerCase().endsWith(".csv")) {
    if (column !== undefined) throw new Error("--column applies to CSV inputs only");
    return { rows: readLines(input).map((value, i) => ({ n: i + 1, value })), label: "line" };
  }
  const table = readCsv(readUtf8Text(input, "input file"), input);
  const at = table.header.indexOf(pickColumn(table.header, column, input));
  const clientAt = table.header.indexOf(CLIENT_COLUMN);
  if (withClient && clientAt < 0) throw new Error(`--state needs a '${CLIENT_COLUMN}' column in ${input}`);
  const rows = table.rows.map(({ cells }, i) => {
    if (withClient && cells[clientAt] === "") throw new Error(`row ${i + 1} of ${input}: the ${CLIENT_COLUMN} is missing`);
    return { n: i + 1, value: cells[at], client: withClient ? cells[clientAt] : undefined };
  });
  return { rows, label: "row" };
}

async function main(argv: string[]): Promise<number> {
  const { options, input } = parseArgs(argv);
  const spec = loadSpec(readUtf8Text(options.get("--spec")!, "spec"));
  const stateDir = options.get("--state");
  const budgetText = options.get("--budget");
  const budget = budgetText
    ? makeBudget(Number(budgetText), Number(options.get("--budget-delta") ?? 0), options.get("--composition") ?? "basic")
    : null;
  const memoized = isMemoizedSpec(spec); // a persistent client per id (RAPPOR, ...), else one shared encoder
  const record = recordColumns(spec);
  const tables = readTables(options.get("--tables"), spec);
  const { rows, label } = readRows(input, options.get("--column"), stateDir !== undefined && input.toLowerCase().endsWith(".csv"), record);
  const shared = memoized ? null : makeEncoder(spec, { tables });
  // persistent clients by canonical id ("" : the one client of a text input with --state)
  const clients = stateDir === undefined ? null : new StateClients(spec, stateDir, budget, shared);
  const keyOf = (row: Row): string => (row.client === undefined ? "" : canonicalClientId(row.client));
  type Client = { encode(value: Value): Report | Promise<Report> };
  const clientOf = (row: Row): Client | Promise<Client> => {
    if (clients === null) return shared ?? makeEncoder(spec, { shake: nativeShake256, tables }); // memoized: a fresh client per row
    const key = keyOf(row);
    return clients.opened(key) ?? clients.encoderOf(key);
  };
  // a --budget other than a stored one is refused before any report is made
  if (clients !== null) await clients.checkStoredBudgets(rows.map(keyOf));
  const reports: string[] = [];
  let printed = 0;
  const refused: number[] = [];
  for (let start = 0; start < rows.length; start += CHUNK) {
    const chunk = rows.slice(start, start + CHUNK);
    // a client opened without a ledger, whose ledger another process has created since, is charged from here on
    if (clients !== null && start > 0) await clients.findNewLedgers(chunk.map(keyOf));
    for (const row of chunk) {
      try {
        reports.push(reportToJson(await (await clientOf(row)).encode(row.value)));
      } catch (error) {
        if (error instanceof BudgetExceededError) refused.push(row.n);
        else throw new Error(`${label} ${row.n}: ${(error as Error).message}`);
      }
      if (reports.length - printed >= 4096) printed = print(reports, printed);
    }
  }
  print(reports, printed);
  if (options.has("--upload")) await upload(options, input, reports);
  process.stderr.write(`encoded ${rows.length - refused.length} values with ${spec.mechanism} (${spec.fingerprint})\n`);
  if (refused.length) {
    process.stderr.write(`${refused.length} ${label}s refused: the client's privacy budget would be exceeded; nothing was emitted for them\n`);
    return 3;
  }
  return 0;
}

/** The `attributes` of a `GET /v1/tasks/{task}/tables` reply saved in `file`, checked to be the spec's; none without --tables. */
function readTables(file: string | undefined, spec: Spec): Record<string, NumericTable> | undefined {
  if (file === undefined) return undefined;
  if (recordColumns(spec) === null) throw new Error("--tables applies to multi-attribute specs (a record's grid attributes)");
  let reply: { fingerprint?: unknown; attributes?: unknown };
  try {
    reply = JSON.parse(readUtf8Text(file, "--tables"));
  } catch (error) {
    throw new Error(`--tables ${file}: not JSON (${(error as Error).message})`);
  }
  if (reply === null || typeof reply !== "object" || typeof reply.attributes !== "object" || reply.attributes === null) {
    throw new Error(`--tables ${file}: expected the collector's tables reply, an object with 'fingerprint' and 'attributes'`);
  }
  if (reply.fingerprint !== spec.fingerprint) {
    throw new Error(`--tables ${file} is for spec ${clip(String(reply.fingerprint), 40)}, not this one (${spec.fingerprint})`);
  }
  return reply.attributes as Record<string, NumericTable>;
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
  if (s.rejected.length) {
    const first = s.rejected.slice(0, 3).map((r) => `${r.reason}: ${clip(r.detail)}`).join("; ");
    throw new Error(`${s.rejected.length} reports rejected by the collector, kept in ${spool.deadFile} (${first})`);
  }
}

// exitCode, not process.exit(): exit() would drop what a piped stdout has not yet flushed
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: Error) => {
    process.stderr.write(`ldp-encode: ${error.message}\n`);
    process.exitCode = 2;
  },
);
