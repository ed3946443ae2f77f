/**
 * Browser storage for the client: IndexedDB (falling back to localStorage)
 * holds the client state of each memoized spec (RAPPOR, the longitudinal
 * mechanisms: the secret their permanent responses are derived from, and a
 * cohort; created once, never replaced), the privacy ledger and the upload
 * spool.
 *
 * Limits: an IndexedDB `readwrite` transaction serializes changes across
 * tabs; the localStorage fallback does not (two tabs charging at the same
 * instant may race), and clearing site data resets the state and the ledger.
 */
import { fromHex, toHex } from "./bytes.js";
import type { LedgerData, LedgerStorage } from "./budget.js";
import { type RapporClient, cohortsOf, newClient } from "./encoders.js";
import type { Spec } from "./spec.js";
import { type DeadLetter, type Spool, addDeadLetters, recordId } from "./uploader.js";

/** A key-value store whose `update` is one atomic read-modify-write. */
export interface KeyValueStore {
  update<T>(key: string, change: (current: string | null) => { value: string | null; result: T }): Promise<T>;
}

/** IndexedDB: one object store of strings; each update is one readwrite transaction. */
export class IndexedDbStore implements KeyValueStore {
  private db: Promise<IDBDatabase>;

  constructor(name = "ldp-client", private readonly storeName = "kv") {
    this.db = new Promise((resolve, reject) => {
      const request = indexedDB.open(name, 1);
      request.onupgradeneeded = () => request.result.createObjectStore(storeName);
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
  }

  async update<T>(key: string, change: (current: string | null) => { value: string | null; result: T }): Promise<T> {
    const db = await this.db;
    return new Promise((resolve, reject) => {
      const tx = db.transaction(this.storeName, "readwrite");
      const store = tx.objectStore(this.storeName);
      let result: T;
      const get = store.get(key);
      get.onsuccess = () => {
        try {
          const out = change((get.result as string | undefined) ?? null);
          result = out.result;
          if (out.value === null) store.delete(key);
          else store.put(out.value, key);
        } catch (error) {
          tx.abort();
          reject(error);
        }
      };
      tx.oncomplete = () => resolve(result);
      tx.onerror = () => reject(tx.error);
    });
  }
}

/** localStorage (synchronous; not serialized across tabs). */
export class LocalStorageStore implements KeyValueStore {
  constructor(private readonly prefix = "ldp-client:", private readonly storage: Storage = localStorage) {}

  async update<T>(key: string, change: (current: string | null) => { value: string | null; result: T }): Promise<T> {
    const k = this.prefix + key;
    const out = change(this.storage.getItem(k));
    if (out.value === null) this.storage.removeItem(k);
    else this.storage.setItem(k, out.value);
    return out.result;
  }
}

/** IndexedDB when the page has it, else localStorage. */
export function defaultStore(): KeyValueStore {
  return typeof indexedDB !== "undefined" ? new IndexedDbStore() : new LocalStorageStore();
}

/**
 * The client state of `spec` (RAPPOR's, any memoized mechanism's): loaded, or
 * created once (a secret is never replaced). The memo of every value is
 * derived from this secret, so replacing it would draw every memo again: a
 * stored state that is not a 32-byte secret and a cohort of the spec is an
 * error, left as it is, never re-drawn (the Node client's `loadClientState`
 * checks its state file likewise).
 */
export async function openBrowserClient(store: KeyValueStore, spec: Spec): Promise<RapporClient> {
  const key = `state:${spec.fingerprint}`;
  return store.update(key, (current) => {
    if (current !== null) return { value: current, result: storedClient(current, spec, key) };
    const fresh = newClient(spec);
    return { value: JSON.stringify({ secret: toHex(fresh.secret), cohort: fresh.cohort }), result: fresh };
  });
}

/** A stored client state, checked: a 32-byte secret (64 hex digits) and a cohort below the spec's. */
function storedClient(text: string, spec: Spec, key: string): RapporClient {
  const corrupt = (why: string) => new Error(`the client state ${key} in browser storage is corrupt (${why}); it is kept as it is`);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw corrupt("not JSON");
  }
  const { secret, cohort } = (typeof data === "object" && data !== null ? data : {}) as { secret?: unknown; cohort?: unknown };
  if (typeof secret !== "string" || !/^[0-9a-f]{64}$/.test(secret)) throw corrupt("its secret is not 32 bytes in hex");
  const cohorts = Number(cohortsOf(spec));
  if (typeof cohort !== "number" || !Number.isInteger(cohort) || cohort < 0 || cohort >= cohorts) {
    throw corrupt(`its cohort is not an integer in [0, ${cohorts})`);
  }
  return { secret: fromHex(secret), cohort };
}

/** The ledger under one key of the store. */
export class BrowserLedgerStorage implements LedgerStorage {
  constructor(private readonly store: KeyValueStore, private readonly key = "ledger") {}

  update<T>(change: (current: LedgerData | null) => { data: LedgerData | null; result: T }): Promise<T> {
    return this.store.update(this.key, (text) => {
      const current = text === null ? null : (JSON.parse(text) as LedgerData);
      const { data, result } = change(current);
      return { value: data === null ? text : JSON.stringify(data), result };
    });
  }
}

/**
 * The upload spool under one key (a JSON array of spool records), and its
 * dead-letter list under `<key>:rejected`. Call `load()` once when the page
 * starts: `cached`, what `Uploader.installBeacon` sends on page hide, is
 * filled by it (and kept current by every change made through this object).
 */
export class BrowserSpool implements Spool {
  /** The last known contents, for `Uploader.installBeacon` (which must act synchronously). */
  cached: string[] = [];

  constructor(private readonly store: KeyValueStore, private readonly key = "spool") {}

  private change(fn: (lines: string[]) => string[]): Promise<string[]> {
    return this.store.update(this.key, (text) => {
      const lines = fn(text === null ? [] : (JSON.parse(text) as string[]));
      this.cached = lines;
      return { value: JSON.stringify(lines), result: lines };
    });
  }

  private changeDead(fn: (dead: DeadLetter[]) => DeadLetter[]): Promise<DeadLetter[]> {
    return this.store.update(`${this.key}:rejected`, (text) => {
      const dead = fn(text === null ? [] : (JSON.parse(text) as DeadLetter[]));
      return { value: JSON.stringify(dead), result: dead };
    });
  }

  load(): Promise<string[]> {
    return this.change((lines) => lines);
  }

  async append(lines: string[]): Promise<void> {
    await this.change((old) => [...old, ...lines]);
  }

  async remove(ids: ReadonlySet<string>): Promise<void> {
    await this.change((old) => old.filter((l) => !ids.has(recordId(l))));
  }

  async deadLetter(rejected: ReadonlyMap<string, { reason: string; detail: string }>): Promise<void> {
    if (rejected.size === 0) return;
    // the dead-letter list first: a record may briefly be in both, never in neither
    const lines = await this.load();
    await this.changeDead((dead) => addDeadLetters(dead, lines, rejected));
    await this.remove(new Set(rejected.keys()));
  }

  deadLetters(): Promise<DeadLetter[]> {
    return this.changeDead((dead) => dead);
  }

  async removeDeadLetters(ids: ReadonlySet<string>): Promise<void> {
    await this.changeDead((dead) => dead.filter((d) => !ids.has(recordId(d.record))));
  }
}
