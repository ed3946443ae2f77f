/**
 * Per-client privacy budget, with the Python ledger's rules
 * (`ldp/privacy/spending.py`, `ldp/privacy/budget.py`), basic composition:
 *
 * - a fresh-randomness mechanism (GRR, OUE, OLH, numeric, ...) is one stream
 *   per spec; each report costs the spec's ε;
 * - a value of a memoized mechanism (RAPPOR's PRR, ...: its privacy facts
 *   have a `permanentRatio`) is its own stream: r reports cost min(r·ε₁, ε∞)
 *   when the mechanism proves r·ε₁ (`memoLinear`), else ε₁ for one report and
 *   ε∞ from the second; the stream is named by HMAC-SHA256 (ledger-own key)
 *   of fingerprint ‖ 0 ‖ memo key (the encoder's `memoKey(value)`), so the
 *   ledger never holds a value;
 * - the budget is enforced on the *committed* total, which depends only on
 *   the number of reports per spec (refusals reveal nothing about values).
 *
 * A report is charged before it is released (`BudgetedEncoder`): if the
 * charge fails, the report is dropped. The ledger lives in a `LedgerStorage`
 * (a file on Node, IndexedDB/localStorage in browsers), updated in one
 * transaction per charge.
 *
 * Streams combine by the budget's composition rule, as in Python: `basic`
 * (the exactly rounded sum of the pieces, `fsum`) or `optimal` (the exact
 * composition of the pure pieces at the budget's δ, never above the sum;
 * `composition.ts`). (ε, δ) mechanisms (Gaussian) are refused, as by the
 * Python ledger. A memoized mechanism's ε₁ and ε∞ are Python's: the stated
 * ones, or ln of the exact ratios rounded up to the certified double
 * (`memoizedEpsilons`).
 *
 * The file is `ldp-privacy-ledger/1` unless a stream is charged ε∞ from its
 * second report (`linear: false`): then `ldp-privacy-ledger/2`, every stream
 * stating `linear`, which an older client refuses instead of undercharging.
 * A ledger whose budget composes exact curves (`exact`) or is a GDP μ
 * (Python's `Budget(mu=...)`) is refused here with one line: this client
 * does not compute those yet.
 */
import { hmacSha256 } from "./hash/hmac.js";
import { concatBytes, fromHex, toHex, utf8 } from "./bytes.js";
import { isMemoized, privacyFacts } from "./claim.js";
import { epsilonBoundOfRatio, fsum, heterogeneousEpsilon } from "./composition.js";
import type { Encoder } from "./encoder.js";
import { cryptoSource } from "./random.js";
import type { Report } from "./report.js";
import { type Spec, checkedSpec } from "./spec.js";
import type { Value } from "./values.js";

export const LEDGER_FORMAT = "ldp-privacy-ledger/1";
/** Version 2 (Python's `LEDGER_FORMAT_V2`): streams state `linear`; read and written when a stream needs it. */
export const LEDGER_FORMAT_V2 = "ldp-privacy-ledger/2";
const SLACK = 1e-12; // as Python: 10 × 0.1 fits a budget of 1

/** Thrown when a report would exceed the budget; nothing was recorded or released. */
export class BudgetExceededError extends Error {
  override name = "BudgetExceededError";
}

/** The composition rules (Python's `COMPOSITION_RULES`). */
export const COMPOSITION_RULES = ["basic", "optimal"] as const;
export type CompositionRule = (typeof COMPOSITION_RULES)[number];

export interface Budget {
  epsilon: number;
  /** δ at which the total ε is measured (`optimal`); 0 for pure ε. */
  delta: number;
  composition: CompositionRule;
}

/** One stream's record (field names as the Python ledger file). */
export interface Stream {
  spec: string;
  epsilon: number;
  epsilon_cap: number | null;
  reports: number;
  memoized: boolean;
  values: number | null;
  /** Memoized: r reports of one key cost min(r·ε₁, ε∞) (true) or ε₁ then ε∞ (false); in version-2 files only. */
  linear?: boolean;
  /**
   * Memoized: ε₁, what a key's first report costs, when below the per-report charge `epsilon` (a chain
   * whose ε′ = `memoReportEpsilon` exceeds ε₁); absent: `epsilon`. Python's `epsilon_first`.
   */
  epsilon_first?: number;
}

/** The ledger document, as stored (the Python ledger's JSON layout). */
export interface LedgerData {
  format: string;
  key: string; // 32 bytes, hex: the HMAC key naming memoized streams
  budget: Budget;
  streams: Record<string, Stream>;
}

/** Where a ledger lives: `update` reads, applies `change`, and writes in one exclusive transaction. */
export interface LedgerStorage {
  /** What to call the ledger in messages (a file storage: `privacy ledger '<file>'`); default `privacy ledger`. */
  readonly label?: string;
  update<T>(change: (current: LedgerData | null) => { data: LedgerData | null; result: T }): Promise<T>;
}

/** A checked budget (Python's `Budget`): total ε > 0, δ in [0, 1), composition "basic" or "optimal" (any case). */
export function makeBudget(epsilon: number, delta = 0, composition = "basic"): Budget {
  if (typeof epsilon !== "number" || !Number.isFinite(epsilon) || epsilon <= 0) {
    throw new RangeError(`budget epsilon must be a finite number > 0, got ${epsilon}`);
  }
  if (typeof delta !== "number" || !(delta >= 0 && delta < 1)) throw new RangeError(`budget delta must be in [0, 1), got ${delta}`);
  const rule = String(composition).toLowerCase();
  if (!(COMPOSITION_RULES as readonly string[]).includes(rule)) {
    throw new RangeError(`budget composition must be one of basic, optimal, got ${JSON.stringify(composition)}`);
  }
  return { epsilon, delta, composition: rule as CompositionRule };
}

/** `epsilon=3`, or `epsilon=1, delta=0.000001, optimal composition` (a budget in messages, as Python's). */
export function budgetText(budget: Budget): string {
  const delta = budget.delta ? `, delta=${budget.delta}` : "";
  return `epsilon=${budget.epsilon}${delta}${budget.composition === "basic" ? "" : `, ${budget.composition} composition`}`;
}

function sameBudget(a: Budget, b: Budget): boolean {
  return a.epsilon === b.epsilon && a.delta === b.delta && a.composition === b.composition;
}

/**
 * ε₁ (one report) and ε∞ (any number of reports of one memo key; null when
 * unbounded) of a memoized spec, as Python's `stream_parameters` reads its
 * spec's `epsilon_one` and `epsilon_inf`: the stated field when the spec
 * states one (checked against the exact ratio when it was loaded), else ln of
 * the exact worst-case ratio (`MechanismPrivacy`), rounded up to the smallest
 * certified double. A RangeError for a spec that is not memoized.
 */
export function memoizedEpsilons(spec: Spec): { one: number; inf: number | null } {
  const facts = privacyFacts(checkedSpec(spec).fields);
  if (!isMemoized(facts) || facts.ratio === null) throw new RangeError(`${spec.mechanism} is not memoized`);
  const stated = (name: string): number | null => {
    const v = spec.fields[name];
    return typeof v === "number" ? v : null;
  };
  const one = stated("epsilon_one") ?? stated("epsilon") ?? epsilonBoundOfRatio(facts.ratio);
  const permanent = facts.permanentRatio ?? null;
  return { one, inf: permanent === null ? null : (stated("epsilon_inf") ?? epsilonBoundOfRatio(permanent)) };
}

/** RAPPOR's ε₁ and ε∞ (`memoizedEpsilons`; kept for existing callers). */
export function rapporEpsilons(spec: Spec): { one: number; inf: number | null } {
  return memoizedEpsilons(spec);
}

/**
 * Whether a spec's mechanism is memoized (its privacy facts have a
 * `permanentRatio`): its reports derive from a permanent response per memo
 * key, so its client keeps a persistent state (secret, cohort) and the
 * ledger charges each memo key's stream.
 */
export function isMemoizedSpec(spec: Spec): boolean {
  return isMemoized(privacyFacts(checkedSpec(spec).fields));
}

/** (ε per report, ε cap, memoized, memo domain size) of a spec, as Python's `stream_parameters`. */
export function streamParameters(spec: Spec): Omit<Stream, "spec" | "reports"> {
  const facts = privacyFacts(checkedSpec(spec).fields);
  if (isMemoized(facts)) {
    const { one, inf } = memoizedEpsilons(spec);
    const values = facts.memoValues === undefined || facts.memoValues === null ? null : Number(facts.memoValues);
    // a chain whose r reports of one memo may cost more than r·ε₁ states the per-report charge that is sound
    const epsilon = facts.memoReportEpsilon ?? one;
    const linear = facts.memoLinear === true;
    // a key's first report is one report of the spec: ε₁, below the charge ε′ of r ≥ 2 (Python's first_report_epsilon)
    if (one < epsilon) return { epsilon, epsilon_cap: inf, memoized: true, values, linear, epsilon_first: one };
    return { epsilon, epsilon_cap: inf, memoized: true, values, linear };
  }
  if (spec.fields.delta !== undefined && spec.fields.delta !== null) {
    throw new RangeError(`cannot account for ${spec.mechanism}: the ledger composes pure epsilon-DP reports`);
  }
  const epsilon = spec.fields.epsilon;
  if (typeof epsilon !== "number") throw new RangeError(`cannot account for ${spec.mechanism}: it has no epsilon`);
  return { epsilon, epsilon_cap: null, memoized: false, values: null };
}

/**
 * Pure ε of `reports` reports of one memo key (Python's `memo_key_cost`): ε₁ = `first` (default `epsilon`)
 * for one report; from the second, min(r·ε′, ε∞) when linear (ε′ = `epsilon`), else ε∞.
 */
export function memoKeyCost(reports: number, epsilon: number, cap: number | null, linear = true, first: number | null = null): number {
  if (reports <= 0) return 0;
  if (reports === 1) return first === null ? epsilon : Math.min(first, epsilon);
  const capped = cap === null ? Infinity : cap;
  return linear ? Math.min(reports * epsilon, capped) : capped;
}

/** The pure ε-DP pieces a stream amounts to: ε per report, or one `memoKeyCost` for a memoized value (Python's `Stream.charges`). */
export function streamCharges(s: Stream): number[] {
  if (!s.memoized) return new Array<number>(s.reports).fill(s.epsilon);
  if (s.reports === 0) return [];
  return [memoKeyCost(s.reports, s.epsilon, s.epsilon_cap, s.linear !== false, s.epsilon_first ?? null)];
}

/**
 * Largest Σ_v memoKeyCost(r_v) over spreads of `reports` over at most `values` memo keys (Python's
 * `worst_case_memoized_cost`, docs/accounting.md#lifetime): the cost is concave on r ≥ 1, so for m keys
 * each holding a report the even spread is the largest, and the largest over m is at m = min(d, R),
 * min(d, ⌊R/2⌋) or min(d, ⌊R/2⌋ + 1).
 */
export function worstCaseMemoizedCost(
  reports: number,
  epsilon: number,
  cap: number | null,
  values: number | null,
  linear = true,
  first: number | null = null,
): number {
  if (reports <= 0) return 0;
  const keys = values === null ? reports : Math.min(values, reports);
  const one = first === null ? epsilon : Math.min(first, epsilon);
  const cost = (r: number): number => memoKeyCost(r, epsilon, cap, linear, first);
  const even = (m: number): number => {
    const base = Math.floor(reports / m);
    const extra = reports - base * m;
    return (extra ? extra * cost(base + 1) : 0) + (m - extra) * cost(base);
  };
  if (linear && one === epsilon && (cap === null || values === null)) return reports * epsilon;
  const half = Math.floor(reports / 2);
  let best = -Infinity;
  for (const m of new Set([keys, Math.min(keys, half), Math.min(keys, half + 1)])) {
    if (m >= 1) best = Math.max(best, even(m));
  }
  return best;
}

/** The total of pieces under the budget's rule: their exact sum, or (optimal, δ > 0) the smaller exact composition. */
export function composeEpsilons(pieces: number[], budget: Budget): number {
  const basic = fsum(pieces);
  if (budget.composition === "basic" || budget.delta === 0 || pieces.length === 0) return basic;
  return Math.min(basic, heterogeneousEpsilon(pieces, budget.delta));
}

/** What was actually sent (depends on the values; informational, never used to refuse). */
export function spentEpsilon(streams: Record<string, Stream>, budget: Budget): number {
  return composeEpsilons(Object.values(streams).flatMap(streamCharges), budget);
}

/** The enforced total: fresh streams as spent, each memoized spec one piece at its worst case over values. */
export function committedEpsilon(streams: Record<string, Stream>, budget: Budget): number {
  const pieces: number[] = [];
  const memo = new Map<string, Stream[]>();
  for (const s of Object.values(streams)) {
    if (!s.memoized) pieces.push(...streamCharges(s));
    else memo.set(s.spec, [...(memo.get(s.spec) ?? []), s]);
  }
  for (const group of memo.values()) {
    const reports = group.reduce((n, s) => n + s.reports, 0);
    const linear = group.every((s) => s.linear !== false);
    const first = group[0].epsilon_first ?? null;
    pieces.push(worstCaseMemoizedCost(reports, group[0].epsilon, group[0].epsilon_cap, group[0].values, linear, first));
  }
  return composeEpsilons(pieces, budget);
}

export function fitsBudget(committed: number, budget: Budget): boolean {
  return committed <= budget.epsilon * (1 + SLACK);
}

/**
 * A per-client ledger over a storage. `PrivacyLedger.open` applies the rule
 * of a client's budget: set once, when its ledger is created, and enforced
 * from then on whether or not a budget is given. The constructor takes the
 * budget as given and creates the ledger (with a fresh HMAC key) at the
 * first charge; a stored ledger with another budget is refused at each use.
 */
export class PrivacyLedger {
  constructor(
    private readonly storage: LedgerStorage,
    readonly budget: Budget,
  ) {}

  /**
   * The ledger in `storage` under its stored budget; created (exclusively,
   * in one transaction: of racing openers one creates it, the others use
   * it) with `budget` when there is none; null when there is none and no
   * budget (nothing is created). A `budget` other than the stored one is
   * refused: a budget is set once, when its ledger is created, and never
   * changed (a larger one would let the client spend more than it was
   * promised). Python's `PrivacyLedger.load_or_create` and `client_ledger`.
   */
  static async open(storage: LedgerStorage, budget: Budget | null = null): Promise<PrivacyLedger | null> {
    const label = storage.label ?? "privacy ledger";
    const stored = await storage.update((current): { data: LedgerData | null; result: Budget | null } => {
      if (current === null) {
        if (budget === null) return { data: null, result: null };
        return { data: freshLedger(budget), result: budget };
      }
      const held = storedBudget(checkedLedger(current, label), label);
      if (budget !== null && !sameBudget(held, budget)) throw new Error(budgetChangeMessage(label, held, budget));
      return { data: current, result: held };
    });
    return stored === null ? null : new PrivacyLedger(storage, stored);
  }

  private check(data: LedgerData): LedgerData {
    const label = this.storage.label ?? "privacy ledger";
    const held = storedBudget(checkedLedger(data, label), label);
    if (!sameBudget(held, this.budget)) throw new Error(budgetChangeMessage(label, held, this.budget));
    return data;
  }

  private fresh(): LedgerData {
    return freshLedger(this.budget);
  }

  /** The stream name of a report of `value` under `spec` (`memoKey`: a memoized mechanism's memo key bytes). */
  private streamName(data: LedgerData, spec: Spec, memoKey: Uint8Array | null): string {
    if (memoKey === null) return "fresh:" + spec.fingerprint;
    const message = concatBytes(utf8(spec.fingerprint), new Uint8Array([0]), memoKey);
    return "value:" + toHex(hmacSha256(fromHex(data.key), message));
  }

  /**
   * Record one report, or throw `BudgetExceededError` recording nothing.
   * Returns the spent ε after it. `memoKey`: the value's memo key for a
   * memoized mechanism (the encoder's `memoKey(value)`), required; ignored
   * (null) for fresh mechanisms.
   */
  async charge(spec: Spec, memoKey: Uint8Array | null): Promise<number> {
    const params = streamParameters(spec);
    if (params.memoized && memoKey === null) {
      throw new RangeError(`${spec.mechanism} is memoized: a report is charged with its value's memo key (the encoder's memoKey)`);
    }
    return this.storage.update((current) => {
      const data = current === null ? this.fresh() : this.check(current);
      const name = this.streamName(data, spec, params.memoized ? memoKey : null);
      const old = data.streams[name];
      const streams = { ...data.streams, [name]: { spec: spec.fingerprint, ...params, reports: (old?.reports ?? 0) + 1 } };
      const committed = committedEpsilon(streams, this.budget);
      if (!fitsBudget(committed, this.budget)) {
        throw new BudgetExceededError(
          `this report would bring the privacy committed to epsilon=${committed.toPrecision(6)}, over the budget ` +
            `epsilon=${this.budget.epsilon} (${this.budget.composition} composition); nothing was sent or recorded`,
        );
      }
      return { data: versioned({ ...data, streams }), result: spentEpsilon(streams, this.budget) };
    });
  }

  /** The spent ε so far, given the values (informational; 0 for a new ledger; creates nothing). */
  async spent(): Promise<number> {
    return this.storage.update((current) => ({ data: current, result: current === null ? 0 : spentEpsilon(this.check(current).streams, this.budget) }));
  }

  /** The committed ε so far (0 for a new ledger; creates nothing). */
  async committed(): Promise<number> {
    return this.storage.update((current) => ({ data: current, result: current === null ? 0 : committedEpsilon(this.check(current).streams, this.budget) }));
  }
}

function freshLedger(budget: Budget): LedgerData {
  return { format: LEDGER_FORMAT, key: toHex(cryptoSource.read(32)), budget: { ...budget }, streams: {} };
}

/**
 * The ledger as written: version 2 with `linear` on every stream when a stream is not linear, else
 * version 1 without it (Python's rule: a file an older client can read whenever it can hold it).
 */
function versioned(data: LedgerData): LedgerData {
  const version2 = Object.values(data.streams).some((s) => s.linear === false);
  const streams: Record<string, Stream> = {};
  for (const [name, s] of Object.entries(data.streams)) {
    const { linear, ...rest } = s;
    streams[name] = version2 ? { ...rest, linear: linear !== false } : rest;
  }
  return { ...data, format: version2 ? LEDGER_FORMAT_V2 : LEDGER_FORMAT, streams };
}

function checkedLedger(data: LedgerData, label: string): LedgerData {
  const version2 = data !== null && typeof data === "object" && data.format === LEDGER_FORMAT_V2;
  if (
    data === null ||
    typeof data !== "object" ||
    (data.format !== LEDGER_FORMAT && !version2) ||
    typeof data.key !== "string" ||
    data.key.length !== 64 ||
    typeof data.streams !== "object" ||
    data.streams === null ||
    typeof data.budget !== "object" ||
    data.budget === null
  ) {
    throw new Error(`${label} is corrupt`);
  }
  const budget = data.budget as unknown as Record<string, unknown>;
  if (version2 && ("mu" in budget || budget.composition === "exact")) {
    throw new Error(
      `${label} holds a budget composed by the mechanisms' exact curves (${"mu" in budget ? "a GDP mu" : "exact composition"}), ` +
        "which this client does not compute yet; charge it with the Python client",
    );
  }
  for (const s of Object.values(data.streams)) {
    if (version2 ? typeof s?.linear !== "boolean" : s !== null && typeof s === "object" && "linear" in s) {
      throw new Error(`${label} is corrupt`);
    }
    const first = s?.epsilon_first;
    if (first !== undefined && first !== null && !(typeof first === "number" && first >= 0 && first <= s.epsilon)) {
      throw new Error(`${label} is corrupt`);
    }
  }
  return data;
}

/** The budget a ledger holds, checked as `makeBudget` checks one (a corrupt one is refused). */
function storedBudget(data: LedgerData, label: string): Budget {
  const { epsilon, delta, composition } = data.budget;
  try {
    return makeBudget(epsilon, delta, composition);
  } catch (error) {
    throw new Error(`${label} is corrupt: its ${(error as Error).message}`);
  }
}

function budgetChangeMessage(label: string, held: Budget, asked: Budget): string {
  return (
    `${label} holds the budget ${budgetText(held)}, not ${budgetText(asked)}: a budget is set once, when its ledger ` +
    "is created, and never changed; give the stored budget or none (it is enforced either way)"
  );
}

/** An encoder whose every report is charged to a ledger before it is returned (randomize, charge, release). */
export class BudgetedEncoder {
  constructor(
    readonly encoder: Encoder,
    readonly ledger: PrivacyLedger,
  ) {}

  get spec(): Spec {
    return this.encoder.spec;
  }

  async encode(value: Value): Promise<Report> {
    const report = this.encoder.encode(value); // invalid values fail here, before any charge
    const memoKey = this.encoder.memoKey === undefined ? null : this.encoder.memoKey(value);
    await this.ledger.charge(this.encoder.spec, memoKey);
    return report;
  }
}

/** A ledger kept in memory only (tests, short-lived pages). */
export class MemoryLedgerStorage implements LedgerStorage {
  data: LedgerData | null = null;
  async update<T>(change: (current: LedgerData | null) => { data: LedgerData | null; result: T }): Promise<T> {
    const { data, result } = change(this.data === null ? null : structuredClone(this.data));
    this.data = data;
    return result;
  }
}
