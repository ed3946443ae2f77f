/**
 * The persistent clients of an `ldp-encode --state DIR` run, as Python's
 * `ldp encode --state` keeps them (`client/cli.py`): each client's state
 * file in DIR (a memoized mechanism, RAPPOR, ...: its secret and cohort), its privacy ledger beside it.
 *
 * A client with a ledger has every report charged to it, under the budget
 * stored there, whether or not the run has a budget (`clientLedger`); the
 * run's budget only creates the ledgers of clients that have none, and one
 * that differs from a stored budget is refused. A ledger another process
 * creates during the run is found by `findNewLedgers`, which the CLI calls
 * before each chunk of 65,536 rows (as Python's).
 */
import * as path from "node:path";
import { type Budget, BudgetedEncoder } from "./budget.js";
import { type Encoder, makeEncoder } from "./encoders.js";
import { clientLedger, nativeShake256, openClientState } from "./node.js";
import type { Spec } from "./spec.js";
import { statePath } from "./table.js";

interface Client {
  state: string;
  encoder: Encoder | BudgetedEncoder;
}

export class StateClients {
  private readonly clients = new Map<string, Client>();

  /**
   * @param spec the run's spec
   * @param directory DIR of `--state`
   * @param budget `--budget`: the budget of the ledgers of clients that have none (null: none is created)
   * @param shared the encoder every client of a stateless mechanism shares (null: a memoized mechanism, one encoder per client)
   */
  constructor(
    readonly spec: Spec,
    readonly directory: string,
    readonly budget: Budget | null,
    private readonly shared: Encoder | null,
  ) {}

  /** The state file of a client: `DIR/<hash of the canonical id>.json`, or `DIR/client.json` for "" (a text input's one client). */
  statePath(key: string): string {
    return key === "" ? path.join(this.directory, "client.json") : statePath(this.directory, key);
  }

  /** The encoder of the client `key` if it is open already (synchronous: the common case of a run). */
  opened(key: string): Encoder | BudgetedEncoder | undefined {
    return this.clients.get(key)?.encoder;
  }

  /** The encoder of the client `key` (a canonical id, or ""), opened on first use; charging its ledger when it has one. */
  async encoderOf(key: string): Promise<Encoder | BudgetedEncoder> {
    let client = this.clients.get(key);
    if (client === undefined) {
      const state = this.statePath(key);
      const encoder = this.shared ?? makeEncoder(this.spec, { client: openClientState(state, this.spec), shake: nativeShake256 });
      const ledger = await clientLedger(state, this.budget);
      client = { state, encoder: ledger === null ? encoder : new BudgetedEncoder(encoder, ledger) };
      this.clients.set(key, client);
    }
    return client.encoder;
  }

  /**
   * Refuse, before anything is encoded, a run's budget that differs from the
   * stored budget of an existing ledger of one of the clients `keys` (the
   * same one-line error `clientLedger` gives; nothing is created here).
   */
  async checkStoredBudgets(keys: Iterable<string>): Promise<void> {
    if (this.budget === null) return;
    for (const key of new Set(keys)) {
      const state = this.statePath(key);
      if ((await clientLedger(state)) !== null) await clientLedger(state, this.budget); // an existing ledger: compare
    }
  }

  /** Charge from now on those of the open clients `keys` that had no ledger and have one now (another process created it). */
  async findNewLedgers(keys: Iterable<string>): Promise<void> {
    for (const key of new Set(keys)) {
      const client = this.clients.get(key);
      if (client === undefined || client.encoder instanceof BudgetedEncoder) continue;
      const ledger = await clientLedger(client.state);
      if (ledger !== null) client.encoder = new BudgetedEncoder(client.encoder, ledger);
    }
  }
}
