/**
 * 1BitMean (mechanism "onebitmean", Ding, Kulkarni, Yekhanin, NeurIPS 2017):
 * plain, a fresh bit per report; or, with `rounding = "alpha"`, the memoized
 * bit of the client's α-rounded grid point, flipped with probability γ. The
 * same coins, bytes and PRF reads as the Python client (`ldp/client/onebitmean.py`;
 * docs/longitudinal/onebitmean.md).
 */
import { utf8 } from "./bytes.js";
import type { Encoder, EncoderOptions, RapporClient } from "./encoder.js";
import { type Fraction, ONE, add, fraction, mul, sub } from "./fraction.js";
import { type ByteSource, type Shake256, cryptoSource, defaultShake256, prfInput, sampleLaneWords } from "./random.js";
import { type BitReader, bitReader, coin, randomRound } from "./reportbits.js";
import type { Report } from "./report.js";
import { type Spec, checkedSpec, specFloat, specFraction, specInt } from "./spec.js";
import { clip } from "./text.js";
import type { Value } from "./values.js";

const ALPHA_LABEL = utf8("ldp-1bitmean-alpha-v1");
const MEMO_LABEL = utf8("ldp-1bitmean-memo-v1");
/** α = jΔ/2^32, j uniform on [0, 2^32) (Python's `ALPHA_BITS`). */
const ALPHA_SPAN = 2 ** 32;

/**
 * The grid point (0..grid) a client with α index `alpha` reports for the position u ∈ [0, 1]:
 * cell L = ⌊u·grid⌋ (grid − 1 at u = 1), rounded up iff ⌊frac·2^32⌋ + α ≥ 2^32 (Python's `alpha_point`).
 */
export function alphaPoint(u: number, grid: number, alpha: number): number {
  const pos = u * grid;
  const cell = Math.min(Math.floor(pos), grid - 1);
  const fine = Math.floor((pos - cell) * ALPHA_SPAN);
  return cell + (fine + alpha >= ALPHA_SPAN ? 1 : 0);
}

/** A user's number: a finite number or an integer (as Python's `check_numeric_value`: no text, no booleans). */
function toDouble(value: Value): number {
  let x: number;
  if (typeof value === "number") x = value;
  else if (typeof value === "bigint") x = Number(value);
  else throw new TypeError(`numeric value must be a number, got ${clip(String(value), 80, true)}`);
  if (!Number.isFinite(x)) throw new RangeError(`numeric value must be finite, got ${clip(String(value), 80, true)}`);
  return x;
}

/** A fresh client of a memoized spec: a CSPRNG secret, cohort 0 (the spec has no cohorts). */
export function newOneBitMeanClient(source: ByteSource = cryptoSource): RapporClient {
  return { secret: source.read(32), cohort: 0 };
}

/**
 * 1BitMean: a fresh bit (plain), or the memoized bit of the α-rounded grid point, flipped with probability γ.
 *
 * @mechanisms onebitmean
 */
export class OneBitMeanEncoder implements Encoder {
  private readonly low: number;
  private readonly span: number;
  private readonly p: Fraction;
  private readonly gamma: Fraction;
  private readonly memoized: boolean;
  private readonly grid: number = 0;
  private readonly alpha: number = 0;
  private readonly bits = new Map<number, number>();
  /** The CSPRNG's bits: the fresh coins (plain: rounding and keep; alpha: the flip). */
  private readonly reader: BitReader;

  /** The encoder `makeEncoder` gives: memoized specs use the options' client (a fresh one when missing). */
  static create(spec: Spec, source: ByteSource, options: EncoderOptions): OneBitMeanEncoder {
    const memoized = spec.fields.rounding === "alpha";
    const client = memoized ? (options.client ?? newOneBitMeanClient(source)) : undefined;
    return new OneBitMeanEncoder(spec, client, source, options.shake);
  }

  constructor(
    readonly spec: Spec,
    readonly client: RapporClient | undefined = undefined,
    source: ByteSource = cryptoSource,
    private readonly shake: Shake256 = defaultShake256,
  ) {
    checkedSpec(spec);
    this.reader = bitReader(source);
    this.low = specFloat(spec, "low");
    this.span = specFloat(spec, "high") - this.low;
    this.p = specFraction(spec, "p");
    this.gamma = specFraction(spec, "gamma");
    this.memoized = spec.fields.rounding === "alpha";
    if (!this.memoized) return;
    if (client === undefined) throw new RangeError("onebitmean with rounding 'alpha' needs its client's state (secret)");
    if (client.secret.length !== 32) throw new RangeError("a client secret is 32 bytes");
    this.grid = Number(specInt(spec, "grid"));
    const bytes = this.shake(prfInput(ALPHA_LABEL, client.secret, utf8(spec.fingerprint))).read(4);
    this.alpha = new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0); // big-endian
  }

  private unit(value: Value): number {
    const u = (toDouble(value) - this.low) / this.span;
    return u < 0 ? 0 : u > 1 ? 1 : u;
  }

  /** The α-rounded grid point (0..grid) of `value` for this client. */
  gridPoint(value: Value): number {
    if (!this.memoized) throw new RangeError("onebitmean without rounding 'alpha' has no grid points");
    return alphaPoint(this.unit(value), this.grid, this.alpha);
  }

  /** The memo key of `value`: its grid point in ASCII decimal (the key of its memoized bit and of its ledger stream). */
  memoKey(value: Value): Uint8Array {
    return utf8(String(this.gridPoint(value)));
  }

  /** P[memoized bit = 1] of grid point g: (1 − p) + (g/s)(2p − 1). */
  memoProbability(point: number): Fraction {
    const twoPMinusOne = sub(add(this.p, this.p), ONE);
    return add(sub(ONE, this.p), mul(fraction(BigInt(point), BigInt(this.grid)), twoPMinusOne));
  }

  /** The memoized bit of grid point `point`: a keyed PRF of (secret, spec, point), never re-drawn. */
  memoBit(point: number): number {
    let bit = this.bits.get(point);
    if (bit === undefined) {
      const stream = this.shake(prfInput(MEMO_LABEL, this.client!.secret, utf8(this.spec.fingerprint), utf8(String(point))));
      bit = sampleLaneWords(1, [{ mask: Uint32Array.of(1), probability: this.memoProbability(point) }], stream)[0] & 1;
      this.bits.set(point, bit);
    }
    return bit;
  }

  /** The reported bit for `value`. */
  sampleBit(value: Value): number {
    const u = this.unit(value);
    if (!this.memoized) {
      const side = randomRound(u, this.reader); // up with ⌊frac·2^53⌋/2^53, as the two-point numeric encoders
      return coin(this.p, this.reader) ? side : 1 - side;
    }
    let bit = this.memoBit(alphaPoint(u, this.grid, this.alpha));
    if (this.gamma.num !== 0n && coin(this.gamma, this.reader)) bit ^= 1;
    return bit;
  }

  encode(value: Value): Report {
    return { spec: this.spec.fingerprint, value: this.sampleBit(value) === 1 ? 1.0 : 0.0 };
  }
}
