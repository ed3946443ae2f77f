/**
 * What every encoder shares: the `Encoder` interface, the options `makeEncoder`
 * passes on, and randomized response over [0, n) (GRR, the hashing oracles).
 * Each mechanism's encoder lives in its own module and imports only this one
 * (and the utilities); `registry.ts` (generated) maps mechanism names to them.
 */
import { type Fraction, compare, divInt, fraction, lcm, ONE, sub } from "./fraction.js";
import { type ByteSource, type Shake256, UniformBelow, cryptoSource, randbelow } from "./random.js";
import type { NumericTable } from "./numeric.js";
import type { Report } from "./report.js";
import type { Spec } from "./spec.js";
import type { Value } from "./values.js";

/** What every encoder offers. */
export interface Encoder {
  readonly spec: Spec;
  /** Randomize `value` into a report. */
  encode(value: Value): Report;
  /**
   * A memoized mechanism's encoder: the identity of `value` for memoization
   * (the key of its permanent response, and of its ledger stream: the
   * budgeted encoder charges each report to it).
   */
  memoKey?(value: Value): Uint8Array;
}

/**
 * A client's persistent state for a memoized mechanism (RAPPOR, ...): keep
 * it, so each value's permanent response stays the same (Python's
 * `ClientState`). The name is RAPPOR's, the first such mechanism.
 */
export interface RapporClient {
  /** 32 secret bytes: the PRF key of the permanent response. */
  secret: Uint8Array;
  cohort: number;
}

/** How many cohorts a spec's clients are spread over: its `num_cohorts`, else 1 (Python's `getattr(spec, "num_cohorts", 1)`). */
export function cohortsOf(spec: Spec): bigint {
  const n = spec.fields.num_cohorts;
  return typeof n === "bigint" ? n : 1n;
}

/** A fresh client state: a CSPRNG secret, then a uniform cohort (Python's `ClientState.new`). */
export function newClient(spec: Spec, source: ByteSource = cryptoSource): RapporClient {
  const secret = source.read(32);
  const cohort = Number(randbelow(cohortsOf(spec), source));
  return { secret, cohort };
}

/**
 * What `makeEncoder` passes on: the byte source (tests only), RAPPOR's client and SHAKE-256, and the
 * server's sampling tables of a multi-attribute spec's numeric grid attributes (piecewise, hybrid,
 * Laplace, Gaussian), by attribute name: each as `GET /v1/tasks/{task}/tables` serves it under
 * `attributes`, checked against its digest and its attribute's ε as `NumericEncoder` checks one.
 */
export interface EncoderOptions {
  source?: ByteSource;
  client?: RapporClient;
  shake?: Shake256;
  tables?: Readonly<Record<string, NumericTable>>;
}

/** Randomized response over [0, n): keep the index with keep/den, else each other one with other/den. */
export class RandomizedResponse {
  private readonly uniform: UniformBelow;
  private readonly den: bigint;
  private readonly keep: bigint;
  private readonly other: bigint;

  constructor(p: Fraction, n: bigint) {
    if (n < 2n || compare(p, fraction(1n, n)) <= 0 || compare(p, ONE) >= 0) {
      throw new RangeError(`randomized response needs 1/${n} < p < 1, got ${p.num}/${p.den}`);
    }
    const q = divInt(sub(ONE, p), n - 1n); // each other value
    this.den = lcm(p.den, q.den);
    this.keep = p.num * (this.den / p.den);
    this.other = q.num * (this.den / q.den);
    this.uniform = new UniformBelow(this.den);
  }

  /** One randbelow(den): below keep keeps `index`; the rest splits into slices of `other`, one per other value. */
  respond(index: number, source: ByteSource): number {
    const r = this.uniform.draw(source);
    if (r < this.keep) return index;
    const o = Number((r - this.keep) / this.other);
    return o >= index ? o + 1 : o;
  }
}

/** Every lane of `width` set, as 32-bit words. */
export function fullWords(width: number): Uint32Array {
  const out = new Uint32Array((width + 31) >>> 5).fill(0xffffffff);
  if (width % 32) out[out.length - 1] = 2 ** (width % 32) - 1;
  return out;
}
