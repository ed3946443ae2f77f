/**
 * Subset selection (SS): a random ω-subset of the domain, sent as a d-bit
 * vector. One exact coin (randbelow(p.den) < p.num) decides whether the
 * subset holds the true value x, then Floyd's algorithm draws the other
 * members from the d − 1 values other than x, every coin in the Python
 * client's order (ldp/client/subset.py).
 */
import type { Fraction } from "./fraction.js";
import { positionsToPacked } from "./packing.js";
import { type ByteSource, UniformBelow, cryptoSource, randbelow } from "./random.js";
import type { Report } from "./report.js";
import type { Catalog } from "./catalog.js";
import { ss } from "./catalog/subset.js";
import { type Spec, checkedSpecIn, specDomain, specFraction, specInt } from "./specload.js";
import { DomainIndex, type Value } from "./values.js";
import type { Encoder } from "./encoder.js";

/** A uniform `size`-subset of [0, population) (Floyd): for j = population − size, …, population − 1, t = randbelow(j + 1). */
export function floydSample(population: number, size: number, source: ByteSource): Set<number> {
  const chosen = new Set<number>();
  for (let j = population - size; j < population; j++) {
    const t = Number(randbelow(BigInt(j + 1), source));
    chosen.add(chosen.has(t) ? j : t);
  }
  return chosen;
}

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
  private readonly coin: UniformBelow;

  constructor(readonly spec: Spec, private readonly source: ByteSource = cryptoSource) {
    checkedSpecIn(MECHANISMS, spec);
    this.index = new DomainIndex(specDomain(spec));
    this.p = specFraction(spec, "p");
    this.omega = Number(specInt(spec, "omega")); // 1 ≤ ω ≤ d − 1 and ω/d < p < 1: checked with the spec (privacy/subset.ts)
    this.coin = new UniformBelow(this.p.den);
  }

  encode(value: Value): Report {
    const d = this.index.size;
    const x = this.index.indexOf(value);
    const holds = this.coin.draw(this.source) < this.p.num;
    const others = floydSample(d - 1, this.omega - (holds ? 1 : 0), this.source);
    const positions = [...others].map((o) => (o >= x ? o + 1 : o));
    if (holds) positions.push(x);
    return { spec: this.spec.fingerprint, bits: positionsToPacked(positions, d) };
  }
}
