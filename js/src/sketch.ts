/**
 * Apple's Count-Mean Sketch (CMS) and Hadamard Count-Mean Sketch (HCMS)
 * clients: byte for byte the Python client's reports (docs/mechanisms.md#cms).
 *
 * Row j hashes a value with MurmurHash3 x64-128, seed `salt + j`, and takes
 * h1 (the low 64 bits) mod m. CMS: j = uniform(k), then lanes as runs
 * over m lanes (bit h_j(x) with p, every other bit with q = 1 − p). HCMS:
 * j = uniform(k), l = uniform(m), keep = coin(p), all on the CSPRNG's bits
 * (`reportbits.ts`), and the bit is 1 when keep equals "H_m[l, h_j(x)] = +1" (popcount(l & h_j(x))
 * even). Any value can be encoded: the sketch needs no domain.
 */
import { type Fraction, ONE, sub } from "./fraction.js";
import type { Encoder } from "./encoder.js";
import { mmh3x64128Words } from "./mmh3.js";
import { wordsToPacked } from "./packing.js";
import { type ByteSource, cryptoSource } from "./random.js";
import { type BitReader, bitReader, coin, runLaneWords, uniform } from "./reportbits.js";
import type { Report } from "./report.js";
import { type Spec, checkedSpec, specFraction, specInt } from "./spec.js";
import { type Value, valueBytes } from "./values.js";

/** h_row(value) in [0, m): (h1 of MurmurHash3 x64-128 with seed salt + row) mod m. */
export function sketchPosition(value: Value, row: number, salt: number, m: number): number {
  const [hi, lo] = mmh3x64128Words(valueBytes(value), salt + row);
  if (m <= 2 ** 26) return ((((hi % m) * (4294967296 % m)) % m) + (lo % m)) % m; // every product below 2^52
  return Number(((BigInt(hi) << 32n) | BigInt(lo)) % BigInt(m));
}

/** The parameters both sketches share. */
class Sketch {
  readonly k: number;
  readonly m: number;
  readonly salt: number;
  readonly p: Fraction;

  constructor(spec: Spec) {
    this.k = Number(specInt(spec, "k"));
    this.m = Number(specInt(spec, "m"));
    this.salt = Number(specInt(spec, "salt"));
    this.p = specFraction(spec, "p");
  }

  position(value: Value, row: number): number {
    if (value === null || value === undefined) throw new RangeError("a sketch value must not be null");
    return sketchPosition(value, row, this.salt, this.m);
  }
}

/**
 * CMS: row j, then the m bits of the one-hot vector of h_j(x), each randomized.
 *
 * @mechanisms cms
 */
export class CMSEncoder implements Encoder {
  private readonly sketch: Sketch;
  private readonly q: Fraction;
  private readonly bits: BitReader;

  constructor(readonly spec: Spec, source: ByteSource = cryptoSource) {
    checkedSpec(spec);
    this.sketch = new Sketch(spec);
    this.q = sub(ONE, this.sketch.p);
    this.bits = bitReader(source);
  }

  encode(value: Value): Report {
    const { m, p } = this.sketch;
    const row = uniform(this.sketch.k, this.bits);
    const i = this.sketch.position(value, row);
    const words = (m + 31) >>> 5;
    const oneHot = new Uint32Array(words);
    oneHot[i >>> 5] = 2 ** (i & 31);
    const others = new Uint32Array(words).fill(0xffffffff);
    if (m % 32) others[words - 1] = 2 ** (m % 32) - 1;
    others[i >>> 5] ^= oneHot[i >>> 5];
    const groups = [
      { mask: oneHot, probability: p },
      { mask: others, probability: this.q },
    ];
    const lanes = runLaneWords(m, groups, this.bits);
    return { spec: this.spec.fingerprint, extra: [["row", row]], bits: wordsToPacked(lanes, m) };
  }
}

/**
 * HCMS: row j, column l, and one bit of b·H_m[l, h_j(x)] (b = +1 with p).
 *
 * @mechanisms hcms
 */
export class HCMSEncoder implements Encoder {
  private readonly sketch: Sketch;
  private readonly bits: BitReader;

  constructor(readonly spec: Spec, source: ByteSource = cryptoSource) {
    checkedSpec(spec);
    this.sketch = new Sketch(spec);
    this.bits = bitReader(source);
  }

  encode(value: Value): Report {
    const row = uniform(this.sketch.k, this.bits);
    const column = uniform(this.sketch.m, this.bits);
    let both = column & this.sketch.position(value, row);
    let parity = 0;
    while (both) {
      parity ^= both & 1;
      both >>>= 1;
    }
    const keep = coin(this.sketch.p, this.bits);
    const bit = (parity === 0) === keep ? 1 : 0;
    return { spec: this.spec.fingerprint, extra: [["row", row], ["column", column], ["bit", bit]] };
  }
}
