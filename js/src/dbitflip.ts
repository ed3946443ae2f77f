/**
 * dBitFlip (mechanism "dbitflip"): d sampled buckets per client and their
 * memoized bits, both from the client's keyed PRF, each bit flipped with γ
 * afresh in every report; every byte read in the Python client's order
 * (ldp/client/dbitflip.py).
 */
import { utf8 } from "./bytes.js";
import { type Encoder, type EncoderOptions, type RapporClient, newClient } from "./encoder.js";
import { type Fraction, compare, fraction, ONE, sub } from "./fraction.js";
import { lanesToPacked, positionsToPacked } from "./packing.js";
import { type ByteSource, type Shake256, cryptoSource, defaultShake256, prfInput, randbelow, sampleLaneWords } from "./random.js";
import { bitReader, runLaneWords } from "./reportbits.js";
import type { Report } from "./report.js";
import { type Spec, checkedSpec, specDomain, specFraction, specInt } from "./spec.js";
import { DomainIndex, type Value } from "./values.js";

const BUCKETS_LABEL = utf8("ldp-dbitflip-buckets-v1");
const MEMO_LABEL = utf8("ldp-dbitflip-memo-v1");
const HALF = fraction(1n, 2n);

/**
 * The d buckets a client samples, ascending: Floyd's algorithm over [0, b)
 * on the stream PRF("ldp-dbitflip-buckets-v1", secret, fingerprint).
 */
export function sampledBuckets(spec: Spec, secret: Uint8Array, shake: Shake256 = defaultShake256): number[] {
  const stream = shake(prfInput(BUCKETS_LABEL, secret, utf8(spec.fingerprint)));
  const b = specDomain(spec).length;
  const d = Number(specInt(spec, "d"));
  const chosen = new Set<number>();
  for (let j = b - d; j < b; j++) {
    const t = Number(randbelow(BigInt(j + 1), stream));
    chosen.add(chosen.has(t) ? j : t);
  }
  return [...chosen].sort((x, y) => x - y);
}

/** Every lane of `width` set, as 32-bit words. */
function full(width: number): Uint32Array {
  const out = new Uint32Array((width + 31) >>> 5).fill(0xffffffff);
  if (width % 32) out[out.length - 1] = 2 ** (width % 32) - 1;
  return out;
}

/**
 * dBitFlip: the report is b + d bits, the sampled buckets then the sent bits
 * (the memoized bits of the value's memo key, flipped with γ).
 *
 * @mechanisms dbitflip
 */
export class DBitFlipEncoder implements Encoder {
  /** The client's sampled buckets, ascending. */
  readonly buckets: number[];
  private readonly index: DomainIndex;
  private readonly b: number;
  private readonly d: number;
  private readonly p: Fraction;
  private readonly q: Fraction;
  private readonly gamma: Fraction;
  private readonly full: Uint32Array;
  private readonly position = new Map<number, number>();

  /** The encoder `makeEncoder` gives: the options' client (a fresh one when missing) and SHAKE-256. */
  static create(spec: Spec, source: ByteSource, options: EncoderOptions): DBitFlipEncoder {
    return new DBitFlipEncoder(spec, options.client ?? newClient(spec, source), source, options.shake);
  }

  constructor(
    readonly spec: Spec,
    readonly client: RapporClient,
    private readonly source: ByteSource = cryptoSource,
    private readonly shake: Shake256 = defaultShake256,
  ) {
    checkedSpec(spec);
    this.index = new DomainIndex(specDomain(spec));
    this.b = this.index.size;
    this.d = Number(specInt(spec, "d"));
    this.p = specFraction(spec, "p");
    this.q = sub(ONE, this.p);
    this.gamma = specFraction(spec, "gamma");
    if (compare(this.p, HALF) <= 0 || compare(this.p, ONE) >= 0) throw new RangeError("dbitflip needs 1/2 < p < 1");
    if (compare(this.gamma, HALF) >= 0) throw new RangeError("dbitflip needs 0 <= gamma < 1/2");
    if (client.secret.length !== 32) throw new RangeError("a dBitFlip client secret is 32 bytes");
    this.full = full(this.d);
    this.buckets = sampledBuckets(spec, client.secret, shake);
    this.buckets.forEach((bucket, i) => this.position.set(bucket, i));
  }

  /** The position among the sampled buckets of the bucket holding `value`, or −1 when it is not sampled. */
  private patternPosition(value: Value): number {
    return this.position.get(this.index.indexOf(value)) ?? -1;
  }

  /** The memo key of `value`: the d-bit pattern of which sampled bucket holds it, packed (the ledger's stream). */
  memoKey(value: Value): Uint8Array {
    const i = this.patternPosition(value);
    return lanesToPacked(i < 0 ? 0n : 1n << BigInt(i), this.d);
  }

  /** The memoized bits of the value's memo key, as 32-bit words: 1 w.p. p where the pattern is set, q elsewhere. */
  permanentWords(value: Value): Uint32Array {
    const i = this.patternPosition(value);
    const pattern = new Uint32Array(this.full.length);
    if (i >= 0) pattern[i >>> 5] = 2 ** (i & 31);
    const rest = this.full.map((w, k) => (w ^ pattern[k]) >>> 0);
    const key = lanesToPacked(i < 0 ? 0n : 1n << BigInt(i), this.d);
    const stream = this.shake(prfInput(MEMO_LABEL, this.client.secret, utf8(this.spec.fingerprint), key));
    const groups = [
      { mask: pattern, probability: this.p },
      { mask: rest, probability: this.q },
    ];
    return sampleLaneWords(this.d, groups, stream);
  }

  encode(value: Value): Report {
    const sent = this.permanentWords(value);
    if (this.gamma.num !== 0n) {
      // output perturbation: each memoized bit flipped with probability γ, from the CSPRNG
      const flips = runLaneWords(this.d, [{ mask: this.full, probability: this.gamma }], bitReader(this.source));
      for (let w = 0; w < sent.length; w++) sent[w] = (sent[w] ^ flips[w]) >>> 0;
    }
    const positions = [...this.buckets];
    for (let k = 0; k < this.d; k++) if ((sent[k >>> 5] >>> (k & 31)) & 1) positions.push(this.b + k);
    return { spec: this.spec.fingerprint, bits: positionsToPacked(positions, this.b + this.d) };
  }
}
