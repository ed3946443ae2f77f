/**
 * Uploading reports to an `ldp serve` collector (docs/collector.md#upload),
 * keeping the randomize-once rule: each report is wrapped once into an
 * envelope (16 CSPRNG bytes of id, `t` truncated to the task's precision),
 * written to a `Spool` BEFORE any send, and resent byte for byte until a
 * 200 reply accounts for it (`accepted`, `replayed` and `rejected` all end
 * its life; only they remove it from the spool). Connection errors, 429 and
 * 5xx are retried with exponential backoff and CSPRNG jitter, waiting at
 * least Retry-After; another 4xx stops with the server's problem detail.
 */
import { toBase64 } from "./bytes.js";
import { parseJson } from "./json.js";
import { cryptoSource } from "./random.js";

export const MAX_ENVELOPES = 1000;
export const MAX_BODY_BYTES = 1 << 20;
const CONTENT_TYPE = "application/x-ndjson";
/**
 * Beacons: a CORS-safelisted type, so no preflight (which a beacon, sent with
 * credentials, would fail, and which may not finish while the page unloads);
 * the collector reads text/plain as JSON Lines from an origin the task allows.
 */
const BEACON_CONTENT_TYPE = "text/plain;charset=UTF-8";

/** Durable store of unsent envelope lines (exact bytes). */
export interface Spool {
  load(): Promise<string[]>;
  append(lines: string[]): Promise<void>;
  remove(ids: ReadonlySet<string>): Promise<void>;
}

/** A spool in memory (lost on exit: tests only). */
export class MemorySpool implements Spool {
  lines: string[] = [];
  async load(): Promise<string[]> {
    return [...this.lines];
  }
  async append(lines: string[]): Promise<void> {
    this.lines.push(...lines);
  }
  async remove(ids: ReadonlySet<string>): Promise<void> {
    this.lines = this.lines.filter((l) => !ids.has(idOf(l)));
  }
}

export interface TaskInfo {
  fingerprint: string;
  time_precision: number;
  mechanism: string;
}

export interface Rejected {
  id: string | null;
  reason: string;
  detail: string;
}

export interface UploadSummary {
  accepted: number;
  replayed: number;
  rejected: Rejected[];
  batches: number;
  retries: number;
}

export class UploadError extends Error {
  override name = "UploadError";
}

export interface UploaderOptions {
  fetch?: typeof fetch;
  batchSize?: number; // ≤ 1,000
  maxBody?: number; // ≤ 1 MiB
  backoffMs?: number;
  maxBackoffMs?: number;
  retries?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number; // ms since the epoch
  /** Called after each acknowledged batch with the running summary. */
  progress?: (summary: UploadSummary) => void;
}

/** A fresh envelope id: 16 CSPRNG bytes, base64url without padding (22 characters). */
export function envelopeId(): string {
  return toBase64(cryptoSource.read(16)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function idOf(line: string): string {
  return String((parseJson(line) as { id: string }).id);
}

/** Seconds from a Retry-After header (delta seconds or an HTTP date), or null. */
export function retryAfterSeconds(value: string | null, nowMs: number): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const when = Date.parse(v);
  return Number.isNaN(when) ? null : Math.max(0, (when - nowMs) / 1000);
}

/** Consecutive batches of `lines` under both limits (count and body bytes, newline included). */
export function batchBounds(lines: readonly string[], size: number, maxBody: number): [number, number][] {
  const encoder = new TextEncoder();
  const out: [number, number][] = [];
  let start = 0;
  let bytes = 0;
  lines.forEach((line, i) => {
    const n = encoder.encode(line).length + 1;
    if (n > maxBody) throw new RangeError(`envelope ${i} alone is over ${maxBody} bytes`);
    if (i - start === size || bytes + n > maxBody) {
      out.push([start, i]);
      start = i;
      bytes = 0;
    }
    bytes += n;
  });
  if (start < lines.length) out.push([start, lines.length]);
  return out;
}

/** A 200 reply: accounts for every envelope of the batch. */
interface Reply {
  accepted: number;
  replayed: number;
  rejected: { index: number; id: string | null; reason: string; detail?: string }[];
}

/** An attempt worth retrying: why, and the server's Retry-After in seconds. */
type Retry = { retry: string; after: number | null };

export class Uploader {
  private task: TaskInfo | null = null;
  private readonly fetch: typeof fetch;
  private readonly opts: Required<Omit<UploaderOptions, "fetch" | "progress">> & Pick<UploaderOptions, "progress">;

  constructor(
    readonly baseUrl: string,
    readonly taskId: string,
    readonly spool: Spool,
    options: UploaderOptions = {},
  ) {
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.opts = {
      batchSize: Math.min(options.batchSize ?? MAX_ENVELOPES, MAX_ENVELOPES),
      maxBody: Math.min(options.maxBody ?? MAX_BODY_BYTES, MAX_BODY_BYTES),
      backoffMs: options.backoffMs ?? 500,
      maxBackoffMs: options.maxBackoffMs ?? 60_000,
      retries: options.retries ?? 20,
      sleep: options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
      now: options.now ?? (() => Date.now()),
      progress: options.progress,
    };
  }

  private get reportsUrl(): string {
    return `${this.baseUrl.replace(/\/$/, "")}/v1/tasks/${encodeURIComponent(this.taskId)}/reports`;
  }

  /** The task's public description (`GET /v1/tasks/{task}`), fetched once, retried as uploads are. */
  async taskInfo(): Promise<TaskInfo> {
    if (this.task) return this.task;
    const url = `${this.baseUrl.replace(/\/$/, "")}/v1/tasks/${encodeURIComponent(this.taskId)}`;
    const response = await this.withRetries(async () => {
      const r = await this.fetch(url);
      if (r.status === 200) return { value: (await r.json()) as TaskInfo };
      return this.failure(r);
    });
    if (!Number.isInteger(response.time_precision) || response.time_precision < 1) throw new UploadError("task has no valid time_precision");
    this.task = response;
    return response;
  }

  /**
   * Wrap report JSON lines (as `reportToJson` writes them) into envelopes,
   * once, and spool them durably. Reports of another spec are refused
   * before anything is written. Returns the envelope lines.
   */
  async enqueue(reportLines: readonly string[]): Promise<string[]> {
    const task = await this.taskInfo();
    for (const line of reportLines) {
      const spec = (parseJson(line) as { spec?: unknown }).spec;
      if (spec !== task.fingerprint) throw new UploadError(`report of spec ${String(spec)}, but task ${this.taskId} takes ${task.fingerprint}`);
    }
    const seconds = Math.floor(this.opts.now() / 1000);
    const t = seconds - (seconds % task.time_precision);
    const envelopes = reportLines.map((report) => `{"id":"${envelopeId()}","t":${t},"report":${report}}`);
    await this.spool.append(envelopes);
    return envelopes;
  }

  /** Send everything in the spool; removes each batch from it once a 200 reply accounts for it. */
  async flush(): Promise<UploadSummary> {
    const summary: UploadSummary = { accepted: 0, replayed: 0, rejected: [], batches: 0, retries: 0 };
    const lines = await this.spool.load();
    for (const [start, end] of batchBounds(lines, this.opts.batchSize, this.opts.maxBody)) {
      const batch = lines.slice(start, end);
      const body = batch.map((l) => l + "\n").join(""); // the same bytes on every attempt
      const reply = await this.withRetries(async () => this.post(body), summary);
      if (reply.accepted + reply.replayed + reply.rejected.length !== batch.length) {
        throw new UploadError(`reply accounts for ${reply.accepted + reply.replayed + reply.rejected.length} of ${batch.length} envelopes`);
      }
      summary.accepted += reply.accepted;
      summary.replayed += reply.replayed;
      summary.rejected.push(...reply.rejected.map((r) => ({ id: r.id, reason: r.reason, detail: r.detail ?? "" })));
      summary.batches += 1;
      await this.spool.remove(new Set(batch.map(idOf)));
      this.opts.progress?.(summary);
    }
    return summary;
  }

  private async post(body: string): Promise<{ value: Reply } | Retry> {
    let r: Response;
    try {
      r = await this.fetch(this.reportsUrl, { method: "POST", headers: { "Content-Type": CONTENT_TYPE }, body });
    } catch (error) {
      return { retry: `connection failed: ${(error as Error).message}`, after: null };
    }
    if (r.status === 200) return { value: (await r.json()) as Reply };
    return this.failure(r);
  }

  /** A retryable outcome (429, 5xx), or an UploadError with the problem document's detail. */
  private async failure(r: Response): Promise<Retry> {
    const text = await r.text().catch(() => "");
    if (r.status === 429 || r.status >= 500) {
      return { retry: `HTTP ${r.status}`, after: retryAfterSeconds(r.headers.get("Retry-After"), this.opts.now()) };
    }
    let detail = text.slice(0, 500);
    try {
      const doc = JSON.parse(text) as { detail?: string; title?: string };
      if (typeof doc.detail === "string") detail = `${doc.title ?? ""}: ${doc.detail}`;
    } catch {
      /* not a problem document: keep the text */
    }
    throw new UploadError(`HTTP ${r.status} from the collector: ${detail}`);
  }

  /** Exponential backoff with CSPRNG jitter (half fixed, half random), at least Retry-After. */
  delayMs(failures: number, retryAfter: number | null): number {
    const ceiling = Math.min(this.opts.maxBackoffMs, this.opts.backoffMs * 2 ** (failures - 1));
    const jitter = new Uint32Array(cryptoSource.read(4).buffer)[0] / 2 ** 32;
    return Math.max(ceiling / 2 + (jitter * ceiling) / 2, (retryAfter ?? 0) * 1000);
  }

  private async withRetries<T>(attempt: () => Promise<{ value: T } | Retry>, summary?: UploadSummary): Promise<T> {
    for (let failures = 0; ; ) {
      let outcome: { value: T } | Retry;
      try {
        outcome = await attempt();
      } catch (error) {
        if (error instanceof UploadError) throw error;
        outcome = { retry: (error as Error).message, after: null }; // network failure on GET / body read
      }
      if ("value" in outcome) return outcome.value;
      failures += 1;
      if (failures > this.opts.retries) throw new UploadError(`gave up after ${failures} attempts: ${outcome.retry}`);
      if (summary) summary.retries += 1;
      await this.opts.sleep(this.delayMs(failures, outcome.after));
    }
  }

  /**
   * Browsers: on `pagehide` or `visibilitychange` to hidden, hand the spooled
   * envelopes to `navigator.sendBeacon` (best effort: no reply is seen, so
   * they stay in the spool and are resent, as `replayed`, on the next load).
   * Needs the last `load()` cached synchronously: pass `lines()`.
   */
  installBeacon(lines: () => readonly string[]): () => void {
    const g = globalThis as unknown as {
      navigator?: { sendBeacon?: (url: string, data: Blob) => boolean };
      addEventListener?: (type: string, fn: () => void) => void;
      removeEventListener?: (type: string, fn: () => void) => void;
      document?: { visibilityState?: string };
    };
    if (!g.navigator?.sendBeacon || !g.addEventListener) return () => {};
    const send = (): void => {
      if (g.document?.visibilityState === "visible") return;
      for (const [start, end] of batchBounds(lines(), this.opts.batchSize, Math.min(this.opts.maxBody, 64_000))) {
        const body = lines().slice(start, end).map((l) => l + "\n").join("");
        // beacons are limited to ~64 kB in flight; a refused one simply stays spooled
        if (!g.navigator!.sendBeacon!(this.reportsUrl, new Blob([body], { type: BEACON_CONTENT_TYPE }))) break;
      }
    };
    g.addEventListener("pagehide", send);
    g.addEventListener("visibilitychange", send);
    return () => {
      g.removeEventListener?.("pagehide", send);
      g.removeEventListener?.("visibilitychange", send);
    };
  }
}
