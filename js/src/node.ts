/**
 * Node.js storage for the client: the RAPPOR client state, the privacy
 * ledger and the upload spool, as private files (mode 0600, directory 0700).
 *
 * - A state file is created exclusively (temp file, fsync, `link` to its
 *   name): of two processes starting one client, one secret wins and both
 *   use it. An existing path is never replaced; a symlink, a non-file or a
 *   file others may read is refused.
 * - The ledger and the spool are changed under a lock file created with
 *   `wx` (holding the owner's pid), and rewritten atomically (temp, fsync,
 *   rename). Limits: the lock is advisory between cooperating processes; a
 *   lock left by a dead process on this host is removed (pid check), one
 *   from another host (network file system) is not, and after 10 s waiting
 *   the operation fails naming the lock file.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { fromHex, toHex } from "./bytes.js";
import { type Budget, BudgetedEncoder, type LedgerData, type LedgerStorage, PrivacyLedger, isMemoizedSpec } from "./budget.js";
import { type Encoder, type RapporClient, cohortsOf, makeEncoder, newClient } from "./encoders.js";
import { type ByteSource, type CreateHash, type Shake256, hashShake256 } from "./random.js";
import { type DeadLetter, type Spool, addDeadLetters, recordId } from "./uploader.js";
import type { Spec } from "./spec.js";
import { installFastSamplers } from "./reportbits-fast.js";

// the per-report samplers' fast paths (the same bits; reportbits.ts says why ldp-client/frequency keeps the plain ones)
installFastSamplers();

export const STATE_FORMAT = "ldp-client-state/1";
const LOCK_WAIT_MS = 10_000;

/** Create `dir` with mode 0700 when missing; refuse a symlink or a directory others may use. */
export function ensurePrivateDirectory(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = fs.lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
}

function tempName(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.${toHex(crypto.getRandomValues(new Uint8Array(8)))}.tmp`);
}

function writeSynced(file: string, data: string, flag: string): void {
  const fd = fs.openSync(file, flag, 0o600);
  try {
    fs.writeSync(fd, data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function syncDirectory(dir: string): void {
  const fd = fs.openSync(dir, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Write `data` to a temp file, fsync, then `link` it to `file`: false when `file` already exists (never replaced). */
export function createPrivateFile(file: string, data: string): boolean {
  const temp = tempName(file);
  writeSynced(temp, data, "wx");
  try {
    fs.linkSync(temp, file);
    syncDirectory(path.dirname(file));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    fs.unlinkSync(temp);
  }
}

/** Replace `file` atomically (temp, fsync, rename). */
export function replacePrivateFile(file: string, data: string): void {
  const temp = tempName(file);
  writeSynced(temp, data, "wx");
  fs.renameSync(temp, file);
  syncDirectory(path.dirname(file));
}

/** The text of a private file, or null when nothing is there; refuses symlinks, non-files and files others may access. */
export function readPrivateFile(file: string, what: string): string | null {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
  if (st.isSymbolicLink()) throw new Error(`${what} ${file} is a symbolic link: refused`);
  if (!st.isFile()) throw new Error(`${what} ${file} is not a regular file: refused`);
  if (st.mode & 0o077) throw new Error(`${what} ${file} may be read or written by other users (mode ${(st.mode & 0o777).toString(8)}): refused`);
  return fs.readFileSync(file, "utf8");
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The pid in a lock file; null when it is gone; 0 while its owner has not written it yet. */
function lockOwner(lockFile: string): number | null {
  try {
    return Number.parseInt(fs.readFileSync(lockFile, "utf8"), 10) || 0;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

/** Run `fn` holding `lockFile` (created with `wx`, holding our pid); removes a dead local owner's lock. */
export async function withLock<T>(lockFile: string, fn: () => T | Promise<T>): Promise<T> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      writeSynced(lockFile, `${process.pid}\n`, "wx");
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = lockOwner(lockFile);
      if (owner === null) continue; // released meanwhile
      if (owner > 0 && !pidAlive(owner)) {
        fs.rmSync(lockFile, { force: true }); // stale: its process is gone
        continue;
      }
      if (Date.now() > deadline) throw new Error(`lock ${lockFile} held for more than ${LOCK_WAIT_MS / 1000} s (pid ${owner})`);
      await new Promise((r) => setTimeout(r, 5 + (crypto.getRandomValues(new Uint8Array(1))[0] % 20)));
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(lockFile, { force: true });
  }
}

/** Load the client state (RAPPOR's, any memoized mechanism's) at `file`, creating it (exclusively, new secret and cohort) when nothing is there. */
export function openClientState(file: string, spec: Spec): RapporClient {
  ensurePrivateDirectory(path.dirname(file));
  if (readPrivateFile(file, "client state") === null) {
    const fresh = newClient(spec);
    const text = JSON.stringify({ cohort: fresh.cohort, format: STATE_FORMAT, secret: toHex(fresh.secret), spec: spec.fingerprint }) + "\n";
    if (createPrivateFile(file, text)) return fresh;
  }
  return loadClientState(file, spec);
}

/** Read and check a state file (format, spec, 32-byte secret, cohort range). */
export function loadClientState(file: string, spec: Spec): RapporClient {
  const text = readPrivateFile(file, "client state");
  if (text === null) throw new Error(`no client state at ${file}`);
  let data: { format?: unknown; spec?: unknown; secret?: unknown; cohort?: unknown };
  try {
    data = JSON.parse(text);
  } catch {
    throw new Error(`client state ${file} is corrupt`);
  }
  if (data.format !== STATE_FORMAT || typeof data.secret !== "string" || !/^[0-9a-f]{64}$/.test(data.secret)) {
    throw new Error(`client state ${file} is corrupt`);
  }
  if (data.spec !== spec.fingerprint) throw new Error(`client state ${file} belongs to spec ${String(data.spec)}, not ${spec.fingerprint}`);
  const cohorts = Number(cohortsOf(spec));
  if (!Number.isInteger(data.cohort) || (data.cohort as number) < 0 || (data.cohort as number) >= cohorts) {
    throw new Error(`client state ${file} has cohort ${String(data.cohort)}, outside [0, ${cohorts})`);
  }
  return { secret: fromHex(data.secret), cohort: data.cohort as number };
}

/**
 * The ledger as a private JSON file (the Python ledger's layout), changed
 * under `file + ".jslock"`. Not `.lock`: Python keeps a `flock` on
 * `<ledger>.lock`, a file it never deletes, and this lock (an exclusive
 * create) cannot take part in `flock`. So the JS and Python clients may use
 * one state directory in turn, never at the same time.
 */
export class FileLedgerStorage implements LedgerStorage {
  readonly label: string;

  constructor(readonly file: string) {
    ensurePrivateDirectory(path.dirname(file));
    this.label = `privacy ledger '${file}'`;
  }

  async update<T>(change: (current: LedgerData | null) => { data: LedgerData | null; result: T }): Promise<T> {
    return withLock(this.file + ".jslock", () => {
      const text = readPrivateFile(this.file, "privacy ledger");
      let current: LedgerData | null = null;
      try {
        if (text !== null) current = JSON.parse(text) as LedgerData;
      } catch {
        throw new Error(`${this.label} is corrupt (not JSON)`);
      }
      const { data, result } = change(current);
      if (data !== null && data !== current) {
        const out = JSON.stringify(data, null, 1) + "\n";
        if (text === null) {
          if (!createPrivateFile(this.file, out)) throw new Error(`privacy ledger ${this.file} appeared while locked`);
        } else replacePrivateFile(this.file, out);
      }
      return result;
    });
  }
}

/** The privacy ledger of the client whose state file is `stateFile`: `client.json` has `client.ledger.json` (Python's `ledger_beside`). */
export function ledgerBeside(stateFile: string): string {
  const ext = path.extname(stateFile);
  return stateFile.slice(0, stateFile.length - ext.length) + ".ledger.json";
}

function lexists(file: string): boolean {
  return fs.lstatSync(file, { throwIfNoEntry: false }) !== undefined; // no exception per absent file: the CLI asks often
}

/**
 * The ledger of the client whose state file is `stateFile` (beside it,
 * `ledgerBeside`), or null when it has none and no `budget` is given
 * (Python's `client_ledger`). A client's budget is set once, when its
 * ledger is created: an existing ledger is always opened, under its stored
 * budget, with or without `budget`, and every report of the client must be
 * charged to it; a `budget` other than the stored one is refused. Without a
 * ledger, `budget` creates one (exclusively: racing creators share one);
 * with neither, nothing is created and the client has no budget.
 */
export async function clientLedger(stateFile: string, budget: Budget | null = null): Promise<PrivacyLedger | null> {
  const file = ledgerBeside(stateFile);
  if (budget === null && !lexists(file)) return null;
  return PrivacyLedger.open(new FileLedgerStorage(file), budget);
}

/**
 * The encoder of the persistent client whose state file is `stateFile`
 * (Python's `make_encoder(spec, state=PATH)`): a memoized mechanism's
 * (RAPPOR's, ...) secret and cohort from that file (`openClientState`:
 * created once); other mechanisms keep no state there. Whenever the client has a ledger (`clientLedger`: one
 * beside the state, or one `budget` creates), the encoder is a
 * `BudgetedEncoder` charging it under its stored budget, so a client with a
 * ledger is never encoded unbudgeted. Prefer this to `openClientState` +
 * `makeEncoder`, which charge no ledger.
 */
export async function openClientEncoder(
  stateFile: string,
  spec: Spec,
  options: { budget?: Budget | null; shake?: Shake256 } = {},
): Promise<Encoder | BudgetedEncoder> {
  const client = isMemoizedSpec(spec) ? openClientState(stateFile, spec) : undefined;
  const encoder = makeEncoder(spec, { client, shake: options.shake });
  const ledger = await clientLedger(stateFile, options.budget ?? null);
  return ledger === null ? encoder : new BudgetedEncoder(encoder, ledger);
}

/**
 * Unsent spool records as a JSON Lines file (one record's exact bytes per
 * line), 0600, changed under a lock; the dead-letter list beside it,
 * `<file>.rejected.jsonl` (one `{"reason","detail","record"}` per line).
 */
export class FileSpool implements Spool {
  readonly deadFile: string;

  constructor(readonly file: string) {
    ensurePrivateDirectory(path.dirname(path.resolve(file)));
    this.deadFile = file + ".rejected.jsonl";
  }

  private read(): string[] {
    return readLinesOf(this.file, "spool");
  }

  private readDead(): DeadLetter[] {
    return readLinesOf(this.deadFile, "dead-letter list").map((l) => JSON.parse(l) as DeadLetter);
  }

  async load(): Promise<string[]> {
    return withLock(this.file + ".lock", () => this.read());
  }

  async append(lines: string[]): Promise<void> {
    if (lines.length === 0) return;
    await withLock(this.file + ".lock", () => {
      const kept = this.read(); // drops a torn tail before appending
      replacePrivateFile(this.file, [...kept, ...lines].map((l) => l + "\n").join(""));
    });
  }

  async remove(ids: ReadonlySet<string>): Promise<void> {
    await withLock(this.file + ".lock", () => {
      const kept = this.read().filter((l) => !ids.has(recordId(l)));
      replacePrivateFile(this.file, kept.map((l) => l + "\n").join(""));
    });
  }

  async deadLetter(rejected: ReadonlyMap<string, { reason: string; detail: string }>): Promise<void> {
    if (rejected.size === 0) return;
    await withLock(this.file + ".lock", () => {
      const lines = this.read();
      // the dead-letter file first: a crash between the two writes leaves a record in both, never in neither
      const dead = addDeadLetters(this.readDead(), lines, rejected);
      replacePrivateFile(this.deadFile, dead.map((d) => JSON.stringify(d) + "\n").join(""));
      replacePrivateFile(this.file, lines.filter((l) => !rejected.has(recordId(l))).map((l) => l + "\n").join(""));
    });
  }

  async deadLetters(): Promise<DeadLetter[]> {
    return withLock(this.file + ".lock", () => this.readDead());
  }

  async removeDeadLetters(ids: ReadonlySet<string>): Promise<void> {
    await withLock(this.file + ".lock", () => {
      const kept = this.readDead().filter((d) => !ids.has(recordId(d.record)));
      replacePrivateFile(this.deadFile, kept.map((d) => JSON.stringify(d) + "\n").join(""));
    });
  }
}

/** The complete lines of a private JSON Lines file ([] when absent); a torn last line (a crash mid-write) is dropped. */
function readLinesOf(file: string, what: string): string[] {
  const text = readPrivateFile(file, what);
  if (text === null) return [];
  const lines = text.split("\n");
  lines.pop(); // the text after the last newline: empty, or a torn write of a crash (never acknowledged)
  return lines.filter((l) => l.length > 0);
}

/** SHAKE-256 by Node's `crypto` (OpenSSL): the same bytes as `jsShake256`, several times faster; the default in Node (`defaultShake256`). */
export const nativeShake256: Shake256 = hashShake256(createHash as CreateHash);
