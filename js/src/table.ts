/**
 * CSV input of `ldp-encode`, read as Python's `ldp encode` reads it
 * (`ldp/values_file.py`, `client/cli.py`): UTF-8 (a byte-order mark dropped),
 * a header row naming the columns, every cell text, the `csv` module's
 * default dialect (comma, `"` quotes doubled inside quoted fields, a quoted
 * field may span lines, CR LF or LF), empty lines skipped, every row as wide
 * as the header. And the client ids that select persistent clients: one
 * canonical text per client (`client/identity.py`), its state file named by
 * a hash of it (`state_path`), so both CLIs pick the same file for a row.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { clip } from "./text.js";

/** True when `bytes` are a valid UTF-8 prefix (an incomplete last character allowed). */
function validPrefix(bytes: Uint8Array): boolean {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes, { stream: true });
    return true;
  } catch {
    return false;
  }
}

/**
 * The text of a UTF-8 file (a byte-order mark dropped), decoded strictly, as
 * Python reads it: bytes that are not UTF-8 are refused, naming the line, the
 * first byte of the bad sequence and its column, never replaced by U+FFFD
 * (that would encode an altered value). `what` names the file in errors
 * ("input file", "spec").
 */
export function readUtf8Text(file: string, what: string): string {
  let data: Uint8Array;
  try {
    data = fs.readFileSync(file);
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    throw new Error(`cannot read ${what} '${file}': ${e.code === "ENOENT" ? "no such file" : e.message}`);
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(data); // drops a byte-order mark
  } catch {
    // the first bad byte: the shortest prefix that is no valid UTF-8 (even incomplete), then back to its sequence's lead byte
    let [lo, hi] = [0, data.length];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (validPrefix(data.subarray(0, mid + 1))) lo = mid + 1;
      else hi = mid;
    }
    let bad = Math.min(lo, data.length - 1);
    for (let j = bad - 1; j >= Math.max(0, bad - 3) && data[j] >= 0x80; j--) {
      if (data[j] >= 0xc0) {
        bad = j;
        break;
      }
    }
    const lineStart = data.lastIndexOf(0x0a, bad - 1) + 1;
    let line = 1;
    for (let i = 0; i < lineStart; i++) if (data[i] === 0x0a) line++;
    const hex = data[bad].toString(16).padStart(2, "0");
    throw new Error(`${what} '${file}', line ${line}: not UTF-8 text (byte 0x${hex} at column ${bad - lineStart + 1}); save it as UTF-8`);
  }
}

/** The column of client ids (Python's `_CLIENT_COLUMN`). */
export const CLIENT_COLUMN = "client_id";

/** Records of a CSV text: [first line number, fields][] (Python's csv.reader, excel dialect). */
export function parseCsv(text: string, file: string): [number, string[]][] {
  const records: [number, string[]][] = [];
  let fields: string[] = [];
  let field = "";
  let quoted = false; // inside a quoted field
  let wasQuoted = false; // the current field began with a quote
  let line = 1;
  let start = 1;
  let atFieldStart = true;
  const endRecord = () => {
    fields.push(field);
    // a line with nothing on it is no record (csv.reader yields [] and ldp encode skips it)
    if (!(fields.length === 1 && fields[0] === "" && !wasQuoted)) records.push([start, fields]);
    fields = [];
    field = "";
    atFieldStart = true;
    wasQuoted = false;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else {
        if (c === "\n") line++;
        field += c;
      }
      continue;
    }
    if (c === '"' && atFieldStart) {
      quoted = true;
      wasQuoted = true;
      atFieldStart = false;
    } else if (c === ",") {
      fields.push(field);
      field = "";
      atFieldStart = true;
    } else if (c === "\r" || c === "\n") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      endRecord();
      line++;
      start = line;
    } else {
      field += c; // a quote inside an unquoted field is kept, as the csv module does
      atFieldStart = false;
    }
  }
  if (quoted) throw new Error(`input file ${file}, line ${line}: not valid CSV (unexpected end of data)`);
  if (field !== "" || fields.length || wasQuoted) endRecord();
  return records;
}

/** A table of CSV rows: the header, then each row's cells (line numbers kept for errors). */
export interface CsvTable {
  header: string[];
  rows: { line: number; cells: string[] }[];
}

export function readCsv(text: string, file: string): CsvTable {
  const records = parseCsv(text.replace(/^\uFEFF/, ""), file);
  if (records.length === 0) throw new Error(`input file ${file} is empty; expected a CSV header line naming the columns`);
  const header = records[0][1];
  const repeated = [...new Set(header.filter((name, i) => header.indexOf(name) !== i))].sort();
  if (repeated.length) throw new Error(`input file ${file}: the CSV header repeats the column(s) ${clip(repeated.map((n) => `'${n}'`).join(", "), 200)}`);
  const rows = records.slice(1).map(([line, cells]) => {
    if (cells.length !== header.length) {
      throw new Error(
        `input file ${file}, line ${line}: ${cells.length} fields, but the header has ${header.length} (${clip(header.join(","), 200)}); ` +
          "quote values that contain the delimiter",
      );
    }
    return { line, cells };
  });
  return { header, rows };
}

/** The value column: `column`, else the only column besides client_id, else "value" (Python's `_pick_column`). */
export function pickColumn(header: string[], column: string | undefined, file: string): string {
  if (column !== undefined) {
    if (!header.includes(column)) throw new Error(`${file} has no column '${clip(column, 80)}'; its columns: ${clip(header.map((n) => `'${n}'`).join(", "), 200)}`);
    return column;
  }
  const candidates = header.filter((c) => c !== CLIENT_COLUMN);
  if (candidates.length === 1) return candidates[0];
  if (candidates.includes("value")) return "value";
  throw new Error(`${file} has several columns (${clip(header.join(", "), 200)}); choose one with --column`);
}

/**
 * The canonical text of a client id read from a CSV cell (Python's
 * `canonical_client_id` for text): exactly as written, except that the zero
 * fraction of a decimal integer is dropped ("12.0" is "12"); empty is refused.
 */
export function canonicalClientId(raw: string): string {
  if (raw === "") throw new RangeError("client id is empty");
  const zeroFraction = /^([+-]?[0-9]+)\.0+$/.exec(raw);
  return zeroFraction ? zeroFraction[1] : raw;
}

/** The state file of a client in `directory`: the first 32 hex digits of SHA-256 of its canonical id, ".json" (Python's `state_path`). */
export function statePath(directory: string, clientId: string): string {
  const digest = createHash("sha256").update(canonicalClientId(clientId), "utf8").digest("hex").slice(0, 32);
  return path.join(directory, `${digest}.json`);
}

/** The client's privacy ledger, beside its state file (Python's `ledger_path`). */
export function ledgerPath(directory: string, clientId: string): string {
  return statePath(directory, clientId).replace(/\.json$/, ".ledger.json");
}
