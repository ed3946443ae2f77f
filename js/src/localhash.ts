/** Local hashing (mechanisms "olh", "blh"): a random hash seed, then randomized response over its buckets. */
import { type Encoder, RandomizedResponse } from "./encoder.js";
import { LH_SEED_SPACE, lhBucket } from "./hashing.js";
import { type ByteSource, cryptoSource } from "./random.js";
import { type BitReader, bitReader, uniformBig } from "./reportbits.js";
import type { Report } from "./report.js";
import type { Catalog } from "./catalog.js";
import { blh, olh } from "./catalog/localhash.js";
import { type Spec, checkedSpecIn, specDomain, specFraction, specInt } from "./specload.js";
import { DomainIndex, type Value } from "./values.js";

/** The mechanisms this module encodes: their spec entries (a spec built by hand is loaded again with them). */
const MECHANISMS: Catalog = { olh, blh };

/**
 * OLH and BLH: a random hash seed (drawn first), then randomized response over its g buckets.
 *
 * @mechanisms olh blh
 */
export class LocalHashingEncoder implements Encoder {
  private readonly index: DomainIndex;
  private readonly g: bigint;
  private readonly rr: RandomizedResponse;
  private readonly bits: BitReader;

  constructor(readonly spec: Spec, source: ByteSource = cryptoSource) {
    checkedSpecIn(MECHANISMS, spec);
    this.index = new DomainIndex(specDomain(spec));
    this.g = specInt(spec, "g");
    this.rr = new RandomizedResponse(specFraction(spec, "p"), this.g);
    this.bits = bitReader(source);
  }

  encode(value: Value): Report {
    const index = this.index.indexOf(value);
    const seed = uniformBig(LH_SEED_SPACE, this.bits);
    const bucket = lhBucket(seed, index, this.g);
    return { spec: this.spec.fingerprint, seed, value: BigInt(this.rr.draw(bucket, this.bits)) };
  }
}

