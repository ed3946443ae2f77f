/**
 * Uploading reports to an `ldp serve` collector (docs/collector.md#upload),
 * keeping the randomize-once rule: each report is given an envelope id once
 * (16 CSPRNG bytes) and written to a `Spool` by `enqueue` BEFORE anything
 * else, with no network request: a report that was charged to the budget is
 * durable before the collector is even asked about the task. `flush` fetches
 * the task's settings (`GET /v1/tasks/{task}`, once), makes each envelope
 * (`t`: the enqueue time truncated to the task's `time_precision`; the same
 * bytes on every attempt) and sends them until a 200 reply accounts for them.
 *
 * A spool may hold several tasks: each record names its task, and an Uploader
 * only sends (and removes) its own. A 200 reply's `accepted` and `replayed`
 * remove envelopes from the spool; a `rejected` one is moved to the spool's
 * dead-letter list (`spool.deadLetters()`), never deleted silently.
 *
 * Connection errors, timeouts, 429 and 5xx are retried with exponential
 * backoff and CSPRNG jitter, waiting at least Retry-After, within a bounded
 * time (defaults: `UPLOADER_DEFAULTS`: an unreachable collector fails a
 * flush in about 6 to 13 s, and no flush takes longer than 30 s plus one
 * request); what was not sent stays spooled for the next flush. Another 4xx
 * stops with the server's problem detail.
 */
import { toBase64 } from "./bytes.js";
import { parseJson } from "./json.js";
import { cryptoSource } from "./random.js";
import { fingerprintOfTag } from "./spec.js";
import { clip } from "./text.js";

export const MAX_ENVELOPES = 1000;
export const MAX_BODY_BYTES = 1 << 20;
const CONTENT_TYPE = "application/x-ndjson";
/**
 * Beacons: a CORS-safelisted type, so no preflight (which a beacon, sent with
 * credentials, would fail, and which may not finish while the page unloads);
 * the collector reads text/plain as JSON Lines from an origin the task allows.
 */
const BEACON_CONTENT_TYPE = "text/plain;charset=UTF-8";

/** A spool record a collector refused (or that could not be sent to its task), kept for the app to read. */
export interface DeadLetter {
  /** The spool record, exactly as spooled (its task, id, time and report). */
  record: string;
  /** The collector's reason (`wrong_spec`, `invalid_report`, `report_dropped`, ...) or the client's. */
  reason: string;
  detail: string;
}

/**
 * Durable store of unsent spool records (exact bytes, one per line), and of
 * the dead-letter list: records the collector rejected, kept until the app
 * removes them.
 */
export interface Spool {
  load(): Promise<string[]>;
  append(lines: string[]): Promise<void>;
  remove(ids: ReadonlySet<string>): Promise<void>;
  /** Move the records with these ids from the spool to the dead-letter list, with why (written before they leave the spool). */
  deadLetter(rejected: ReadonlyMap<string, { reason: string; detail: string }>): Promise<void>;
  /** The dead-letter list, oldest first. */
  deadLetters(): Promise<DeadLetter[]>;
  /** Forget dead letters the app has dealt with (by the ids of their records). */
  removeDeadLetters(ids: ReadonlySet<string>): Promise<void>;
}

/** The dead letters of `old` plus those records of `lines` named by `rejected`, each id once. */
export function addDeadLetters(
  old: readonly DeadLetter[],
  lines: readonly string[],
  rejected: ReadonlyMap<string, { reason: string; detail: string }>,
): DeadLetter[] {
  const have = new Set(old.map((d) => recordId(d.record)));
  const out = [...old];
  for (const line of lines) {
    const id = recordId(line);
    const why = rejected.get(id);
    if (why && !have.has(id)) {
      out.push({ record: line, reason: why.reason, detail: why.detail });
      have.add(id);
    }
  }
  return out;
}

/** A spool in memory (lost on exit: tests only). */
export class MemorySpool implements Spool {
  lines: string[] = [];
  dead: DeadLetter[] = [];
  async load(): Promise<string[]> {
    return [...this.lines];
  }
  async append(lines: string[]): Promise<void> {
    this.lines.push(...lines);
  }
  async remove(ids: ReadonlySet<string>): Promise<void> {
    this.lines = this.lines.filter((l) => !ids.has(recordId(l)));
  }
  async deadLetter(rejected: ReadonlyMap<string, { reason: string; detail: string }>): Promise<void> {
    this.dead = addDeadLetters(this.dead, this.lines, rejected);
    await this.remove(new Set(rejected.keys()));
  }
  async deadLetters(): Promise<DeadLetter[]> {
    return [...this.dead];
  }
  async removeDeadLetters(ids: ReadonlySet<string>): Promise<void> {
    this.dead = this.dead.filter((d) => !ids.has(recordId(d.record)));
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
  /** Rejected by the collector (or refused before sending): now in the spool's dead-letter list. */
  rejected: Rejected[];
  batches: number;
  retries: number;
}

export class UploadError extends Error {
  override name = "UploadError";
}

/** The Uploader's defaults (docs: js/README.md and docs/web-client.md). */
export const UPLOADER_DEFAULTS = {
  /** Retries of one request after its first attempt (connection errors, timeouts, 429, 5xx). */
  retries: 5,
  /** First backoff; doubled after each failure, up to `maxBackoffMs`; each wait is jittered between half and all of it. */
  backoffMs: 500,
  maxBackoffMs: 5_000,
  /** One request's time limit (then it counts as a failed attempt). */
  timeoutMs: 15_000,
  /** No retry starts (and no wait is begun) past this time from the start of a flush; what is left stays spooled. */
  flushDeadlineMs: 30_000,
} as const;

export interface UploaderOptions {
  fetch?: typeof fetch;
  batchSize?: number; // ≤ 1,000
  maxBody?: number; // ≤ 1 MiB
  backoffMs?: number;
  maxBackoffMs?: number;
  retries?: number;
  timeoutMs?: number;
  flushDeadlineMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number; // ms since the epoch
  /** The task's spec fingerprint, when known (the spec the app loaded): `enqueue` refuses other reports without asking the collector. */
  fingerprint?: string;
  /** Called after each acknowledged batch with the running summary. */
  progress?: (summary: UploadSummary) => void;
}

/** A fresh envelope id: 16 CSPRNG bytes, base64url without padding (22 characters). */
export function envelopeId(): string {
  return toBase64(cryptoSource.read(16)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * A spool record as `enqueue` writes it: its task, the envelope id, the
 * time (`t`, truncated to the task's precision when the Uploader knew it; else
 * `at`, the enqueue time in Unix seconds, truncated when the envelope is made)
 * and the report's exact bytes. A bare envelope `{"id","t","report"}`
 * (spools of earlier versions, no task) is read too.
 */
const RECORD = /^\{"task":"([A-Za-z0-9_-]{1,200})","id":"([A-Za-z0-9_-]{22})","(at|t)":(0|[1-9][0-9]*),"report":(.*)\}$/s;
const BARE_ENVELOPE = /^\{"id":"([A-Za-z0-9_-]{22})","t":(0|[1-9][0-9]*),"report":(.*)\}$/s;
const TASK_ID = /^[A-Za-z0-9_-]{1,200}$/;

interface SpoolRecord {
  task: string | null;
  id: string;
  /** Enqueue time, s (truncated when the record is made into an envelope). */
  at: number | null;
  /** Already truncated (bare envelopes). */
  t: number | null;
  report: string;
}

function parseRecord(line: string): SpoolRecord | null {
  const r = RECORD.exec(line);
  if (r) return { task: r[1], id: r[2], at: r[3] === "at" ? Number(r[4]) : null, t: r[3] === "t" ? Number(r[4]) : null, report: r[5] };
  const e = BARE_ENVELOPE.exec(line);
  if (e) return { task: null, id: e[1], at: null, t: Number(e[2]), report: e[3] };
  return null;
}

/** The envelope id of a spool record (or of a bare envelope). */
export function recordId(line: string): string {
  return parseRecord(line)?.id ?? String((parseJson(line) as { id: string }).id);
}

/** The `spec` of a report line, or null when it is not a report object. */
function reportSpec(report: string): string | null {
  try {
    const spec = (parseJson(report) as { spec?: unknown } | null)?.spec;
    return typeof spec === "string" ? spec : null;
  } catch {
    return null;
  }
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
  private readonly opts: Required<Omit<UploaderOptions, "fetch" | "progress" | "fingerprint">> & Pick<UploaderOptions, "progress" | "fingerprint">;

  constructor(
    readonly baseUrl: string,
    readonly taskId: string,
    readonly spool: Spool,
    options: UploaderOptions = {},
  ) {
    if (typeof taskId !== "string" || !TASK_ID.test(taskId)) throw new UploadError(`not a task id: ${clip(String(taskId))}`);
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    const D = UPLOADER_DEFAULTS;
    this.opts = {
      batchSize: Math.min(options.batchSize ?? MAX_ENVELOPES, MAX_ENVELOPES),
      maxBody: Math.min(options.maxBody ?? MAX_BODY_BYTES, MAX_BODY_BYTES),
      backoffMs: options.backoffMs ?? D.backoffMs,
      maxBackoffMs: options.maxBackoffMs ?? D.maxBackoffMs,
      retries: options.retries ?? D.retries,
      timeoutMs: options.timeoutMs ?? D.timeoutMs,
      flushDeadlineMs: options.flushDeadlineMs ?? D.flushDeadlineMs,
      sleep: options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
      now: options.now ?? (() => Date.now()),
      progress: options.progress,
      fingerprint: options.fingerprint === undefined ? undefined : fingerprintOfTag(options.fingerprint),
    };
  }

  private get taskUrl(): string {
    return `${this.baseUrl.replace(/\/$/, "")}/v1/tasks/${encodeURIComponent(this.taskId)}`;
  }

  private get reportsUrl(): string {
    return `${this.taskUrl}/reports`;
  }

  /** The task's public description (`GET /v1/tasks/{task}`), fetched once, retried as uploads are (within `deadline`, ms since the epoch). */
  async taskInfo(deadline = this.opts.now() + this.opts.flushDeadlineMs): Promise<TaskInfo> {
    if (this.task) return this.task;
    const url = this.taskUrl;
    const response = await this.withRetries(async (signal) => {
      const r = await this.fetch(url, { signal, headers: { Accept: "application/json" } });
      if (r.status === 200) return { value: (await r.json()) as TaskInfo };
      return this.failure(r);
    }, deadline);
    if (response === null || typeof response !== "object") throw new UploadError(`${url} did not answer a task description`);
    if (!Number.isInteger(response.time_precision) || response.time_precision < 1) throw new UploadError("task has no valid time_precision");
    if (typeof response.fingerprint !== "string" || !/^[0-9a-f]{16}$/.test(response.fingerprint)) {
      throw new UploadError(`task ${this.taskId} has no valid spec fingerprint`);
    }
    if (this.opts.fingerprint !== undefined && this.opts.fingerprint !== response.fingerprint) {
      throw new UploadError(`task ${this.taskId} takes spec ${response.fingerprint}, not ${this.opts.fingerprint} (the spec this Uploader was given)`);
    }
    this.task = response;
    return response;
  }

  /**
   * Spool report JSON lines (as `reportToJson` writes them), each with a
   * fresh envelope id, durably, and before anything else: no network
   * request, so an unreachable collector never stands between a charged
   * report and storage. A line that is not a report, or (when the task's
   * fingerprint is known: the `fingerprint` option, or an earlier `flush`)
   * a report of another spec, is refused before anything is written.
   * Returns the spool records.
   */
  async enqueue(reportLines: readonly string[]): Promise<string[]> {
    const fingerprint = this.task?.fingerprint ?? this.opts.fingerprint;
    reportLines.forEach((line, i) => {
      const spec = reportSpec(line);
      if (spec === null) throw new UploadError(`line ${i + 1} is not a report (a JSON object with a spec fingerprint): ${clip(line)}`);
      if (fingerprint !== undefined && spec !== fingerprint) {
        throw new UploadError(`report of spec ${clip(spec)}, but task ${this.taskId} takes ${fingerprint}; nothing was spooled`);
      }
    });
    const seconds = Math.floor(this.opts.now() / 1000);
    const precision = this.task?.time_precision;
    const time = precision === undefined ? `"at":${seconds}` : `"t":${seconds - (seconds % precision)}`;
    const records = reportLines.map((report) => `{"task":"${this.taskId}","id":"${envelopeId()}",${time},"report":${report.trim()}}`);
    await this.spool.append(records);
    return records;
  }

  /** The envelope of one of this task's records (null: another task's, or a bare envelope of another spec). */
  private envelope(line: string, task: TaskInfo): { id: string; envelope: string; spec: string | null } | null {
    const r = parseRecord(line);
    if (r === null) return null;
    const spec = reportSpec(r.report);
    if (r.task === null ? spec !== task.fingerprint : r.task !== this.taskId) return null;
    const t = r.t ?? r.at! - (r.at! % task.time_precision);
    return { id: r.id, envelope: `{"id":"${r.id}","t":${t},"report":${r.report}}`, spec };
  }

  /**
   * Send this task's spooled records: fetch the task's settings (once), make
   * the envelopes, send them in batches. Each batch leaves the spool once a
   * 200 reply accounts for it: accepted and replayed envelopes are removed,
   * rejected ones moved to the dead-letter list. Records of another spec than
   * the task's are dead-lettered without being sent. Throws UploadError when
   * the collector stays unreachable (within the flush deadline) or refuses
   * the request; what was not acknowledged stays spooled.
   */
  async flush(): Promise<UploadSummary> {
    const deadline = this.opts.now() + this.opts.flushDeadlineMs;
    const summary: UploadSummary = { accepted: 0, replayed: 0, rejected: [], batches: 0, retries: 0 };
    const lines = await this.spool.load();
    const task = await this.taskInfo(deadline);
    const mine = lines.map((l) => this.envelope(l, task)).filter((e) => e !== null);
    const foreign = new Map<string, { reason: string; detail: string }>();
    for (const e of mine) {
      if (e.spec !== task.fingerprint) {
        const detail = `report of spec ${clip(String(e.spec))}, but task ${this.taskId} takes ${task.fingerprint}; not sent`;
        foreign.set(e.id, { reason: "wrong_spec", detail });
        summary.rejected.push({ id: e.id, reason: "wrong_spec", detail });
      }
    }
    if (foreign.size) await this.spool.deadLetter(foreign);
    const sendable = mine.filter((e) => !foreign.has(e.id));
    const envelopes = sendable.map((e) => e.envelope);
    for (const [start, end] of batchBounds(envelopes, this.opts.batchSize, this.opts.maxBody)) {
      const batch = sendable.slice(start, end);
      const body = envelopes.slice(start, end).map((l) => l + "\n").join(""); // the same bytes on every attempt
      const reply = await this.withRetries((signal) => this.post(body, signal), deadline, summary);
      if (reply.accepted + reply.replayed + reply.rejected.length !== batch.length) {
        throw new UploadError(`reply accounts for ${reply.accepted + reply.replayed + reply.rejected.length} of ${batch.length} envelopes`);
      }
      const rejected = new Map<string, { reason: string; detail: string }>();
      for (const r of reply.rejected) {
        const id = batch[r.index]?.id ?? r.id;
        if (id === null || id === undefined) continue;
        rejected.set(id, { reason: r.reason, detail: r.detail ?? "" });
        summary.rejected.push({ id, reason: r.reason, detail: r.detail ?? "" });
      }
      summary.accepted += reply.accepted;
      summary.replayed += reply.replayed;
      summary.batches += 1;
      if (rejected.size) await this.spool.deadLetter(rejected); // kept, before the batch leaves the spool
      await this.spool.remove(new Set(batch.map((e) => e.id).filter((id) => !rejected.has(id))));
      this.opts.progress?.(summary);
    }
    return summary;
  }

  private async post(body: string, signal: AbortSignal | undefined): Promise<{ value: Reply } | Retry> {
    let r: Response;
    try {
      r = await this.fetch(this.reportsUrl, { method: "POST", headers: { "Content-Type": CONTENT_TYPE }, body, signal });
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

  /** A signal that aborts a request after `ms` (none where AbortSignal.timeout is missing). */
  private static timeout(ms: number): AbortSignal | undefined {
    const make = (AbortSignal as unknown as { timeout?: (ms: number) => AbortSignal }).timeout;
    return typeof make === "function" ? make.call(AbortSignal, Math.max(1, ms)) : undefined;
  }

  private async withRetries<T>(
    attempt: (signal: AbortSignal | undefined) => Promise<{ value: T } | Retry>,
    deadline: number,
    summary?: UploadSummary,
  ): Promise<T> {
    for (let failures = 0; ; ) {
      let outcome: { value: T } | Retry;
      const left = deadline - this.opts.now();
      try {
        outcome = await attempt(Uploader.timeout(Math.min(this.opts.timeoutMs, Math.max(left, 1000))));
      } catch (error) {
        if (error instanceof UploadError) throw error;
        outcome = { retry: (error as Error).message, after: null }; // network failure on GET / body read, timeout
      }
      if ("value" in outcome) return outcome.value;
      failures += 1;
      const wait = this.delayMs(failures, outcome.after);
      if (failures > this.opts.retries) throw new UploadError(`gave up after ${failures} attempts: ${outcome.retry}; the reports stay spooled`);
      if (this.opts.now() + wait > deadline) {
        throw new UploadError(
          `gave up after ${failures} attempts (the flush's time limit, ${this.opts.flushDeadlineMs} ms, would pass before the next): ${outcome.retry}; the reports stay spooled`,
        );
      }
      if (summary) summary.retries += 1;
      await this.opts.sleep(wait);
    }
  }

  /**
   * Browsers: on `pagehide` or `visibilitychange` to hidden, hand this task's
   * spooled envelopes to `navigator.sendBeacon` (best effort: no reply is
   * seen, so they stay in the spool and are resent, as `replayed`, on the
   * next load). It must act synchronously, so `records()` returns the spool
   * as last loaded: pass `() => spool.cached` of a `BrowserSpool` after
   * `await spool.load()`. Records are beaconed once the task's settings are
   * known: this fetches them now (in the background), if no `flush` did.
   */
  installBeacon(records: () => readonly string[]): () => void {
    const g = globalThis as unknown as {
      navigator?: { sendBeacon?: (url: string, data: Blob) => boolean };
      addEventListener?: (type: string, fn: () => void) => void;
      removeEventListener?: (type: string, fn: () => void) => void;
      document?: { visibilityState?: string };
    };
    if (!g.navigator?.sendBeacon || !g.addEventListener) return () => {};
    void this.taskInfo().catch(() => undefined); // known by the time the page is hidden, if the collector answers
    const send = (): void => {
      if (g.document?.visibilityState === "visible") return;
      const task = this.task;
      if (task === null) return;
      const lines = records()
        .map((l) => this.envelope(l, task))
        .filter((e) => e !== null && e.spec === task.fingerprint)
        .map((e) => e!.envelope);
      for (const [start, end] of batchBounds(lines, this.opts.batchSize, Math.min(this.opts.maxBody, 64_000))) {
        const body = lines.slice(start, end).map((l) => l + "\n").join("");
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
