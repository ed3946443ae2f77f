/**
 * Key-value encoders: PCKV-UE and PCKV-GRR (Gu et al., USENIX Security 2020) and PrivKVM's single round
 * (Ye et al., IEEE S&P 2019). The same coins, in the same order, as the Python client
 * (`ldp/client/key_value.py`; docs/key-value.md).
 *
 * A user's input is its set of (key, value) pairs: an object `{key: value}`, an array of `[key, value]`
 * pairs, or the JSON text of either; keys in the spec's domain, each once, values numbers in [−1, 1].
 */
import type { Encoder } from "./encoder.js";
import type { Fraction } from "./fraction.js";
import { lanesToPacked } from "./packing.js";
import { type ByteSource, cryptoSource } from "./random.js";
import { type BitReader, bitReader, coin, coinOnce, runLanes, uniform } from "./reportbits.js";
import type { Report } from "./report.js";
import { type Spec, checkedSpec, specDomain, specFraction, specInt } from "./spec.js";
import { clip } from "./text.js";
import { DomainIndex, type Value } from "./values.js";

const TWO63 = 1n << 63n;
const TWO64 = 1n << 64n;

/** ⌊(1 + v)·2^63⌋ for a double v in [−1, 1]: 2^63 + ⌊v·2^63⌋ (a power-of-two scaling, exact). */
function discretizeThreshold(v: number): bigint {
  return TWO63 + BigInt(Math.floor(v * 2 ** 63));
}

function number(raw: unknown, key: unknown): number {
  let x: number;
  if (typeof raw === "number") x = raw;
  else if (typeof raw === "bigint") x = Number(raw);
  else if (typeof raw === "string" && raw.trim() !== "" && Number.isFinite(Number(raw))) x = Number(raw);
  else throw new TypeError(`the value of key ${clip(String(key), 80, true)} must be a number, got ${clip(String(raw), 80, true)}`);
  if (!(Number.isFinite(x) && x >= -1 && x <= 1)) {
    throw new RangeError(`the value of key ${clip(String(key), 80, true)} must be in [-1, 1], got ${clip(String(raw), 80, true)}`);
  }
  return x;
}

/** A user's pairs as (key index, value), checked as Python's `parse_pairs`. */
function parsePairs(index: DomainIndex, input: unknown): Array<[number, number]> {
  let value = input;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      throw new TypeError('a key-value input must be a JSON object such as {"a": 0.5} or a list of [key, value] pairs');
    }
  }
  let items: Array<[unknown, unknown]>;
  if (Array.isArray(value)) {
    items = value.map((item) => {
      if (!Array.isArray(item) || item.length !== 2) throw new TypeError(`a key-value pair must be [key, value], got ${clip(String(item), 80, true)}`);
      return [item[0], item[1]];
    });
  } else if (value !== null && typeof value === "object") {
    items = Object.entries(value as Record<string, unknown>);
  } else {
    throw new TypeError("a key-value input must be a JSON object or a list of [key, value] pairs");
  }
  const seen = new Set<number>();
  return items.map(([key, raw]) => {
    const k = index.indexOf(key as Value);
    if (seen.has(k)) throw new RangeError(`key ${clip(String(key), 80, true)} appears twice in one user's pairs`);
    seen.add(k);
    return [k, number(raw, key)];
  });
}

/** The discretization v* of v: +1 with ⌊(1 + v)·2^63⌋/2^64 (an exact coin: nothing read at v = ±1), else −1. */
function sign(v: number, bits: BitReader): number {
  return coinOnce({ num: discretizeThreshold(v), den: TWO64 }, bits) ? 1 : -1;
}

/** Padding-and-sampling of one user: (padded key index, v* = ±1); draws uniform(η), then the discretization. */
function samplePair(pairs: Array<[number, number]>, ell: number, domainSize: number, bits: BitReader): [number, number] {
  const eta = Math.max(pairs.length, ell);
  const i = uniform(eta, bits);
  let key: number;
  let v = 0;
  if (i < pairs.length) [key, v] = pairs[i];
  else key = domainSize + i - pairs.length;
  return [key, sign(v, bits)];
}

/**
 * PCKV-UE: padding-and-sampling to ℓ pairs, then two bit vectors over the d + ℓ keys (`plus`: y = +1,
 * `minus`: y = −1). Draws, in Python's order, on the CSPRNG's bits: the sampled pair, the discretization, the
 * key coin (a), the sign coin (p, only when the key is kept), then the other keys' nonzero coins (b) as lanes,
 * then for each nonzero key in increasing order its sign (uniform(2): 1 is +1).
 *
 * @mechanisms pckv-ue
 */
export class PCKVUEEncoder implements Encoder {
  private readonly index: DomainIndex;
  private readonly a: Fraction;
  private readonly b: Fraction;
  private readonly p: Fraction;
  private readonly ell: number;
  private readonly padded: number;
  private readonly bits: BitReader;

  constructor(readonly spec: Spec, source: ByteSource = cryptoSource) {
    checkedSpec(spec);
    this.bits = bitReader(source);
    this.index = new DomainIndex(specDomain(spec));
    this.a = specFraction(spec, "a");
    this.b = specFraction(spec, "b");
    this.p = specFraction(spec, "p");
    this.ell = Number(specInt(spec, "ell"));
    this.padded = this.index.size + this.ell;
  }

  encode(value: Value): Report {
    const [key, sampled] = samplePair(parsePairs(this.index, value), this.ell, this.index.size, this.bits);
    let plus = 0n;
    let minus = 0n;
    if (coin(this.a, this.bits)) {
      if ((coin(this.p, this.bits) ? sampled : -sampled) > 0) plus |= 1n << BigInt(key);
      else minus |= 1n << BigInt(key);
    }
    const others = ((1n << BigInt(this.padded)) - 1n) ^ (1n << BigInt(key));
    let nonzero = runLanes(this.padded, [{ mask: others, probability: this.b }], this.bits);
    while (nonzero) {
      const lane = nonzero & -nonzero;
      if (uniform(2, this.bits) === 1) plus |= lane;
      else minus |= lane;
      nonzero ^= lane;
    }
    return {
      spec: this.spec.fingerprint,
      extra: [
        ["plus", lanesToPacked(plus, this.padded)],
        ["minus", lanesToPacked(minus, this.padded)],
      ],
    };
  }
}

/**
 * PCKV-GRR: padding-and-sampling to ℓ pairs, then one (key, sign) by correlated randomized response.
 *
 * @mechanisms pckv-grr
 */
export class PCKVGRREncoder implements Encoder {
  private readonly index: DomainIndex;
  private readonly a: Fraction;
  private readonly p: Fraction;
  private readonly ell: number;
  private readonly padded: number;
  private readonly bits: BitReader;

  constructor(readonly spec: Spec, source: ByteSource = cryptoSource) {
    checkedSpec(spec);
    this.bits = bitReader(source);
    this.index = new DomainIndex(specDomain(spec));
    this.a = specFraction(spec, "a");
    this.p = specFraction(spec, "p");
    this.ell = Number(specInt(spec, "ell"));
    this.padded = this.index.size + this.ell;
  }

  encode(value: Value): Report {
    let [key, s] = samplePair(parsePairs(this.index, value), this.ell, this.index.size, this.bits);
    if (coin(this.a, this.bits)) {
      if (!coin(this.p, this.bits)) s = -s;
    } else {
      const other = uniform(this.padded - 1, this.bits);
      key = other + (other >= key ? 1 : 0);
      s = uniform(2, this.bits) === 1 ? 1 : -1;
    }
    return { spec: this.spec.fingerprint, extra: [["key", key], ["sign", s > 0 ? 1 : 0]] };
  }
}

/**
 * PrivKVM's single round: one uniformly drawn key, its presence and value by randomized response.
 *
 * @mechanisms privkvm
 */
export class PrivKVMEncoder implements Encoder {
  private readonly index: DomainIndex;
  private readonly p1: Fraction;
  private readonly p2: Fraction;
  private readonly bits: BitReader;

  constructor(readonly spec: Spec, source: ByteSource = cryptoSource) {
    checkedSpec(spec);
    this.index = new DomainIndex(specDomain(spec));
    this.p1 = specFraction(spec, "p1");
    this.p2 = specFraction(spec, "p2");
    this.bits = bitReader(source);
  }

  encode(value: Value): Report {
    const held = new Map(parsePairs(this.index, value));
    const j = uniform(this.index.size, this.bits);
    const v = held.get(j);
    let s = sign(v ?? 0, this.bits);
    const present = v !== undefined ? coin(this.p1, this.bits) : !coin(this.p1, this.bits);
    if (!coin(this.p2, this.bits)) s = -s;
    return { spec: this.spec.fingerprint, extra: [["key", j], ["response", present ? 1 + s : 1]] };
  }
}
