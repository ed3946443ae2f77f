/**
 * Range mechanisms (`ldp/specs/ranges.py`, docs/range-queries.md): one
 * uniformly sampled level per report, exactly as the Python client draws it
 * (tests/vectors/README.md, `encodings`).
 */
import { type Encoder, fullWords } from "./encoder.js";
import { type Fraction, compare, ONE } from "./fraction.js";
import { wordsToPacked } from "./packing.js";
import { type ByteSource, cryptoSource } from "./random.js";
import { type BitReader, bitReader, coin, runLaneWords, uniform } from "./reportbits.js";
import type { Report } from "./report.js";
import { type Spec, checkedSpec, specDomain, specFraction, specInt } from "./spec.js";
import { DomainIndex, type Value } from "./values.js";

function parity(x: number): number {
  let out = 0;
  while (x) {
    out ^= 1;
    x &= x - 1;
  }
  return out;
}

/**
 * range-hierarchy: level l uniform on 1..h, then OUE of the value's level-l
 * node over B^l bits, in a vector of B^h bits (the rest 0); `level` = l − 1.
 *
 * @mechanisms range-hierarchy
 */
export class RangeHierarchyEncoder implements Encoder {
  private readonly index: DomainIndex;
  private readonly p: Fraction;
  private readonly q: Fraction;
  private readonly branching: number;
  private readonly levels: number;
  private readonly leaves: number;
  private readonly bits: BitReader;

  constructor(readonly spec: Spec, source: ByteSource = cryptoSource) {
    checkedSpec(spec);
    this.bits = bitReader(source);
    this.index = new DomainIndex(specDomain(spec));
    this.p = specFraction(spec, "p");
    this.q = specFraction(spec, "q");
    if (compare(this.p, this.q) <= 0 || this.q.num === 0n || compare(this.p, ONE) >= 0) {
      throw new RangeError("range-hierarchy needs 0 < q < p < 1");
    }
    this.branching = Number(specInt(spec, "branching"));
    let depth = 1;
    let width = this.branching;
    while (width < this.index.size) {
      width *= this.branching;
      depth += 1;
    }
    this.levels = depth;
    this.leaves = width;
  }

  encode(value: Value): Report {
    const x = this.index.indexOf(value);
    const level = 1 + uniform(this.levels, this.bits);
    const width = this.branching ** level;
    const node = Math.floor(x / this.branching ** (this.levels - level));
    const oneHot = new Uint32Array((width + 31) >>> 5);
    oneHot[node >>> 5] = 2 ** (node & 31);
    const others = fullWords(width);
    others[node >>> 5] ^= oneHot[node >>> 5];
    const groups = [
      { mask: oneHot, probability: this.p },
      { mask: others, probability: this.q },
    ];
    const lanes = runLaneWords(width, groups, this.bits);
    const padded = new Uint32Array((this.leaves + 31) >>> 5);
    padded.set(lanes.subarray(0, padded.length));
    return { spec: this.spec.fingerprint, extra: [["level", level - 1]], bits: wordsToPacked(padded, this.leaves) };
  }
}

/**
 * range-haar: level l uniform on 0..h−1, index j uniform on [0, 2^l), and the
 * sign H[j, a]·s of the value's level-l Haar coefficient kept with p.
 *
 * @mechanisms range-haar
 */
export class RangeHaarEncoder implements Encoder {
  private readonly index: DomainIndex;
  private readonly levels: number;
  private readonly leaves: number;
  private readonly p: Fraction;
  private readonly bits: BitReader;

  constructor(readonly spec: Spec, source: ByteSource = cryptoSource) {
    checkedSpec(spec);
    this.bits = bitReader(source);
    this.index = new DomainIndex(specDomain(spec));
    const p = specFraction(spec, "p");
    if (compare(p, { num: 1n, den: 2n }) <= 0 || compare(p, ONE) >= 0) {
      throw new RangeError("range-haar needs 1/2 < p < 1");
    }
    const d = this.index.size;
    this.levels = Math.max((d - 1).toString(2).length, 1);
    this.leaves = 2 ** this.levels;
    this.p = p;
  }

  encode(value: Value): Report {
    const x = this.index.indexOf(value);
    const level = uniform(this.levels, this.bits);
    const j = uniform(2 ** level, this.bits);
    const span = this.leaves / 2 ** level;
    const node = Math.floor(x / span);
    const sign = (x % span < span / 2 ? 1 : -1) * (parity(j & node) ? -1 : 1);
    const kept = coin(this.p, this.bits);
    const bit = (sign > 0) === kept ? 1 : 0;
    return {
      spec: this.spec.fingerprint,
      extra: [
        ["level", level],
        ["index", j],
        ["bit", bit],
      ],
    };
  }
}
