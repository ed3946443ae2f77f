/**
 * Key-value encoders: PCKV-GRR (Gu et al., USENIX Security 2020) and PrivKVM's single round (Ye et al.,
 * IEEE S&P 2019). The same coins, in the same order, as the Python client (`ldp/client/key_value.py`;
 * docs/key-value.md). PCKV-UE's bit-vector reports are not encoded here yet.
 *
 * A user's input is its set of (key, value) pairs: an object `{key: value}`, an array of `[key, value]`
 * pairs, or the JSON text of either; keys in the spec's domain, each once, values numbers in [−1, 1].
 */
import type { Encoder } from "./encoder.js";
import type { Fraction } from "./fraction.js";
import { type ByteSource, UniformBelow, cryptoSource, randbelow } from "./random.js";
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

function coin(p: Fraction, source: ByteSource): boolean {
  return randbelow(p.den, source) < p.num;
}

function sign(v: number, source: ByteSource): number {
  if (v >= 1) {
    randbelow(TWO64, source);
    return 1;
  }
  return randbelow(TWO64, source) < discretizeThreshold(v) ? 1 : -1;
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

  constructor(readonly spec: Spec, private readonly source: ByteSource = cryptoSource) {
    checkedSpec(spec);
    this.index = new DomainIndex(specDomain(spec));
    this.a = specFraction(spec, "a");
    this.p = specFraction(spec, "p");
    this.ell = Number(specInt(spec, "ell"));
    this.padded = this.index.size + this.ell;
  }

  encode(value: Value): Report {
    const pairs = parsePairs(this.index, value);
    const eta = Math.max(pairs.length, this.ell);
    const i = Number(randbelow(BigInt(eta), this.source));
    let key: number;
    let v = 0;
    if (i < pairs.length) [key, v] = pairs[i];
    else key = this.index.size + i - pairs.length;
    let s = sign(v, this.source);
    if (coin(this.a, this.source)) {
      if (!coin(this.p, this.source)) s = -s;
    } else {
      const other = Number(randbelow(BigInt(this.padded - 1), this.source));
      key = other + (other >= key ? 1 : 0);
      s = randbelow(2n, this.source) === 1n ? 1 : -1;
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
  private readonly draw: UniformBelow;

  constructor(readonly spec: Spec, private readonly source: ByteSource = cryptoSource) {
    checkedSpec(spec);
    this.index = new DomainIndex(specDomain(spec));
    this.p1 = specFraction(spec, "p1");
    this.p2 = specFraction(spec, "p2");
    this.draw = new UniformBelow(BigInt(this.index.size));
  }

  encode(value: Value): Report {
    const held = new Map(parsePairs(this.index, value));
    const j = Number(this.draw.draw(this.source));
    const v = held.get(j);
    let s = sign(v ?? 0, this.source);
    const present = v !== undefined ? coin(this.p1, this.source) : !coin(this.p1, this.source);
    if (!coin(this.p2, this.source)) s = -s;
    return { spec: this.spec.fingerprint, extra: [["key", j], ["response", present ? 1 + s : 1]] };
  }
}
