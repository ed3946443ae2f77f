/** Client state, the privacy budget, the spool and the Uploader (Node storage; a fake fetch for the HTTP rules). */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
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
  envelopeId,
  loadSpec,
  makeBudget,
  makeEncoder,
  rapporEpsilons,
} from "../src/index.js";
import { FileLedgerStorage, FileSpool, openClientState } from "../src/node.js";

// GRR at ε = 0.1 (the canonical spec Python writes; also in the vectors' budget section)
const GRR_SMALL = loadSpec('{"domain":["a","b","c"],"epsilon":0.1,"format":1,"mechanism":"grr","p":"6565437337047553411/18446744073709551616"}');
const GRR = loadSpec('{"domain":["a","b","c"],"epsilon":1.0,"format":1,"mechanism":"grr","p":"1/2"}');
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
    const envelopes = await uploader.enqueue(reports);
    assert.match(envelopes[0], /^\{"id":"[A-Za-z0-9_-]{22}","t":1764000000,"report":\{"v":1,/);
    const summary = await uploader.flush();
    assert.equal(spooledAtFirstPost, 5);
    assert.equal(bodies.length, 3);
    assert.ok(bodies.every((b) => b === bodies[0])); // never re-randomized, never re-minted
    assert.ok(sleeps[0] >= 2000);
    assert.deepEqual([summary.accepted, summary.replayed, summary.retries], [4, 1, 2]);
    assert.equal(spool.lines.length, 0);
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
  it("refuses reports of another spec before spooling anything", async () => {
    const spool = new MemorySpool();
    const uploader = new Uploader("http://x", "T", spool, { fetch: (async () => json(200, task)) as typeof globalThis.fetch });
    await assert.rejects(uploader.enqueue(['{"v":1,"spec":"0000000000000000","value":"b"}']), /takes/);
    assert.equal(spool.lines.length, 0);
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
