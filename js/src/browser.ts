/**
 * Browser storage for the client: IndexedDB (falling back to localStorage)
 * holds the RAPPOR client state (created once, never replaced), the privacy
 * ledger and the upload spool.
 *
 * Limits: an IndexedDB `readwrite` transaction serializes changes across
 * tabs; the localStorage fallback does not (two tabs charging at the same
 * instant may race), and clearing site data resets the state and the ledger.
 */
import { fromHex, toHex } from "./bytes.js";
import type { LedgerData, LedgerStorage } from "./budget.js";
import { type RapporClient, newRapporClient } from "./encoders.js";
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

/** The client of a memoizing `spec` (RAPPOR, a longitudinal chain): loaded, or created once (a secret is never replaced). */
export async function openBrowserClient(store: KeyValueStore, spec: Spec): Promise<RapporClient> {
  return store.update(`state:${spec.fingerprint}`, (current) => {
    if (current !== null) {
      const data = JSON.parse(current) as { secret: string; cohort: number };
      return { value: current, result: { secret: fromHex(data.secret), cohort: data.cohort } };
    }
    const fresh = newRapporClient(spec);
    return { value: JSON.stringify({ secret: toHex(fresh.secret), cohort: fresh.cohort }), result: fresh };
  });
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
