/**
 * Subset selection (SS): a random ω-subset of the domain, sent as a d-bit
 * vector. One exact coin of probability p decides whether the subset holds
 * the true value x, then one uniform subset of the other members from the
 * d − 1 values other than x (a uniform rank below C(d − 1, k), unranked),
 * both on the CSPRNG's bits in the Python client's order (ldp/client/subset.py).
 */
import type { Fraction } from "./fraction.js";
import { positionsToPacked } from "./packing.js";
import { type ByteSource, cryptoSource } from "./random.js";
import { type BitReader, bitReader, coin, uniformSubset } from "./reportbits.js";
import type { Report } from "./report.js";
import type { Catalog } from "./catalog.js";
import { ss } from "./catalog/subset.js";
import { type Spec, checkedSpecIn, specDomain, specFraction, specInt } from "./specload.js";
import { DomainIndex, type Value } from "./values.js";
import type { Encoder } from "./encoder.js";

/** The mechanisms this module encodes: their spec entries (a spec built by hand is loaded again with them). */
const MECHANISMS: Catalog = { ss };

/**
 * SS: the subset holds x with probability p; ω members in all.
 *
 * @mechanisms ss
 */
export class SubsetEncoder implements Encoder {
  private readonly index: DomainIndex;
  private readonly p: Fraction;
  private readonly omega: number;
  private readonly bits: BitReader;

  constructor(readonly spec: Spec, source: ByteSource = cryptoSource) {
    checkedSpecIn(MECHANISMS, spec);
    this.index = new DomainIndex(specDomain(spec));
    this.p = specFraction(spec, "p");
    this.omega = Number(specInt(spec, "omega")); // 1 ≤ ω ≤ d − 1 and ω/d < p < 1: checked with the spec (privacy/subset.ts)
    this.bits = bitReader(source);
  }

  encode(value: Value): Report {
    const d = this.index.size;
    const x = this.index.indexOf(value);
    const holds = coin(this.p, this.bits);
    const others = uniformSubset(d - 1, this.omega - (holds ? 1 : 0), this.bits);
    const positions = others.map((o) => (o >= x ? o + 1 : o));
    if (holds) positions.push(x);
    return { spec: this.spec.fingerprint, bits: positionsToPacked(positions, d) };
  }
}
