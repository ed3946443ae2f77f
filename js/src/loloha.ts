/** LOLOHA (mechanism "loloha"): a hash function from the public pool, a memo per bucket, fresh noise per report. */
import { utf8 } from "./bytes.js";
import { type Encoder, type EncoderOptions, type RapporClient, RandomizedResponse, StreamResponse, newClient } from "./encoder.js";
import { LH_SEED_SPACE, lhBucket } from "./hashing.js";
import { type ByteSource, type Shake256, UniformBelow, cryptoSource, defaultShake256, prfInput } from "./random.js";
import { bitReader } from "./reportbits.js";
import type { Report } from "./report.js";
import { type Spec, checkedSpec, specDomain, specFraction, specInt } from "./spec.js";
import { DomainIndex, type Value } from "./values.js";

const SEED_LABEL = utf8("ldp-loloha-seed-v1");
const MEMO_LABEL = utf8("ldp-loloha-memo-v1");
const POOL_LABEL = utf8("ldp-loloha-pool-v1");

/**
 * Seed `index` of the spec's public pool: the (index + 1)-th accepted draw of
 * randbelow((P − 1)·P) from SHAKE-256 of (`ldp-loloha-pool-v1`, fingerprint),
 * as Python's `ldp.specs.loloha.hash_pool`.
 */
export function poolSeed(fingerprint: string, index: number, shake: Shake256 = defaultShake256): bigint {
  const stream = bufferedSource(shake(prfInput(POOL_LABEL, utf8(fingerprint))), 8 * (index + 1) + 64);
  const draws = new UniformBelow(LH_SEED_SPACE);
  let seed = 0n;
  for (let i = 0; i <= index; i++) seed = draws.draw(stream);
  return seed;
}

/** `source` read ahead in blocks of at least `block` bytes (the same bytes, in order, fewer calls). */
function bufferedSource(source: ByteSource, block: number): ByteSource {
  let buffer = new Uint8Array(0);
  let pos = 0;
  return {
    read(n: number): Uint8Array {
      if (pos + n > buffer.length) {
        const more = source.read(Math.max(n, block));
        const merged = new Uint8Array(buffer.length - pos + more.length);
        merged.set(buffer.subarray(pos));
        merged.set(more, buffer.length - pos);
        buffer = merged;
        pos = 0;
      }
      pos += n;
      return buffer.subarray(pos - n, pos);
    },
  };
}

/**
 * LOLOHA: the client's pool index and memos come from keyed PRF streams of its
 * secret (so they survive restarts), round 2 from the CSPRNG.
 *
 * @mechanisms loloha
 */
export class LolohaEncoder implements Encoder {
  /** The client's index in the public pool of hash functions (sent with every report). */
  readonly seedIndex: number;
  /** The client's hash seed: the pool's entry `seedIndex`. */
  readonly hashSeed: bigint;
  private readonly index: DomainIndex;
  private readonly g: bigint;
  private readonly roundOne: StreamResponse;
  private readonly roundTwo: RandomizedResponse;
  private readonly fingerprint: Uint8Array;

  /** The encoder `makeEncoder` gives: the options' client (a fresh one when missing) and SHAKE-256. */
  static create(spec: Spec, source: ByteSource, options: EncoderOptions): LolohaEncoder {
    return new LolohaEncoder(spec, options.client ?? newClient(spec, source), source, options.shake);
  }

  constructor(
    readonly spec: Spec,
    readonly client: RapporClient,
    private readonly source: ByteSource = cryptoSource,
    private readonly shake: Shake256 = defaultShake256,
  ) {
    checkedSpec(spec);
    if (client.secret.length !== 32) throw new RangeError("a LOLOHA client secret is 32 bytes");
    this.index = new DomainIndex(specDomain(spec));
    this.g = specInt(spec, "g");
    this.roundOne = new StreamResponse(specFraction(spec, "p1"), this.g);
    this.roundTwo = new RandomizedResponse(specFraction(spec, "p2"), this.g);
    this.fingerprint = utf8(spec.fingerprint);
    const poolSize = specInt(spec, "pool_size");
    const seeds = this.shake(prfInput(SEED_LABEL, client.secret, this.fingerprint));
    this.seedIndex = new UniformBelow(poolSize).drawNumber(seeds);
    this.hashSeed = poolSeed(spec.fingerprint, this.seedIndex, this.shake);
  }

  /** The bucket of `value` under the client's hash function. */
  bucket(value: Value): number {
    return lhBucket(this.hashSeed, this.index.indexOf(value), this.g);
  }

  /** The memo (and ledger stream) key of `value`: its bucket in decimal ASCII. */
  memoKey(value: Value): Uint8Array {
    return utf8(String(this.bucket(value)));
  }

  /** Round 1: the memoized response of the value's bucket (from the PRF, never re-drawn). */
  permanentBucket(value: Value): number {
    const bucket = this.bucket(value);
    const stream = this.shake(prfInput(MEMO_LABEL, this.client.secret, this.fingerprint, utf8(String(bucket))));
    return this.roundOne.respond(bucket, stream);
  }

  encode(value: Value): Report {
    const reported = this.roundTwo.draw(this.permanentBucket(value), bitReader(this.source)); // fresh: a walk on the CSPRNG's bits
    return { spec: this.spec.fingerprint, seed: BigInt(this.seedIndex), value: BigInt(reported) };
  }
}
