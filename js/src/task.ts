/**
 * A task's spec from its collector, checked against the task's fingerprint
 * (docs/web-client.md#spec): the fingerprint is read from the JSON body of
 * `GET /v1/tasks/{task}` (readable from any origin the task allows), falling
 * back to the `ETag` of `GET /v1/tasks/{task}/spec` (readable across origins
 * only when the collector exposes it); the spec's text must have it, and
 * pass `loadSpec`'s checks (its stated ε against its exact probabilities).
 */
import { type JsonObject, parseJson } from "./json.js";
import { type Spec, loadSpec } from "./spec.js";
import { clip } from "./text.js";

/** A collector that could not be asked, or answered what no collector does. */
export class TaskError extends Error {
  override name = "TaskError";
}

/** The task's public description (`GET /v1/tasks/{task}`) and its spec, checked. */
export interface TaskSpec {
  spec: Spec;
  /** The task's public description as the collector sent it. */
  task: JsonObject;
  /** Where the fingerprint came from: the description's `fingerprint` field, or the spec's `ETag`. */
  fingerprintFrom: "body" | "etag";
}

async function get(fetcher: typeof fetch, url: string, accept: string): Promise<{ text: string; response: Response }> {
  let response: Response;
  try {
    response = await fetcher(url, { headers: { Accept: accept } });
  } catch (error) {
    throw new TaskError(`cannot reach ${url}: ${(error as Error).message}`);
  }
  const text = await response.text();
  if (response.status !== 200) {
    let detail = clip(text, 300);
    try {
      const problem = JSON.parse(text) as { detail?: unknown };
      if (typeof problem.detail === "string") detail = clip(problem.detail, 300);
    } catch {
      /* not a problem document */
    }
    throw new TaskError(`HTTP ${response.status} from ${url}: ${detail}`);
  }
  return { text, response };
}

/**
 * Fetch a task's description and spec from the collector at `baseUrl` and
 * load the spec against the task's fingerprint (the description's
 * `fingerprint` field, else the spec's `ETag`, quotes and `W/` removed).
 *
 * Throws TaskError when the collector cannot be reached or refuses, and
 * loadSpec's RangeError when the spec does not have the fingerprint or does
 * not pass its checks.
 */
export async function fetchTaskSpec(baseUrl: string, taskId: string, options: { fetch?: typeof fetch } = {}): Promise<TaskSpec> {
  const fetcher = options.fetch ?? globalThis.fetch.bind(globalThis);
  const url = `${baseUrl.replace(/\/$/, "")}/v1/tasks/${encodeURIComponent(taskId)}`;
  const described = await get(fetcher, url, "application/json");
  let task: JsonObject;
  try {
    const parsed = parseJson(described.text);
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new SyntaxError("not an object");
    task = parsed;
  } catch {
    throw new TaskError(`${url} did not answer a task description (JSON object): ${clip(described.text, 80, true)}`);
  }
  const served = await get(fetcher, `${url}/spec`, "application/json");
  const etag = served.response.headers.get("ETag");
  if (typeof task.fingerprint === "string") return { spec: loadSpec(served.text, task.fingerprint), task, fingerprintFrom: "body" };
  if (etag !== null) return { spec: loadSpec(served.text, etag), task, fingerprintFrom: "etag" };
  throw new TaskError(
    `no fingerprint for task ${clip(taskId, 80)}: its description (${url}) has no "fingerprint" field and the spec's ETag ` +
      "is not readable here (another origin: the collector must list ETag in Access-Control-Expose-Headers)",
  );
}
