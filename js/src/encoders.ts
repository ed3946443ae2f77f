/**
 * Client encoders of the frequency oracles and RAPPOR: one value in, one
 * report out, every coin exact and from one byte source (the CSPRNG unless
 * given), in the Python client's order.
 */
import { utf8 } from "./bytes.js";
import { type Fraction, compare, divInt, fraction, lcm, ONE, sub } from "./fraction.js";
import { LH_SEED_SPACE, bloomPositions, lhBucket } from "./hashing.js";
import { wordsToPacked } from "./packing.js";
import { type ByteSource, type Shake256, UniformBelow, nobleShake256, prfInput, cryptoSource, randbelow, sampleLaneWords, wordsToLanes } from "./random.js";
import { PEMEncoder } from "./pem.js";
import type { Report } from "./report.js";
import { CMSEncoder, HCMSEncoder } from "./sketch.js";
import { type Spec, checkedSpec, specDomain, specFraction, specInt } from "./spec.js";
import { SubsetEncoder } from "./subset.js";
import { DomainIndex, type Value, valueBytes } from "./values.js";
import { HadamardEncoder } from "./hadamard.js";
import { clip } from "./text.js";

/** What every encoder offers. */
export interface Encoder {
  readonly spec: Spec;
  /** Randomize `value` into a report. */
  encode(value: Value): Report;
}

/** Randomized response over [0, n): keep the index with keep/den, else each other one with other/den. */
export class RandomizedResponse {
  private readonly uniform: UniformBelow;
  private readonly den: bigint;
  private readonly keep: bigint;
  private readonly other: bigint;

  constructor(p: Fraction, n: bigint) {
    if (n < 2n || compare(p, fraction(1n, n)) <= 0 || compare(p, ONE) >= 0) {
      throw new RangeError(`randomized response needs 1/${n} < p < 1, got ${p.num}/${p.den}`);
    }
    const q = divInt(sub(ONE, p), n - 1n); // each other value
    this.den = lcm(p.den, q.den);
    this.keep = p.num * (this.den / p.den);
    this.other = q.num * (this.den / q.den);
    this.uniform = new UniformBelow(this.den);
  }

  /** One randbelow(den): below keep keeps `index`; the rest splits into slices of `other`, one per other value. */
  respond(index: number, source: ByteSource): number {
    const r = this.uniform.draw(source);
    if (r < this.keep) return index;
    const o = Number((r - this.keep) / this.other);
    return o >= index ? o + 1 : o;
  }
}

/** GRR and binary RR: report a domain value. */
export class GRREncoder implements Encoder {
  private readonly index: DomainIndex;
  private readonly rr: RandomizedResponse;

  constructor(readonly spec: Spec, private readonly source: ByteSource = cryptoSource) {
    checkedSpec(spec);
    this.index = new DomainIndex(specDomain(spec));
    this.rr = new RandomizedResponse(specFraction(spec, "p"), BigInt(this.index.size));
  }

  encode(value: Value): Report {
    const reported = this.rr.respond(this.index.indexOf(value), this.source);
    return { spec: this.spec.fingerprint, value: this.index.domain[reported] };
  }
}

/** Every lane of `width` set, as 32-bit words. */
function fullWords(width: number): Uint32Array {
  const out = new Uint32Array((width + 31) >>> 5).fill(0xffffffff);
  if (width % 32) out[out.length - 1] = 2 ** (width % 32) - 1;
  return out;
}

/** SUE and OUE: the one-hot vector, the true bit 1 with p, every other with q. */
export class UnaryEncoder implements Encoder {
  private readonly index: DomainIndex;
  private readonly p: Fraction;
  private readonly q: Fraction;
  private readonly full: Uint32Array;

  constructor(readonly spec: Spec, private readonly source: ByteSource = cryptoSource) {
    checkedSpec(spec);
    this.index = new DomainIndex(specDomain(spec));
    this.p = specFraction(spec, "p");
    this.q = specFraction(spec, "q");
    if (compare(this.p, this.q) <= 0 || this.q.num === 0n || compare(this.p, ONE) >= 0) {
      throw new RangeError(`${spec.mechanism} needs 0 < q < p < 1`);
    }
    this.full = fullWords(this.index.size);
  }

  encode(value: Value): Report {
    const width = this.index.size;
    const i = this.index.indexOf(value);
    const oneHot = new Uint32Array(this.full.length);
    oneHot[i >>> 5] = 2 ** (i & 31);
    const others = this.full.slice();
    others[i >>> 5] ^= oneHot[i >>> 5];
    const groups = [
      { mask: oneHot, probability: this.p },
      { mask: others, probability: this.q },
    ];
    const lanes = sampleLaneWords(width, groups, this.source);
    return { spec: this.spec.fingerprint, bits: wordsToPacked(lanes, width) };
  }
}

/** OLH and BLH: a random hash seed (drawn first), then randomized response over its g buckets. */
export class LocalHashingEncoder implements Encoder {
  private readonly index: DomainIndex;
  private readonly g: bigint;
  private readonly rr: RandomizedResponse;

  constructor(readonly spec: Spec, private readonly source: ByteSource = cryptoSource) {
    checkedSpec(spec);
    this.index = new DomainIndex(specDomain(spec));
    this.g = specInt(spec, "g");
    this.rr = new RandomizedResponse(specFraction(spec, "p"), this.g);
  }

  private static readonly seeds = new UniformBelow(LH_SEED_SPACE);

  encode(value: Value): Report {
    const index = this.index.indexOf(value);
    const seed = LocalHashingEncoder.seeds.draw(this.source);
    const bucket = lhBucket(seed, index, this.g);
    return { spec: this.spec.fingerprint, seed, value: BigInt(this.rr.respond(bucket, this.source)) };
  }
}

/** A RAPPOR client's persistent state: keep it, so the permanent response stays the same. */
export interface RapporClient {
  /** 32 secret bytes: the PRF key of the permanent response. */
  secret: Uint8Array;
  cohort: number;
}

/** A fresh client: a CSPRNG secret, then a uniform cohort (as Python's `ClientState.new`). */
export function newRapporClient(spec: Spec, source: ByteSource = cryptoSource): RapporClient {
  const secret = source.read(32);
  const cohort = Number(randbelow(specInt(spec, "num_cohorts"), source));
  return { secret, cohort };
}

const TRUE_WORDS = new Set(["1", "true", "t", "yes", "y"]);
const FALSE_WORDS = new Set(["0", "false", "f", "no", "n"]);

/** A boolean from true/false, 0/1 or the words Python accepts. */
export function parseBoolean(value: Value): boolean {
  if (typeof value === "boolean") return value;
  if ((typeof value === "bigint" || typeof value === "number") && (value == 0 || value == 1)) return value == 1;
  if (typeof value === "string") {
    const word = value.trim().toLowerCase();
    if (TRUE_WORDS.has(word)) return true;
    if (FALSE_WORDS.has(word)) return false;
  }
  throw new RangeError(`not a boolean: ${clip(String(value), 80, true)}`);
}

const PRR_LABEL = utf8("ldp-rappor-prr-v1");

/** RAPPOR: Bloom filter, memoized permanent response (keyed PRF), fresh instantaneous response. */
export class RapporEncoder implements Encoder {
  private readonly encoding: string;
  private readonly width: number;
  private readonly index?: DomainIndex;
  private readonly f: Fraction;
  private readonly p: Fraction;
  private readonly q: Fraction;
  private readonly halfF: Fraction;
  private readonly keepOne: Fraction;
  private readonly full: Uint32Array;
  private readonly numHashes: number;
  private prfPrefix?: Uint8Array;

  constructor(
    readonly spec: Spec,
    readonly client: RapporClient,
    private readonly source: ByteSource = cryptoSource,
    private readonly shake: Shake256 = nobleShake256,
  ) {
    checkedSpec(spec);
    this.encoding = spec.fields.encoding as string;
    this.width = Number(specInt(spec, "num_bits"));
    if (this.encoding === "basic") this.index = new DomainIndex(specDomain(spec));
    this.f = specFraction(spec, "f");
    this.p = specFraction(spec, "p");
    this.q = specFraction(spec, "q");
    if (compare(this.p, this.q) >= 0 || compare(this.f, ONE) >= 0) throw new RangeError("rappor needs p < q and f < 1");
    if (client.secret.length !== 32) throw new RangeError("a RAPPOR client secret is 32 bytes");
    const cohorts = specInt(spec, "num_cohorts");
    if (!Number.isInteger(client.cohort) || client.cohort < 0 || BigInt(client.cohort) >= cohorts) {
      throw new RangeError(`cohort must be in [0, ${cohorts})`);
    }
    this.halfF = divInt(this.f, 2n);
    this.keepOne = sub(ONE, this.halfF);
    this.full = fullWords(this.width);
    this.numHashes = this.encoding === "bloom" ? Number(specInt(spec, "num_hashes")) : 1;
  }

  /** Positions of the true Bloom bits B. */
  truePositions(value: Value): number[] {
    if (this.encoding === "basic") return [this.index!.indexOf(value)];
    if (this.encoding === "boolean") return parseBoolean(value) ? [0] : [];
    return this.bloomPositions(valueBytes(value));
  }

  private bloomPositions(bytes: Uint8Array): number[] {
    return bloomPositions(bytes, this.client.cohort, this.numHashes, this.width, this.spec.fields.hash as "mmh3" | "md5");
  }

  /** The value's identity for memoization: two spellings of one value share it. */
  memoKey(value: Value): Uint8Array {
    if (this.encoding === "basic") return utf8(String(this.index!.indexOf(value)));
    if (this.encoding === "boolean") return utf8(parseBoolean(value) ? "1" : "0");
    return valueBytes(value);
  }

  /** The PRF parts of the value's permanent response: label, secret, fingerprint, memo key. */
  prfParts(value: Value): Uint8Array[] {
    return [PRR_LABEL, this.client.secret, utf8(this.spec.fingerprint), this.memoKey(value)];
  }

  /** `prfInput(...prfParts(value))` from the memo key, with the first three parts encoded once. */
  private prfInputOf(memoKey: Uint8Array): Uint8Array {
    this.prfPrefix ??= prfInput(PRR_LABEL, this.client.secret, utf8(this.spec.fingerprint));
    const out = new Uint8Array(this.prfPrefix.length + 4 + memoKey.length);
    out.set(this.prfPrefix);
    new DataView(out.buffer).setUint32(this.prfPrefix.length, memoKey.length); // big-endian
    out.set(memoKey, this.prfPrefix.length + 4);
    return out;
  }

  /** B′, the permanent response as lanes: 1 w.p. 1 − f/2 where B = 1, f/2 where B = 0 (from the PRF). */
  permanentBits(value: Value): bigint {
    return wordsToLanes(this.permanentWords(value));
  }

  /** B′ as 32-bit words (see `permanentBits`). */
  permanentWords(value: Value): Uint32Array {
    // a Bloom filter's memo key is the value's bytes: encoded once for both uses
    const key = this.memoKey(value);
    const positions = this.encoding === "bloom" ? this.bloomPositions(key) : this.truePositions(value);
    const bloom = new Uint32Array(this.full.length);
    for (const i of positions) bloom[i >>> 5] |= 2 ** (i & 31);
    if (this.f.num === 0n) return bloom;
    const groups = [
      { mask: bloom, probability: this.keepOne },
      { mask: xorWords(this.full, bloom), probability: this.halfF },
    ];
    return sampleLaneWords(this.width, groups, this.shake(this.prfInputOf(key)));
  }

  encode(value: Value): Report {
    const prr = this.permanentWords(value);
    const groups = [
      { mask: prr, probability: this.q },
      { mask: xorWords(this.full, prr), probability: this.p },
    ];
    const irr = sampleLaneWords(this.width, groups, this.source);
    return { spec: this.spec.fingerprint, cohort: this.client.cohort, bits: wordsToPacked(irr, this.width) };
  }
}

function xorWords(a: Uint32Array, b: Uint32Array): Uint32Array {
  const out = new Uint32Array(a.length);
  for (let w = 0; w < a.length; w++) out[w] = a[w] ^ b[w];
  return out;
}

/**
 * The encoder of a frequency spec. RAPPOR takes the persistent `client`
 * (a fresh one when missing) and `shake`, the SHAKE-256 of its permanent
 * response (default: `nobleShake256`; in Node `nativeShake256` of
 * `ldp-client/node` is several times faster, with the same bytes); `source`
 * replaces the CSPRNG (tests only).
 * Numeric specs: `NumericEncoder` (numeric.ts), with the server's table.
 */
export function makeEncoder(spec: Spec, options: { source?: ByteSource; client?: RapporClient; shake?: Shake256 } = {}): Encoder {
  const source = options.source ?? cryptoSource;
  switch (spec.mechanism) {
    case "grr":
    case "binary-rr":
      return new GRREncoder(spec, source);
    case "sue":
    case "oue":
      return new UnaryEncoder(spec, source);
    case "olh":
    case "blh":
      return new LocalHashingEncoder(spec, source);
    case "hr":
      return new HadamardEncoder(spec, source);
    case "cms":
      return new CMSEncoder(spec, source);
    case "hcms":
      return new HCMSEncoder(spec, source);
    case "ss":
      return new SubsetEncoder(spec, source);
    case "rappor":
      return new RapporEncoder(spec, options.client ?? newRapporClient(spec, source), source, options.shake);
    case "pem":
    case "treehist":
      return new PEMEncoder(spec, source);
  }
  throw new RangeError(`no encoder for ${spec.mechanism} here`);
}
