/** Unary encoding (mechanisms "sue", "oue"): a one-hot vector, each bit flipped independently. */
import { type Encoder, fullWords } from "./encoder.js";
import type { Fraction } from "./fraction.js";
import { wordsToPacked } from "./packing.js";
import { type ByteSource, cryptoSource } from "./random.js";
import { type BitReader, bitReader, runLaneWords } from "./reportbits.js";
import type { Report } from "./report.js";
import type { Catalog } from "./catalog.js";
import { oue, sue } from "./catalog/unary.js";
import { type Spec, checkedSpecIn, specDomain, specFraction } from "./specload.js";
import { DomainIndex, type Value } from "./values.js";

/** The mechanisms this module encodes: their spec entries (a spec built by hand is loaded again with them). */
const MECHANISMS: Catalog = { sue, oue };

/**
 * SUE and OUE: the one-hot vector, the true bit 1 with p, every other with q.
 *
 * @mechanisms sue oue
 */
export class UnaryEncoder implements Encoder {
  private readonly index: DomainIndex;
  private readonly p: Fraction;
  private readonly q: Fraction;
  private readonly full: Uint32Array;
  private readonly bits: BitReader;

  constructor(readonly spec: Spec, source: ByteSource = cryptoSource) {
    checkedSpecIn(MECHANISMS, spec);
    this.index = new DomainIndex(specDomain(spec));
    this.p = specFraction(spec, "p");
    this.q = specFraction(spec, "q"); // 0 < q < p < 1: checked with the spec (privacy/unary.ts)
    this.full = fullWords(this.index.size);
    this.bits = bitReader(source);
  }

  encode(value: Value): Report {
    return { spec: this.spec.fingerprint, bits: this.perturb(this.index.indexOf(value)) };
  }

  /**
   * The packed bits of the one-hot vector of domain index `i` perturbed; `null`: the zero vector
   * (RS+FD's `-z` fake data, `ldp/specs/multiattr.py`).
   */
  perturb(i: number | null): Uint8Array {
    const width = this.index.size;
    const oneHot = new Uint32Array(this.full.length);
    if (i !== null) oneHot[i >>> 5] = 2 ** (i & 31);
    const others = this.full.slice();
    if (i !== null) others[i >>> 5] ^= oneHot[i >>> 5];
    const groups = [
      { mask: oneHot, probability: this.p },
      { mask: others, probability: this.q },
    ];
    const lanes = runLaneWords(width, groups, this.bits);
    return wordsToPacked(lanes, width);
  }
}

