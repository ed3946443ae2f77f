/**
 * A client's budget is set once, when its ledger is created, and its ledger is
 * never bypassed (issue 24, as Python's `client_ledger`): whenever a ledger
 * exists beside a client's state, every report is charged to it under its
 * stored budget, with or without a budget given; another budget is refused;
 * without a ledger and without a budget, none is created.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { StateClients } from "../src/clients.js";
import {
  BudgetExceededError,
  BudgetedEncoder,
  MemoryLedgerStorage,
  PrivacyLedger,
  loadSpec,
  makeBudget,
  makeEncoder,
  rapporEpsilons,
} from "../src/index.js";
import { FileLedgerStorage, clientLedger, ledgerBeside, openClientEncoder } from "../src/node.js";
import { ledgerPath } from "../src/table.js";

// GRR at ε = 1 (the canonical spec Python writes): each report costs exactly 1
const GRR = loadSpec('{"domain":["a","b","c"],"epsilon":1.0,"format":1,"mechanism":"grr","p":"10627480729818062551/18446744073709551616"}');
const RAPPOR = loadSpec('{"domain":null,"encoding":"bloom","f":"1/2","format":1,"hash":"mmh3","mechanism":"rappor","num_bits":16,"num_cohorts":4,"num_hashes":2,"p":"1/4","q":"3/4"}');
const tmp = () => mkdtempSync(join(tmpdir(), "ldp-js-ledger-"));
const ONCE = "a budget is set once, when its ledger is created, and never changed; give the stored budget or none";

interface Run {
  status: number;
  reports: number;
  stderr: string;
}

/** Run `ldp-encode`; its exit status, the number of reports it wrote and its stderr. */
function encode(args: string[]): Run {
  try {
    const out = execFileSync(process.execPath, ["dist/cli.js", ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    return { status: 0, reports: out.split("\n").filter(Boolean).length, stderr: "" };
  } catch (error) {
    const e = error as { status: number; stdout: string; stderr: string };
    return { status: e.status, reports: e.stdout.split("\n").filter(Boolean).length, stderr: e.stderr };
  }
}

/** The committed ε of the ledger file (read under its stored budget). */
async function committed(file: string, epsilon: number): Promise<number> {
  return new PrivacyLedger(new FileLedgerStorage(file), makeBudget(epsilon)).committed();
}

function ledgersIn(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".ledger.json")) : [];
}

describe("ldp-encode: a client's existing ledger is charged and enforced without --budget", () => {
  it("text input, GRR ε=1: --budget 3 spends 1; runs without --budget spend 2, then 3; the 4th unit of ε is refused", async () => {
    const dir = tmp();
    writeFileSync(join(dir, "spec.json"), GRR.canonicalJson);
    writeFileSync(join(dir, "v.txt"), "a\n");
    const args = ["--spec", join(dir, "spec.json"), join(dir, "v.txt"), "--state", join(dir, "s")];
    const ledger = join(dir, "s", "client.ledger.json");
    assert.deepEqual(encode([...args, "--budget", "3"]), { status: 0, reports: 1, stderr: "" });
    assert.equal(await committed(ledger, 3), 1);
    for (const spent of [2, 3]) {
      assert.deepEqual(encode(args), { status: 0, reports: 1, stderr: "" }, `the run that spends ${spent}`);
      assert.equal(await committed(ledger, 3), spent);
    }
    const fourth = encode(args);
    assert.equal(fourth.status, 3, fourth.stderr);
    assert.equal(fourth.reports, 0);
    assert.match(fourth.stderr, /^encoded 0 values with grr .*\n1 lines refused: the client's privacy budget would be exceeded; nothing was emitted for them\n$/);
    assert.equal(await committed(ledger, 3), 3);
  });

  it("CSV input, RAPPOR: a client's ledger created by --budget 3·ε₁ allows exactly 3 reports over 4 runs; other clients are not budgeted", async () => {
    const one = rapporEpsilons(RAPPOR).one;
    const dir = tmp();
    writeFileSync(join(dir, "spec.json"), RAPPOR.canonicalJson);
    writeFileSync(join(dir, "first.csv"), "client_id,value\nalice,v\n");
    writeFileSync(join(dir, "v.csv"), "client_id,value\nalice,v\nbob,v\n");
    const args = (file: string) => ["--spec", join(dir, "spec.json"), join(dir, file), "--state", join(dir, "s")];
    assert.equal(encode([...args("first.csv"), "--budget", String(3 * one)]).status, 0);
    const runs = [1, 2, 3].map(() => encode(args("v.csv")));
    assert.deepEqual(
      runs.map((r) => [r.status, r.reports]),
      [
        [0, 2],
        [0, 2],
        [3, 1], // alice's 4th report refused; bob, who has no ledger, is not budgeted
      ],
    );
    assert.match(runs[2].stderr, /1 rows refused/);
    assert.equal(await committed(join(dir, "s", ledgerPath("", "alice")), 3 * one), 3 * one);
    assert.deepEqual(ledgersIn(join(dir, "s")), [ledgerPath("", "alice")]);
  });

  it("a ledger is created with its budget even when the run's first charge is refused, and holds afterwards", () => {
    const dir = tmp();
    writeFileSync(join(dir, "spec.json"), GRR.canonicalJson);
    writeFileSync(join(dir, "v.txt"), "a\n");
    const args = ["--spec", join(dir, "spec.json"), join(dir, "v.txt"), "--state", join(dir, "s")];
    assert.equal(encode([...args, "--budget", "0.5"]).status, 3); // GRR ε=1 never fits 0.5
    assert.deepEqual(ledgersIn(join(dir, "s")), ["client.ledger.json"]);
    const again = encode(args);
    assert.deepEqual([again.status, again.reports], [3, 0]);
  });

  it("a --budget other than the stored one is refused in one line, before anything is written; the stored one is accepted", () => {
    const dir = tmp();
    writeFileSync(join(dir, "spec.json"), GRR.canonicalJson);
    writeFileSync(join(dir, "v.txt"), "a\n");
    const args = ["--spec", join(dir, "spec.json"), join(dir, "v.txt"), "--state", join(dir, "s")];
    assert.equal(encode([...args, "--budget", "3"]).status, 0);
    const ledger = join(dir, "s", "client.ledger.json");
    const before = readFileSync(ledger, "utf8");
    const other = encode([...args, "--budget", "5"]);
    assert.equal(other.status, 2);
    assert.equal(other.reports, 0);
    assert.equal(other.stderr.split("\n").length, 2, other.stderr); // one line and its newline
    assert.ok(other.stderr.includes(`holds the budget epsilon=3, not epsilon=5: ${ONCE}`), other.stderr);
    assert.ok(other.stderr.includes(ledger), "the message names the ledger file");
    const optimal = encode([...args, "--budget", "3", "--budget-delta", "1e-6", "--composition", "optimal"]);
    assert.equal(optimal.status, 2);
    assert.ok(optimal.stderr.includes(`not epsilon=3, delta=0.000001, optimal composition: ${ONCE}`), optimal.stderr);
    assert.equal(readFileSync(ledger, "utf8"), before);
    assert.deepEqual(encode([...args, "--budget", "3"]), { status: 0, reports: 1, stderr: "" });
  });

  it("CSV: a --budget other than one client's stored budget is refused before any row is encoded, however late that client comes", () => {
    const dir = tmp();
    writeFileSync(join(dir, "spec.json"), GRR.canonicalJson);
    writeFileSync(join(dir, "alice.csv"), "client_id,value\nalice,a\n");
    writeFileSync(join(dir, "v.csv"), "client_id,value\n" + "bob,a\n".repeat(5000) + "alice,a\n");
    const args = (file: string) => ["--spec", join(dir, "spec.json"), join(dir, file), "--state", join(dir, "s")];
    assert.equal(encode([...args("alice.csv"), "--budget", "3"]).status, 0);
    const run = encode([...args("v.csv"), "--budget", "5000"]);
    assert.deepEqual([run.status, run.reports], [2, 0]); // not the 4,096 rows of bob printed before alice's
    assert.match(run.stderr, new RegExp(`^ldp-encode: privacy ledger '.*' holds the budget epsilon=3, not epsilon=5000: ${ONCE} \\(it is enforced either way\\)\n$`));
    assert.deepEqual(ledgersIn(join(dir, "s")), [ledgerPath("", "alice")], "bob's ledger is not created");
  });

  it("without a ledger and without --budget no ledger is created (RAPPOR keeps its state)", () => {
    const dir = tmp();
    writeFileSync(join(dir, "grr.json"), GRR.canonicalJson);
    writeFileSync(join(dir, "rappor.json"), RAPPOR.canonicalJson);
    writeFileSync(join(dir, "v.csv"), "client_id,value\nalice,a\nbob,b\n");
    writeFileSync(join(dir, "v.txt"), "a\n");
    for (const spec of ["grr.json", "rappor.json"]) {
      for (const input of ["v.csv", "v.txt"]) {
        const states = join(dir, `${spec}-${input}`);
        assert.equal(encode(["--spec", join(dir, spec), join(dir, input), "--state", states]).status, 0);
        assert.deepEqual(ledgersIn(states), [], `${spec} ${input}`);
      }
    }
  });

  it("--budget-delta and --composition without --budget are refused: a stored ledger keeps its own", () => {
    const dir = tmp();
    writeFileSync(join(dir, "spec.json"), GRR.canonicalJson);
    writeFileSync(join(dir, "v.txt"), "a\n");
    const run = encode(["--spec", join(dir, "spec.json"), join(dir, "v.txt"), "--state", join(dir, "s"), "--composition", "optimal"]);
    assert.equal(run.status, 2);
    assert.match(run.stderr, /^ldp-encode: --budget-delta and --composition go with --budget \(a client's existing ledger keeps its stored budget\)\n$/);
  });
});

describe("library: a file-backed client's ledger is never bypassed", () => {
  it("openClientEncoder charges the ledger beside the state with or without a budget; another budget is refused", async () => {
    const dir = tmp();
    const state = join(dir, "client.json");
    assert.equal(ledgerBeside(state), join(dir, "client.ledger.json"));
    const plain = await openClientEncoder(state, RAPPOR, {});
    assert.ok(!(plain instanceof BudgetedEncoder));
    assert.ok(existsSync(state) && !existsSync(ledgerBeside(state)), "no budget, no ledger: none created");
    const one = rapporEpsilons(RAPPOR).one;
    const first = await openClientEncoder(state, RAPPOR, { budget: makeBudget(2 * one) });
    await first.encode("v");
    const again = await openClientEncoder(state, RAPPOR); // no budget: the stored one holds
    assert.ok(again instanceof BudgetedEncoder);
    assert.equal(again.ledger.budget.epsilon, 2 * one);
    await again.encode("v");
    await assert.rejects(again.encode("v"), BudgetExceededError);
    const grr = await openClientEncoder(state, GRR); // the ledger is the client's, whatever the spec
    assert.ok(grr instanceof BudgetedEncoder);
    await assert.rejects(grr.encode("a"), BudgetExceededError);
    await assert.rejects(openClientEncoder(state, RAPPOR, { budget: makeBudget(9) }), new RegExp(`holds the budget epsilon=${2 * one}, not epsilon=9: ${ONCE}`));
  });

  it("clientLedger: null without a ledger and a budget (nothing created); created once with a budget; a corrupt ledger is refused", async () => {
    const dir = tmp();
    const state = join(dir, "sub", "c.json");
    assert.equal(await clientLedger(state), null);
    assert.ok(!existsSync(join(dir, "sub")), "not even the directory");
    const created = await clientLedger(state, makeBudget(2));
    assert.ok(created !== null && existsSync(join(dir, "sub", "c.ledger.json")));
    assert.deepEqual((await clientLedger(state))!.budget, makeBudget(2));
    writeFileSync(join(dir, "sub", "c.ledger.json"), "{not json", { mode: 0o600 });
    await assert.rejects(clientLedger(state), /privacy ledger '.*c\.ledger\.json' is corrupt/);
  });

  it("PrivacyLedger.open works on any storage: null and nothing written without a budget, the stored budget afterwards", async () => {
    const storage = new MemoryLedgerStorage();
    assert.equal(await PrivacyLedger.open(storage), null);
    assert.equal(storage.data, null);
    const ledger = (await PrivacyLedger.open(storage, makeBudget(2)))!;
    await ledger.charge(GRR, null);
    const reopened = (await PrivacyLedger.open(storage))!;
    assert.deepEqual(reopened.budget, makeBudget(2));
    await reopened.charge(GRR, null);
    await assert.rejects(reopened.charge(GRR, null), BudgetExceededError);
    await assert.rejects(PrivacyLedger.open(storage, makeBudget(3)), new RegExp(`^Error: privacy ledger holds the budget epsilon=2, not epsilon=3: ${ONCE}`));
    // a ledger object built with another budget is refused at its first use, with the same message
    await assert.rejects(new PrivacyLedger(storage, makeBudget(3)).charge(GRR, null), /holds the budget epsilon=2, not epsilon=3: a budget is set once/);
  });

  it("a ledger another process creates during a run charges the client from the next chunk (StateClients.findNewLedgers)", async () => {
    const dir = tmp();
    const clients = new StateClients(GRR, dir, null, makeEncoder(GRR));
    const before = await clients.encoderOf("alice");
    assert.ok(!(before instanceof BudgetedEncoder));
    await clientLedger(clients.statePath("alice"), makeBudget(1)); // "another process"
    await clients.findNewLedgers(["alice", "bob", "alice"]); // bob: not open, skipped
    const after = await clients.encoderOf("alice");
    assert.ok(after instanceof BudgetedEncoder);
    await after.encode("a");
    await assert.rejects(after.encode("a"), BudgetExceededError);
    assert.equal(await committed(ledgerBeside(clients.statePath("alice")), 1), 1);
  });
});
