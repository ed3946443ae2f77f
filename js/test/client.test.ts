/** Client state, the privacy budget, the spool and the Uploader (Node storage; a fake fetch for the HTTP rules). */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { canonicalClientId, ledgerPath, parseCsv, readCsv, statePath } from "../src/table.js";
import { chmodSync, mkdtempSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  BudgetExceededError,
  BudgetedEncoder,
  MemoryLedgerStorage,
  MemorySpool,
  PrivacyLedger,
  Uploader,
  UploadError,
  batchBounds,
  UPLOADER_DEFAULTS,
  envelopeId,
  loadSpec,
  recordId,
  makeBudget,
  makeEncoder,
  rapporEpsilons,
} from "../src/index.js";
import { FileLedgerStorage, FileSpool, openClientState } from "../src/node.js";

// GRR at ε = 0.1 (the canonical spec Python writes; also in the vectors' budget section)
const GRR_SMALL = loadSpec('{"domain":["a","b","c"],"epsilon":0.1,"format":1,"mechanism":"grr","p":"6565437337047553411/18446744073709551616"}');
// GRR at ε = 1 (the canonical spec Python writes)
const GRR = loadSpec('{"domain":["a","b","c"],"epsilon":1.0,"format":1,"mechanism":"grr","p":"10627480729818062551/18446744073709551616"}');
const RAPPOR = loadSpec('{"domain":null,"encoding":"bloom","f":"1/2","format":1,"hash":"mmh3","mechanism":"rappor","num_bits":16,"num_cohorts":4,"num_hashes":2,"p":"1/4","q":"3/4"}');
const BOOL = loadSpec('{"domain":null,"encoding":"boolean","f":"1/2","format":1,"hash":"mmh3","mechanism":"rappor","num_bits":1,"num_cohorts":1,"num_hashes":1,"p":"1/4","q":"3/4"}');
const tmp = () => mkdtempSync(join(tmpdir(), "ldp-js-"));

describe("privacy budget", () => {
  it("fresh reports cost ε each; the report over the budget is refused and not recorded", async () => {
    const ledger = new PrivacyLedger(new MemoryLedgerStorage(), makeBudget(3));
    const encoder = new BudgetedEncoder(makeEncoder(GRR), ledger);
    for (let i = 0; i < 3; i++) await encoder.encode("a");
    await assert.rejects(encoder.encode("a"), BudgetExceededError);
    assert.equal(await ledger.committed(), 3);
  });
  it("a finite RAPPOR domain is committed at most d·ε∞: a boolean client reports forever within 2ε∞", async () => {
    const { inf } = rapporEpsilons(BOOL);
    const ledger = new PrivacyLedger(new MemoryLedgerStorage(), makeBudget(2 * inf! * (1 + 1e-9)));
    const encoder = new BudgetedEncoder(makeEncoder(BOOL), ledger);
    for (let i = 0; i < 50; i++) await encoder.encode(i % 3 === 0);
    assert.ok((await ledger.committed()) <= 2 * inf! * (1 + 1e-9));
  });
  it("a Bloom RAPPOR client is committed R·ε₁ whatever its values (refusals never depend on them)", async () => {
    const { one } = rapporEpsilons(RAPPOR);
    const ledger = new PrivacyLedger(new MemoryLedgerStorage(), makeBudget(3.5 * one));
    const encoder = new BudgetedEncoder(makeEncoder(RAPPOR), ledger);
    for (let i = 0; i < 3; i++) await encoder.encode("same");
    await assert.rejects(encoder.encode("same"), BudgetExceededError);
  });
  it("optimal composition at δ > 0 admits more fresh reports than basic, never fewer (δ = 0: the same)", async () => {
    const count = async (composition: string, delta: number) => {
      const ledger = new PrivacyLedger(new MemoryLedgerStorage(), makeBudget(2, delta, composition));
      const encoder = new BudgetedEncoder(makeEncoder(GRR_SMALL), ledger);
      let n = 0;
      for (; n < 100; n++) {
        try {
          await encoder.encode("a");
        } catch (error) {
          assert.ok(error instanceof BudgetExceededError);
          break;
        }
      }
      return n;
    };
    const basic = await count("basic", 0);
    assert.equal(basic, 20);
    assert.equal(await count("optimal", 0), basic);
    assert.ok((await count("optimal", 1e-6)) > basic);
  });
});

describe("Node client state and ledger files", () => {
  it("a state file is created once (0600), reused, and never replaced", () => {
    const dir = tmp();
    const file = join(dir, "states", "c.json");
    const first = openClientState(file, RAPPOR);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir, "states")).mode & 0o777, 0o700);
    assert.deepEqual(openClientState(file, RAPPOR), first);
    assert.throws(() => openClientState(file, GRR), /belongs to spec/);
  });
  it("refuses a symbolic link and a file others may read", () => {
    const dir = tmp();
    writeFileSync(join(dir, "real.json"), "{}", { mode: 0o600 });
    symlinkSync(join(dir, "real.json"), join(dir, "link.json"));
    assert.throws(() => openClientState(join(dir, "link.json"), RAPPOR), /symbolic link/);
    writeFileSync(join(dir, "open.json"), "{}");
    chmodSync(join(dir, "open.json"), 0o644);
    assert.throws(() => openClientState(join(dir, "open.json"), RAPPOR), /other users/);
  });
  it("concurrent processes charging one ledger file lose no charge", async () => {
    const file = join(tmp(), "ledger.json");
    const script = `
      import { FileLedgerStorage } from "./src/node.ts";
      import { PrivacyLedger, loadSpec, makeBudget } from "./src/index.ts";
      const spec = loadSpec(${JSON.stringify(GRR.canonicalJson)});
      const ledger = new PrivacyLedger(new FileLedgerStorage(${JSON.stringify(file)}), makeBudget(1000));
      for (let i = 0; i < 20; i++) await ledger.charge(spec, null);`;
    const run = () =>
      new Promise<void>((resolve, reject) => {
        const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: "inherit" });
        child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`exit ${code}`))));
      });
    await Promise.all([run(), run(), run(), run()]);
    const data = JSON.parse(readFileSync(file, "utf8"));
    assert.equal(data.streams[`fresh:${GRR.fingerprint}`].reports, 80);
    assert.equal(statSync(file).mode & 0o777, 0o600);
  });
});

describe("Uploader", () => {
  const task = { fingerprint: GRR.fingerprint, time_precision: 60, mechanism: "grr" };
  const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

  it("envelope ids are 16 CSPRNG bytes in base64url without padding", () => {
    const id = envelopeId();
    assert.match(id, /^[A-Za-z0-9_-]{22}$/);
    assert.notEqual(id, envelopeId());
  });
  it("batches stay under 1,000 envelopes and the byte limit", () => {
    assert.deepEqual(batchBounds(["aaaa", "bb", "cc", "d"], 2, 7), [[0, 1], [1, 3], [3, 4]]);
    assert.throws(() => batchBounds(["x".repeat(10)], 5, 8), /over 8 bytes/);
  });
  it("spools before sending, retries 429 after Retry-After with the same bytes, empties the spool only on 200", async () => {
    const spool = new MemorySpool();
    const bodies: string[] = [];
    const sleeps: number[] = [];
    let spooledAtFirstPost = -1;
    const fetch = (async (url: string, init?: RequestInit) => {
      if (!init?.method) return json(200, task);
      if (spooledAtFirstPost < 0) spooledAtFirstPost = spool.lines.length;
      bodies.push(init.body as string);
      if (bodies.length === 1) return json(429, { title: "slow down" }, { "Retry-After": "2" });
      if (bodies.length === 2) throw new TypeError("connection reset");
      const n = (init.body as string).split("\n").length - 1;
      return json(200, { accepted: n - 1, replayed: 1, rejected: [] });
    }) as typeof globalThis.fetch;
    const uploader = new Uploader("http://x", "T", spool, { fetch, sleep: async (ms) => void sleeps.push(ms), now: () => 1_764_000_059_000 });
    const reports = Array.from({ length: 5 }, () => '{"v":1,"spec":"' + GRR.fingerprint + '","value":"a"}');
    const records = await uploader.enqueue(reports);
    assert.match(records[0], /^\{"task":"T","id":"[A-Za-z0-9_-]{22}","at":1764000059,"report":\{"v":1,/);
    const summary = await uploader.flush();
    assert.equal(spooledAtFirstPost, 5);
    assert.equal(bodies.length, 3);
    assert.ok(bodies.every((b) => b === bodies[0])); // never re-randomized, never re-minted
    assert.match(bodies[0], /^\{"id":"[A-Za-z0-9_-]{22}","t":1764000000,"report":\{"v":1,"spec":"[0-9a-f]{16}","value":"a"\}\}\n/);
    assert.ok(sleeps[0] >= 2000);
    assert.deepEqual([summary.accepted, summary.replayed, summary.retries], [4, 1, 2]);
    assert.equal(spool.lines.length, 0);
    // the task is known now: later records carry t, truncated
    assert.match((await uploader.enqueue([reports[0]]))[0], /"t":1764000000,/);
  });
  it("a 4xx problem document stops the upload with its detail and keeps the spool", async () => {
    const spool = new MemorySpool();
    const fetch = (async (_url: string, init?: RequestInit) =>
      init?.method ? json(413, { title: "Payload Too Large", detail: "body over 1 MiB" }) : json(200, task)) as typeof globalThis.fetch;
    const uploader = new Uploader("http://x", "T", spool, { fetch });
    await uploader.enqueue(['{"v":1,"spec":"' + GRR.fingerprint + '","value":"b"}']);
    await assert.rejects(uploader.flush(), (e: Error) => e instanceof UploadError && /body over 1 MiB/.test(e.message));
    assert.equal(spool.lines.length, 1);
  });
  it("refuses reports of another spec before spooling when the fingerprint is known; otherwise dead-letters them unsent", async () => {
    const spool = new MemorySpool();
    let posts = 0;
    const fetch = (async (_url: string, init?: RequestInit) => (init?.method ? (posts++, json(500, {})) : json(200, task))) as typeof globalThis.fetch;
    const known = new Uploader("http://x", "T", spool, { fetch, fingerprint: GRR.fingerprint });
    await assert.rejects(known.enqueue(['{"v":1,"spec":"0000000000000000","value":"b"}']), /takes .*nothing was spooled/);
    await assert.rejects(known.enqueue(["not a report"]), /line 1 is not a report/);
    assert.equal(spool.lines.length, 0);
    const unknown = new Uploader("http://x", "T", spool, { fetch });
    await unknown.enqueue(['{"v":1,"spec":"0000000000000000","value":"b"}']);
    const summary = await unknown.flush();
    assert.equal(posts, 0);
    assert.deepEqual(summary.rejected.map((r) => r.reason), ["wrong_spec"]);
    assert.equal(spool.lines.length, 0);
    assert.equal((await spool.deadLetters())[0].reason, "wrong_spec");
  });
  it("enqueue never asks the collector: reports are spooled while it is down, and sent when it is back", async () => {
    const spool = new MemorySpool();
    let up = false;
    let requests = 0;
    const fetch = (async (_url: string, init?: RequestInit) => {
      requests++;
      if (!up) throw new TypeError("fetch failed: connection refused");
      if (!init?.method) return json(200, task);
      return json(200, { accepted: (init.body as string).split("\n").length - 1, replayed: 0, rejected: [] });
    }) as typeof globalThis.fetch;
    const uploader = new Uploader("http://x", "T", spool, { fetch, sleep: async () => undefined, now: () => 1_764_000_059_000 });
    const records = await uploader.enqueue(['{"v":1,"spec":"' + GRR.fingerprint + '","value":"a"}']);
    assert.equal(requests, 0);
    assert.deepEqual(spool.lines, records);
    await assert.rejects(uploader.flush(), /gave up after 6 attempts: fetch failed: connection refused; the reports stay spooled/);
    assert.deepEqual(spool.lines, records);
    up = true;
    assert.equal((await uploader.flush()).accepted, 1);
    assert.equal(spool.lines.length, 0);
  });
  it("an offline flush is bounded by default: 6 attempts, about 6 to 13 s of backoff; a long Retry-After ends it at once", async () => {
    const spool = new MemorySpool();
    const clock = 1_764_000_000_000;
    const waits: number[] = [];
    const down = (async () => {
      throw new TypeError("offline");
    }) as typeof globalThis.fetch;
    const uploader = new Uploader("http://x", "T", spool, { fetch: down, sleep: async (ms) => void waits.push(ms), now: () => clock });
    await uploader.enqueue(['{"v":1,"spec":"' + GRR.fingerprint + '","value":"a"}']);
    await assert.rejects(uploader.flush(), /gave up after 6 attempts/);
    const total = waits.reduce((a, b) => a + b, 0);
    assert.equal(waits.length, UPLOADER_DEFAULTS.retries);
    assert.ok(total >= 6_250 && total <= 12_500, `backoff total ${total} ms`);
    const busy = (async () => json(503, {}, { "Retry-After": "3600" })) as typeof globalThis.fetch;
    waits.length = 0;
    const again = new Uploader("http://x", "T", spool, { fetch: busy, sleep: async (ms) => void waits.push(ms), now: () => clock });
    await assert.rejects(again.flush(), /time limit, 30000 ms, would pass before the next/);
    assert.deepEqual(waits, []);
    assert.equal(spool.lines.length, 1);
  });
  it("two tasks on one spool: each Uploader sends and removes only its own; a rejected envelope goes to the dead-letter list", async () => {
    for (const spool of [new MemorySpool(), new FileSpool(join(tmp(), "spool.jsonl"))]) {
      const other = { fingerprint: "0123456789abcdef", time_precision: 3600, mechanism: "grr" };
      const posted: Record<string, string[]> = { A: [], B: [] };
      const fetch = (async (url: string, init?: RequestInit) => {
        const name = /\/v1\/tasks\/([AB])/.exec(url)![1];
        if (!init?.method) return json(200, name === "A" ? task : other);
        const ids = (init.body as string).trim().split("\n").map((l) => JSON.parse(l).id as string);
        posted[name].push(...ids);
        // the collector rejects A's second envelope
        const rejected = name === "A" ? [{ index: 1, id: ids[1], reason: "invalid_report", detail: "bad bits" }] : [];
        return json(200, { accepted: ids.length - rejected.length, replayed: 0, rejected });
      }) as typeof globalThis.fetch;
      const a = new Uploader("http://x", "A", spool, { fetch });
      const b = new Uploader("http://x", "B", spool, { fetch });
      const ra = await a.enqueue(['{"v":1,"spec":"' + GRR.fingerprint + '","value":"a"}', '{"v":1,"spec":"' + GRR.fingerprint + '","value":"b"}']);
      const rb = await b.enqueue(['{"v":1,"spec":"0123456789abcdef","value":"c"}']);
      const summary = await a.flush();
      assert.deepEqual(posted.A, ra.map(recordId));
      assert.deepEqual(posted.B, []);
      assert.deepEqual(summary.rejected, [{ id: recordId(ra[1]), reason: "invalid_report", detail: "bad bits" }]);
      assert.deepEqual(await spool.load(), rb); // B's record untouched
      const dead = await spool.deadLetters();
      assert.deepEqual(dead, [{ record: ra[1], reason: "invalid_report", detail: "bad bits" }]);
      await b.flush();
      assert.deepEqual(posted.B, rb.map(recordId));
      assert.deepEqual(await spool.load(), []);
      await spool.removeDeadLetters(new Set([recordId(ra[1])]));
      assert.deepEqual(await spool.deadLetters(), []);
    }
  });
  it("a file spool keeps envelopes across processes (0600) and drops a torn last line", async () => {
    const file = join(tmp(), "spool.jsonl");
    const spool = new FileSpool(file);
    await spool.append(['{"id":"A","t":0,"report":{}}', '{"id":"B","t":0,"report":{}}']);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    writeFileSync(file, readFileSync(file, "utf8") + '{"id":"C","t"'); // a crash mid-append
    assert.deepEqual((await new FileSpool(file).load()).length, 2);
    await spool.remove(new Set(["A"]));
    assert.deepEqual(await spool.load(), ['{"id":"B","t":0,"report":{}}']);
  });
});

describe("ldp-encode", () => {
  it("writes one report per line and refuses over-budget lines (exit 3)", () => {
    const dir = tmp();
    writeFileSync(join(dir, "spec.json"), GRR.canonicalJson);
    writeFileSync(join(dir, "v.txt"), "a\nb\nc\n");
    const out = execFileSync(process.execPath, ["dist/cli.js", "--spec", join(dir, "spec.json"), join(dir, "v.txt")], { encoding: "utf8" });
    assert.equal(out.trim().split("\n").length, 3);
    const args = ["dist/cli.js", "--spec", join(dir, "spec.json"), join(dir, "v.txt"), "--state", join(dir, "s"), "--budget", "2"];
    assert.throws(() => execFileSync(process.execPath, args, { stdio: "pipe" }), (e: { status: number; stdout: Buffer }) => e.status === 3 && e.stdout.toString().trim().split("\n").length === 2);
  });
});

describe("ldp-encode: CSV input and client ids (as Python's ldp encode)", () => {
  const RAPPOR_TEXT = RAPPOR.canonicalJson;
  const run = (args: string[]) => execFileSync(process.execPath, ["dist/cli.js", ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

  it("reads CSV as the csv module does: quotes, doubled quotes, a field spanning lines, CR LF, empty lines skipped", () => {
    const records = parseCsv('a,b\r\n"x, y","say ""hi"""\n\n"two\nlines",\n', "f.csv");
    assert.deepEqual(records, [
      [1, ["a", "b"]],
      [2, ["x, y", 'say "hi"']],
      [4, ["two\nlines", ""]],
    ]);
    assert.throws(() => readCsv("a,b\n1\n", "f.csv"), /line 2: 1 fields, but the header has 2/);
    assert.throws(() => readCsv("a,a\n", "f.csv"), /repeats the column\(s\) 'a'/);
    assert.throws(() => parseCsv('"open', "f.csv"), /not valid CSV/);
  });
  it("canonical client ids: exact text, a decimal integer's zero fraction dropped, empty refused", () => {
    assert.deepEqual(["1", "1.0", "1.000", "-3.0", "007", " 1", "1.5", "alice"].map(canonicalClientId), ["1", "1", "1", "-3", "007", " 1", "1.5", "alice"]);
    assert.throws(() => canonicalClientId(""), /empty/);
  });
  it("state files: SHA-256 of the canonical id, first 32 hex digits (Python's state_path); the ledger beside", () => {
    // sha256("1") = 6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b
    assert.equal(statePath("d", "1.0"), join("d", "6b86b273ff34fce19d6b804eff5a3f57.json"));
    assert.equal(ledgerPath("d", "1"), join("d", "6b86b273ff34fce19d6b804eff5a3f57.ledger.json"));
  });
  it("a multi-attribute spec reads one column per attribute (numbers parsed), its grid tables from --tables", () => {
    const dir = tmp();
    const vectors = JSON.parse(readFileSync(new URL("../../tests/vectors/vectors.json", import.meta.url), "utf8"));
    const input = vectors.specs.cases.find((c: { id: string }) => c.id === "multi-attribute/numeric").input_json;
    const tables = vectors.encodings.find((c: { spec: string }) => c.spec === "multi-attribute/numeric").tables;
    const spec = loadSpec(input);
    writeFileSync(join(dir, "spec.json"), spec.canonicalJson);
    writeFileSync(join(dir, "tables.json"), JSON.stringify({ fingerprint: spec.fingerprint, attributes: tables }));
    writeFileSync(join(dir, "r.csv"), "load,extra,ms,os,kb\n0.5,x, 12 ,mac,-1\n1e-1,y,250,linux,0.25\n");
    const args = ["--spec", join(dir, "spec.json"), join(dir, "r.csv"), "--tables", join(dir, "tables.json")];
    const lines = run(args).trim().split("\n");
    assert.equal(lines.length, 2);
    for (const line of lines) {
      const report = JSON.parse(line);
      assert.deepEqual(Object.keys(report), ["v", "spec", "a0_value", "a1_value", "a2_value", "a3_value"]);
      assert.ok(["linux", "mac", "\u00e9"].includes(report.a0_value));
    }
    const fails = (extra: string[], pattern: RegExp, csv?: string) => {
      if (csv !== undefined) writeFileSync(join(dir, "bad.csv"), csv);
      const target = csv === undefined ? join(dir, "r.csv") : join(dir, "bad.csv");
      assert.throws(
        () => run(["--spec", join(dir, "spec.json"), target, ...extra]),
        (e: { status: number; stderr: string }) => e.status === 2 && pattern.test(e.stderr) && !/at .*cli\.js/.test(e.stderr),
      );
    };
    fails([], /attribute "ms" \(piecewise\) needs the server's sampling table/);
    fails(["--tables", join(dir, "tables.json")], /has no column 'kb'; its columns: 'os', 'ms'/, "os,ms\nmac,1\n");
    fails(["--tables", join(dir, "tables.json")], /row 1: the value is missing \(column 'ms'\)/, "os,ms,kb,load\nmac,,1,0\n");
    fails(["--tables", join(dir, "tables.json")], /row 2: numeric value must be a finite number, got "fast" \(column 'ms'\)/, "os,ms,kb,load\nmac,1,1,0\nmac,fast,1,0\n");
    fails(["--tables", join(dir, "tables.json")], /row 1: attribute "os"/, "os,ms,kb,load\nbsd,1,1,0\n");
    fails(["--tables", join(dir, "tables.json"), "--column", "os"], /--column does not apply to a multi-attribute spec/);
    writeFileSync(join(dir, "other.json"), JSON.stringify({ fingerprint: "0123456789abcdef", attributes: tables }));
    fails(["--tables", join(dir, "other.json")], /is for spec 0123456789abcdef, not this one/);
    writeFileSync(join(dir, "r.txt"), "mac\n");
    assert.throws(() => run(["--spec", join(dir, "spec.json"), join(dir, "r.txt")]), /reads records of the columns os, ms, kb, load: give a CSV table/);
  });
  it("--state: each row's client_id selects its persistent client; one id spelled two ways is one client", () => {
    const dir = tmp();
    writeFileSync(join(dir, "spec.json"), RAPPOR_TEXT);
    writeFileSync(join(dir, "v.csv"), "client_id,url\n1,a\n1.0,a\n007,a\nalice,b\n");
    const out = run(["--spec", join(dir, "spec.json"), join(dir, "v.csv"), "--column", "url", "--state", join(dir, "s")]);
    assert.equal(out.trim().split("\n").length, 4);
    const files = readdirSync(join(dir, "s")).filter((f) => f.endsWith(".json")).sort();
    assert.deepEqual(files, ["1", "007", "alice"].map((id) => statePath("", id)).sort());
  });
  it("--budget with --state: a ledger per client, refused rows emit nothing (exit 3); optimal composition accepted", () => {
    const dir = tmp();
    writeFileSync(join(dir, "spec.json"), GRR.canonicalJson);
    writeFileSync(join(dir, "v.csv"), "client_id,value\n1,a\n1,b\n1,c\n2,a\n");
    const args = ["--spec", join(dir, "spec.json"), join(dir, "v.csv"), "--state", join(dir, "s"), "--budget", "2"];
    assert.throws(
      () => run(args),
      (e: { status: number; stdout: string; stderr: string }) => e.status === 3 && e.stdout.trim().split("\n").length === 3 && /1 rows refused/.test(e.stderr),
    );
    assert.deepEqual(readdirSync(join(dir, "s")).filter((f) => f.endsWith(".ledger.json")).sort(), [ledgerPath("", "1"), ledgerPath("", "2")].sort());
    const optimal = ["--spec", join(dir, "spec.json"), join(dir, "v.csv"), "--state", join(dir, "t"), "--budget", "5", "--budget-delta", "1e-6", "--composition", "optimal"];
    assert.equal(run(optimal).trim().split("\n").length, 4);
  });
  it("errors name what is wrong: no client_id column, an empty id, --column on text, several columns", () => {
    const dir = tmp();
    writeFileSync(join(dir, "spec.json"), GRR.canonicalJson);
    writeFileSync(join(dir, "a.csv"), "value\na\n");
    writeFileSync(join(dir, "b.csv"), "client_id,value\n,a\n");
    writeFileSync(join(dir, "c.csv"), "x,y\na,b\n");
    writeFileSync(join(dir, "v.txt"), "a\n");
    const fails = (args: string[], pattern: RegExp) =>
      assert.throws(() => run(["--spec", join(dir, "spec.json"), ...args]), (e: { status: number; stderr: string }) => e.status === 2 && pattern.test(e.stderr));
    fails([join(dir, "a.csv"), "--state", join(dir, "s")], /--state needs a 'client_id' column/);
    fails([join(dir, "b.csv"), "--state", join(dir, "s")], /row 1 of .*: the client_id is missing/);
    fails([join(dir, "v.txt"), "--column", "x"], /--column applies to CSV inputs only/);
    fails([join(dir, "c.csv")], /several columns \(x, y\); choose one with --column/);
    fails([join(dir, "c.csv"), "--column", "z"], /no column 'z'/);
  });
});


describe("ldp-encode: input that is not UTF-8, and long values", () => {
  const run = (args: string[]) => execFileSync(process.execPath, ["dist/cli.js", ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const fails = (args: string[]) => {
    try {
      run(args);
    } catch (error) {
      return error as { status: number; stdout: string; stderr: string };
    }
    return assert.fail("ldp-encode accepted it");
  };
  it("refuses a values file that is not UTF-8 (never encodes U+FFFD in its place), naming the line, byte and column", () => {
    const dir = tmp();
    writeFileSync(join(dir, "spec.json"), GRR.canonicalJson);
    writeFileSync(join(dir, "v.txt"), Buffer.from([0x61, 0x0a, 0x62, 0x63, 0xff, 0x0a]));
    writeFileSync(join(dir, "v.csv"), Buffer.concat([Buffer.from("value\na\n"), Buffer.from([0xe2, 0x41, 0x0a])]));
    const text = fails(["--spec", join(dir, "spec.json"), join(dir, "v.txt")]);
    assert.equal(text.status, 2);
    assert.equal(text.stdout, "");
    assert.match(text.stderr, /^ldp-encode: input file '.*v\.txt', line 2: not UTF-8 text \(byte 0xff at column 3\); save it as UTF-8\n$/);
    const csv = fails(["--spec", join(dir, "spec.json"), join(dir, "v.csv")]);
    assert.match(csv.stderr, /input file '.*v\.csv', line 3: not UTF-8 text \(byte 0xe2 at column 1\)/);
    writeFileSync(join(dir, "bad-spec.json"), Buffer.concat([Buffer.from(GRR.canonicalJson.replace('"a"', '"')), Buffer.from([0xc3, 0x22])]));
    assert.match(fails(["--spec", join(dir, "bad-spec.json"), join(dir, "v.csv")]).stderr, /spec '.*bad-spec\.json', line 1: not UTF-8 text \(byte 0xc3/);
  });
  it("a 5 MB value outside the domain is echoed cut, with its length", () => {
    const dir = tmp();
    writeFileSync(join(dir, "spec.json"), GRR.canonicalJson);
    writeFileSync(join(dir, "v.txt"), "a\n" + "x".repeat(5_000_000) + "\n");
    const error = fails(["--spec", join(dir, "spec.json"), join(dir, "v.txt")]);
    assert.equal(error.status, 2);
    assert.ok(error.stderr.length < 300, `stderr of ${error.stderr.length} characters`);
    assert.match(error.stderr, /line 2: value "x{80}"… \(5000000 characters\) is not in the domain/);
  });
  it("the library refuses a string with a lone surrogate (not UTF-8 encodable) instead of hashing U+FFFD", () => {
    assert.throws(() => makeEncoder(RAPPOR).encode("ab\uD800"), /lone surrogate/);
  });
});
