/**
 * PEM (heavy hitters over an unknown domain): one OLH report of a prefix of
 * the value's bits, in the Python client's order (docs/heavy-hitters.md):
 * the group (round) first, then the hash seed, then randomized response over
 * the g buckets.
 */
import { sha256 } from "./hash/sha256.js";
import { bigIntToBytesBE, bytesToBigIntBE, concatBytes, utf8 } from "./bytes.js";
import { type Encoder, RandomizedResponse } from "./encoder.js";
import { LH_PRIME, LH_SEED_SPACE, lhBucket } from "./hashing.js";
import { type ByteSource, cryptoSource } from "./random.js";
import { type BitReader, bitReader, uniform, uniformBig } from "./reportbits.js";
import type { Report } from "./report.js";
import { clip, isWellFormed } from "./text.js";
import { type Spec, checkedSpec, specFraction, specInt } from "./spec.js";
import type { Value } from "./values.js";

/** Domain separation of the prefix hash. */
export const PREFIX_HASH_LABEL = "ldp-pem-prefix-v1";

/** The local-hashing input of a `length`-bit prefix: SHA-256(label ‖ length (2 bytes) ‖ prefix left-aligned), 8 bytes, mod P. */
export function prefixKey(prefix: bigint, length: number): bigint {
  const size = Math.ceil(length / 8);
  const aligned = bigIntToBytesBE(prefix << BigInt(8 * size - length), size);
  const digest = sha256(concatBytes(utf8(PREFIX_HASH_LABEL), bigIntToBytesBE(BigInt(length), 2), aligned));
  return bytesToBigIntBE(digest.slice(0, 8)) % LH_PRIME;
}

/** PEM's rounds: γ = ⌊log₂ k⌋ + 1 (at most m), ℓ_i = min(γ + iη, m) for i < 1 + ⌈(m − γ)/η⌉. */
export function pemPrefixLengths(maxLength: number, topK: number, eta: number): number[] {
  const m = 8 * maxLength;
  const gamma = Math.min(topK.toString(2).length, m);
  const rounds = 1 + Math.ceil((m - gamma) / eta);
  return Array.from({ length: rounds }, (_, i) => Math.min(gamma + i * eta, m));
}

/** TreeHist's rounds: 1, 2, …, m (the levels), then m (the final estimation group). */
export function treeHistPrefixLengths(maxLength: number): number[] {
  const m = 8 * maxLength;
  return [...Array.from({ length: m }, (_, i) => i + 1), m];
}

/** The m-bit encoding of a value: its UTF-8 bytes, zero-padded to `maxLength`, big-endian (clear errors for bad values). */
export function pemValueBits(value: Value, maxLength: number): bigint {
  if (typeof value !== "string") throw new RangeError(`pem values are strings, got ${typeof value} ${clip(String(value), 40)}`);
  if (value.includes("\u0000")) throw new RangeError("pem values cannot contain U+0000 (the zero byte pads values to max_length)");
  if (!isWellFormed(value)) throw new RangeError(`pem: value ${clip(value, 40, true)} is not encodable as UTF-8`);
  const data = utf8(value);
  if (data.length > maxLength) {
    throw new RangeError(`pem: value ${clip(value, 40, true)} is ${data.length} bytes of UTF-8, above max_length=${maxLength}`);
  }
  const padded = new Uint8Array(maxLength);
  padded.set(data);
  return bytesToBigIntBE(padded);
}

/**
 * PEM's and TreeHist's client: one report ⟨round, seed, bucket⟩, every coin from one byte source.
 *
 * @mechanisms pem treehist
 */
export class PEMEncoder implements Encoder {
  private readonly maxLength: number;
  private readonly lengths: number[];
  private readonly g: bigint;
  private readonly rr: RandomizedResponse;
  private readonly bits: BitReader;

  constructor(readonly spec: Spec, source: ByteSource = cryptoSource) {
    checkedSpec(spec);
    this.maxLength = Number(specInt(spec, "max_length"));
    this.lengths =
      spec.mechanism === "treehist"
        ? treeHistPrefixLengths(this.maxLength)
        : pemPrefixLengths(this.maxLength, Number(specInt(spec, "top_k")), Number(specInt(spec, "eta")));
    this.g = specInt(spec, "g");
    this.rr = new RandomizedResponse(specFraction(spec, "p"), this.g);
    this.bits = bitReader(source);
  }

  encode(value: Value): Report {
    const bits = pemValueBits(value, this.maxLength);
    const round = uniform(this.lengths.length, this.bits);
    const length = this.lengths[round];
    const key = prefixKey(bits >> BigInt(8 * this.maxLength - length), length);
    const seed = uniformBig(LH_SEED_SPACE, this.bits);
    const bucket = lhBucket(seed, key, this.g);
    return { spec: this.spec.fingerprint, seed, value: BigInt(this.rr.draw(bucket, this.bits)), extra: [["round", round]] };
  }
}
