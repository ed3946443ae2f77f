/**
 * What a mechanism family's privacy module returns (`MechanismPrivacy`), and
 * the spec-field readers and ratio helpers those modules share. This module
 * imports nothing mechanism-specific: each family's module in `privacy/`
 * imports it, and each mechanism's entry (generated in `catalog/`) names its
 * family's function.
 */
import { type Fraction, ONE, compare, div, divInt, fractionText, parseFraction, sub } from "./fraction.js";
import type { JsonObject } from "./json.js";
import { floatText, formatG } from "./float.js";
import { fail } from "./text.js";
import type { DomainValue } from "./values.js";

/**
 * The privacy facts of one spec, read from its exact probabilities (Python's
 * `privacy_ratio`, and for a memoized mechanism its `permanent_ratio` and
 * `memo_domain_size`). A mechanism is memoized iff `permanentRatio` is
 * present (not undefined).
 */
export interface MechanismPrivacy {
  /**
   * The exact worst-case ratio max P[y|x]/P[y|x′] of one report (a memoized
   * mechanism's ε₁ = ln ratio); null when the ratio is not in the spec (the
   * numeric grid tables come from the server, `checkTableClaim`).
   */
  readonly ratio: Fraction | null;
  /**
   * Memoized mechanisms only: the worst-case ratio of the permanent
   * (memoized) response, which bounds any number of reports of one memo key
   * (ε∞ = ln permanentRatio); null when unbounded (no permanent noise).
   */
  readonly permanentRatio?: Fraction | null;
  /** Memoized mechanisms only: how many distinct memo keys exist; null when unbounded. */
  readonly memoValues?: bigint | null;
  /**
   * The largest stated ε the mechanism supports, and why (the Python spec's
   * `max_epsilon`, `max_epsilon_reason`): added by `mechanismPrivacy` from
   * the generated `EPSILON_LIMITS`; a family's function leaves them out.
   */
  readonly maxEpsilon?: number;
  readonly maxEpsilonReason?: string;
  /**
   * False when the stated ε may exceed what the probabilities give (the
   * Python spec's `claim_matches_probabilities`): only the bound is checked.
   * Added by `mechanismPrivacy`, like `maxEpsilon`.
   */
  readonly claimMatches?: boolean;
  /**
   * Memoized mechanisms only: true when r reports of one memo key are proved
   * (r·ε′)-DP for this mechanism, ε′ its per-report charge (`memoReportEpsilon`,
   * else ε₁; Python's `memo_linear`, docs/accounting.md#memoized-streams), so
   * the ledger charges min(r·ε′, ε∞) per key; otherwise (the default) ε₁ for
   * a key's first report and ε∞ from its second.
   */
  readonly memoLinear?: boolean;
  /**
   * Memoized mechanisms whose r reports of one memo key may cost more than
   * r·ε₁ (the longitudinal chains, Python's `memo_report_epsilon`): the
   * per-report ε the ledger charges, so that min(r·ε, ε∞) is sound. Absent:
   * ε₁.
   */
  readonly memoReportEpsilon?: number;
}

/** A family's privacy function: the facts of canonical spec fields, after its constructor's range checks (a RangeError otherwise). */
export type PrivacyFunction = (fields: JsonObject) => MechanismPrivacy;

/** The text of a fraction, in messages. */
export const text = (f: Fraction): string => fractionText(f);

/** A probability field of canonical fields (a fraction string). */
export function prob(fields: JsonObject, name: string): Fraction {
  const v = fields[name];
  return typeof v === "string" ? parseFraction(v) : fail(`${String(fields.mechanism)} spec has no probability ${name}`);
}

/** An integer field of canonical fields. */
export function int(fields: JsonObject, name: string): bigint {
  const v = fields[name];
  return typeof v === "bigint" ? v : fail(`${String(fields.mechanism)} spec has no integer ${name}`);
}

/**
 * An integer field within [minimum, maximum] (Python's `check_int`, with its
 * message: the field, the range and the value).
 */
export function intIn(fields: JsonObject, name: string, minimum: bigint, maximum: bigint): bigint {
  const v = int(fields, name);
  if (v < minimum || v > maximum) fail(`${name} must be in [${minimum}, ${maximum}], got ${v}`);
  return v;
}

/** An integer with thousands separators, as Python's `f"{n:,}"` writes it (limits in messages). */
export function grouped(n: bigint | number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** The spec's categorical domain. */
export function domainOf(fields: JsonObject): DomainValue[] {
  const d = fields.domain;
  return Array.isArray(d) ? (d as DomainValue[]) : fail(`${String(fields.mechanism)} spec has no domain`);
}

/** The number of values of the spec's domain. */
export function domainSize(fields: JsonObject): bigint {
  return BigInt(domainOf(fields).length);
}

/**
 * The stated ε fields (`epsilon`, `epsilon_one`, `epsilon_inf`, when given)
 * finite and > 0, as Python's `check_epsilon` checks them when the spec is
 * built, before the family's checks.
 */
export function checkStatedEpsilons(fields: JsonObject): void {
  for (const name of ["epsilon", "epsilon_one", "epsilon_inf"]) if (fields[name] != null) positiveEpsilon(fields, name);
}

/** A stated ε field: a finite number > 0 (Python's `check_epsilon`, and its message). */
export function positiveEpsilon(fields: JsonObject, name: string): number {
  const v = fields[name];
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
    fail(`${name} must be a finite number > 0, got ${typeof v === "number" ? floatText(v) : String(v)}`);
  }
  return v;
}

/**
 * A domain of at most `limit` values (the Python spec class's
 * `max_domain_size`, with `why`, its `max_domain_reason`); `who` names the
 * spec in the message (its mechanism, or a variant of it: "basic rappor").
 */
export function checkDomainLimit(fields: JsonObject, limit: bigint, why: string, who = String(fields.mechanism)): void {
  const d = fields.domain;
  if (Array.isArray(d) && BigInt(d.length) > limit) {
    fail(`${who}: a domain of ${grouped(d.length)} values is above the limit of ${grouped(limit)} (${why})`);
  }
}

/** A probability field in (0, 1) (Python's `check_probability` with both ends open, and its message). */
export function openProb(fields: JsonObject, name: string): Fraction {
  const v = prob(fields, name);
  if (v.num <= 0n || compare(v, ONE) >= 0) fail(`${name} must be in (0, 1), got ${text(v)}`);
  return v;
}

/** Reports an int64 count can hold (`REPORT_HEADROOM`): numeric sums and variances stay finite up to this many. */
const REPORT_HEADROOM = 2 ** 63;

/**
 * A numeric range whose value-unit quantities stay finite over 2^63 reports
 * (`NumericSpec._check_value_scale`), for a mechanism whose unbiased native
 * estimate of one report is ±c: its deviation c·(high − low)/2 and its reach
 * |low/2 + high/2| + that deviation.
 */
export function checkValueScale(mechanism: string, low: number, high: number, epsilon: number, c: number): void {
  const spread = Math.abs(c) * ((high - low) / 2.0);
  const extent = Math.abs(low / 2 + high / 2) + spread;
  const limit = Math.sqrt(Number.MAX_VALUE / REPORT_HEADROOM);
  if (!(spread <= limit && extent <= Number.MAX_VALUE / REPORT_HEADROOM)) {
    fail(
      `${mechanism}: the range [${floatText(low)}, ${floatText(high)}] is too wide at epsilon=${formatG(epsilon)}: one ` +
        `report's unbiased estimate reaches ${formatG(extent, 3)} in value units, and its deviation ${formatG(spread, 3)} ` +
        `must stay below ${formatG(limit, 3)} so that sums and variances over up to 2^63 reports stay finite`,
    );
  }
}

/** p below 1, and above `floor` (the probability that gives no signal). */
export function keep(fields: JsonObject, floor: Fraction, floorText: string): Fraction {
  const p = prob(fields, "p");
  const mechanism = String(fields.mechanism);
  if (compare(p, ONE) >= 0) fail(`p must be in [0, 1), got ${text(p)}`);
  if (compare(p, floor) <= 0) fail(`${mechanism}: p must exceed ${floorText}, got ${text(p)}`);
  return p;
}

/** Randomized response over n outputs with keep probability p: p/q, q = (1 − p)/(n − 1). */
export function rrRatio(p: Fraction, n: bigint): Fraction {
  return div(p, divInt(sub(ONE, p), n - 1n));
}

/** The odds p/(1 − p) of a kept bit (a binary randomized response's ratio). */
export function odds(p: Fraction): Fraction {
  return div(p, sub(ONE, p));
}
