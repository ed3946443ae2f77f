/** RAPPOR (mechanism "rappor"): a client's persistent state and its encoder. */
import { utf8 } from "./bytes.js";
import { type Encoder, type EncoderOptions, type RapporClient, fullWords, newClient } from "./encoder.js";
import { type Fraction, divInt, ONE, sub } from "./fraction.js";
import { bloomPositions } from "./hashing.js";
import { wordsToPacked } from "./packing.js";
import { type ByteSource, type Shake256, defaultShake256, prfInput, cryptoSource, sampleLaneWords, wordsToLanes } from "./random.js";
import { type BitReader, bitReader, runLaneWords } from "./reportbits.js";
import type { Report } from "./report.js";
import type { Catalog } from "./catalog.js";
import { rappor } from "./catalog/rappor.js";
import { type Spec, checkedSpecIn, specDomain, specFraction, specInt } from "./specload.js";
import { clip } from "./text.js";
import { DomainIndex, type Value, valueBytes } from "./values.js";

/** A fresh client: a CSPRNG secret, then a uniform cohort (`newClient`, kept under RAPPOR's name). */
export function newRapporClient(spec: Spec, source: ByteSource = cryptoSource): RapporClient {
  return newClient(spec, source);
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

/** The mechanisms this module encodes: their spec entries (a spec built by hand is loaded again with them). */
const MECHANISMS: Catalog = { rappor };

/**
 * RAPPOR: Bloom filter, memoized permanent response (keyed PRF), fresh instantaneous response.
 *
 * @mechanisms rappor
 */
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
  private readonly bits: BitReader;

  /** The encoder `makeEncoder` gives: the options' client (a fresh one when missing) and SHAKE-256. */
  static create(spec: Spec, source: ByteSource, options: EncoderOptions): RapporEncoder {
    return new RapporEncoder(spec, options.client ?? newRapporClient(spec, source), source, options.shake);
  }

  constructor(
    readonly spec: Spec,
    readonly client: RapporClient,
    source: ByteSource = cryptoSource,
    private readonly shake: Shake256 = defaultShake256,
  ) {
    checkedSpecIn(MECHANISMS, spec);
    this.encoding = spec.fields.encoding as string;
    this.width = Number(specInt(spec, "num_bits"));
    if (this.encoding === "basic") this.index = new DomainIndex(specDomain(spec));
    this.f = specFraction(spec, "f");
    this.p = specFraction(spec, "p");
    this.q = specFraction(spec, "q"); // p < q and f < 1: checked with the spec (privacy/rappor.ts)
    if (client.secret.length !== 32) throw new RangeError("a RAPPOR client secret is 32 bytes");
    const cohorts = specInt(spec, "num_cohorts");
    if (!Number.isInteger(client.cohort) || client.cohort < 0 || BigInt(client.cohort) >= cohorts) {
      throw new RangeError(`cohort must be in [0, ${cohorts})`);
    }
    this.halfF = divInt(this.f, 2n);
    this.keepOne = sub(ONE, this.halfF);
    this.full = fullWords(this.width);
    this.numHashes = this.encoding === "bloom" ? Number(specInt(spec, "num_hashes")) : 1;
    this.bits = bitReader(source);
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
    const irr = runLaneWords(this.width, groups, this.bits); // fresh coins: lanes as runs on the CSPRNG's bits
    return { spec: this.spec.fingerprint, cohort: this.client.cohort, bits: wordsToPacked(irr, this.width) };
  }
}

function xorWords(a: Uint32Array, b: Uint32Array): Uint32Array {
  const out = new Uint32Array(a.length);
  for (let w = 0; w < a.length; w++) out[w] = a[w] ^ b[w];
  return out;
}

