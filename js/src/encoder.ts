/**
 * What every encoder shares: the `Encoder` interface, the options `makeEncoder`
 * passes on, and randomized response over [0, n) (GRR, the hashing oracles).
 * Each mechanism's encoder lives in its own module and imports only this one
 * (and the utilities); `registry.ts` (generated) maps mechanism names to them.
 */
import { type Fraction, compare, divInt, fraction, lcm, ONE, sub } from "./fraction.js";
import { type ByteSource, type Shake256, cryptoSource, randbelow } from "./random.js";
import { type BitReader, KnuthYao, bitReader, uniformBig } from "./reportbits.js";
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

/**
 * A fresh client state: a CSPRNG secret, then a uniform cohort (Python's `ClientState.new`), the cohort an
 * exact uniform on the CSPRNG's bits (`reportbits.ts`).
 */
export function newClient(spec: Spec, source: ByteSource = cryptoSource): RapporClient {
  const secret = source.read(32);
  const cohort = Number(uniformBig(cohortsOf(spec), bitReader(source)));
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

/** q = (1 − p)/(n − 1), each other value's probability in randomized response over [0, n) (1/n < p < 1). */
function otherProbability(p: Fraction, n: bigint): Fraction {
  if (n < 2n || compare(p, fraction(1n, n)) <= 0 || compare(p, ONE) >= 0) {
    throw new RangeError(`randomized response needs 1/${n} < p < 1, got ${p.num}/${p.den}`);
  }
  return divInt(sub(ONE, p), n - 1n);
}

/**
 * Randomized response over [0, n) with fresh coins: keep the index with p, else each other one with
 * q = (1 − p)/(n − 1), by one Knuth–Yao walk over [(1, p), (n − 1, q)] on the CSPRNG's bits.
 */
export class RandomizedResponse {
  private readonly walk: KnuthYao;

  constructor(p: Fraction, n: bigint) {
    this.walk = new KnuthYao([
      { count: 1n, probability: p },
      { count: n - 1n, probability: otherProbability(p, n) },
    ]);
  }

  /** A fresh response: group 0 keeps `index`, member o of group 1 is other value o (skipping `index`). */
  draw(index: number, bits: BitReader): number {
    if (this.walk.sample(bits) === 0) return index;
    const o = this.walk.member as number; // n < 2^51 outcomes: a Number
    return o >= index ? o + 1 : o;
  }
}

/**
 * Randomized response over [0, n) from a keyed PRF stream (memoized answers): the byte sampler, one
 * randbelow(den) with den = lcm of p's and q's denominators; below keep = p·den keeps the index, the rest
 * splits into slices of other = q·den, one per other value. A stored client's memoized answers do not change.
 */
export class StreamResponse {
  private readonly den: bigint;
  private readonly keep: bigint;
  private readonly other: bigint;

  constructor(p: Fraction, n: bigint) {
    const q = otherProbability(p, n);
    this.den = lcm(p.den, q.den);
    this.keep = p.num * (this.den / p.den);
    this.other = q.num * (this.den / q.den);
  }

  respond(index: number, stream: ByteSource): number {
    const r = randbelow(this.den, stream);
    if (r < this.keep) return index;
    const o = Number((r - this.keep) / this.other);
    return o >= index ? o + 1 : o;
  }
}

export { fullWords } from "./random.js";
