/** GRR and binary RR (mechanisms "grr", "binary-rr"): randomized response over the domain. */
import { type Encoder, RandomizedResponse } from "./encoder.js";
import { type ByteSource, cryptoSource } from "./random.js";
import { type BitReader, bitReader } from "./reportbits.js";
import type { Report } from "./report.js";
import type { Catalog } from "./catalog.js";
import { binaryRr, grr } from "./catalog/grr.js";
import { type Spec, checkedSpecIn, specDomain, specFraction } from "./specload.js";
import { DomainIndex, type Value } from "./values.js";

/** The mechanisms this module encodes: their spec entries (a spec built by hand is loaded again with them). */
const MECHANISMS: Catalog = { grr, "binary-rr": binaryRr };

/**
 * GRR and binary RR: report a domain value.
 *
 * @mechanisms grr binary-rr
 */
export class GRREncoder implements Encoder {
  private readonly index: DomainIndex;
  private readonly rr: RandomizedResponse;
  private readonly bits: BitReader;

  constructor(readonly spec: Spec, source: ByteSource = cryptoSource) {
    checkedSpecIn(MECHANISMS, spec);
    this.index = new DomainIndex(specDomain(spec));
    this.rr = new RandomizedResponse(specFraction(spec, "p"), BigInt(this.index.size));
    this.bits = bitReader(source);
  }

  encode(value: Value): Report {
    const reported = this.rr.draw(this.index.indexOf(value), this.bits);
    return { spec: this.spec.fingerprint, value: this.index.domain[reported] };
  }
}

