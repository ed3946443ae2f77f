/**
 * The longitudinal chains (mechanisms "l-grr", "l-osue", "l-oue", "l-sue"):
 * a memoized first round at ε∞ and a fresh second round, one report ε₁-LDP
 * (docs/longitudinal/chains.md). The memo is derived, never stored: its coins
 * are the bytes of SHAKE-256 over (label, client secret, spec fingerprint,
 * memo key), label `ldp-<mechanism>-memo-v1`, fed to the same exact samplers
 * as fresh coins, so the client's state is its 32-byte secret (keep it, as a
 * RAPPOR client's). The second round's coins come from the CSPRNG. Bytes are
 * consumed exactly as the Python client (`ldp/client/longitudinal.py`)
 * consumes them (the cross-language vectors check it).
 */
import { utf8 } from "./bytes.js";
import { type Encoder, type EncoderOptions, type RapporClient, RandomizedResponse, StreamResponse, fullWords } from "./encoder.js";
import { type Fraction, ONE, compare } from "./fraction.js";
import { wordsToPacked } from "./packing.js";
import { type ByteSource, type Shake256, cryptoSource, defaultShake256, prfInput, sampleLaneWords } from "./random.js";
import { bitReader, runLaneWords } from "./reportbits.js";
import type { Report } from "./report.js";
import { type Spec, checkedSpec, specDomain, specFraction } from "./spec.js";
import { DomainIndex, type Value } from "./values.js";

/** A fresh chain client: a CSPRNG secret (a chain has no cohorts: 0). */
function newChainClient(source: ByteSource = cryptoSource): RapporClient {
  return { secret: source.read(32), cohort: 0 };
}

/**
 * L-GRR (randomized response in both rounds) and the unary chains L-OSUE,
 * L-OUE, L-SUE (a one-hot vector, each bit memoized, then each bit fresh).
 *
 * @mechanisms l-grr l-osue l-oue l-sue
 */
export class LongitudinalEncoder implements Encoder {
  private readonly index: DomainIndex;
  private readonly unary: boolean;
  private readonly label: Uint8Array;
  private readonly p1: Fraction;
  private readonly q1: Fraction;
  private readonly p2: Fraction;
  private readonly q2: Fraction;
  private readonly full: Uint32Array;
  private readonly first?: StreamResponse;
  private readonly second?: RandomizedResponse;
  private prfPrefix?: Uint8Array;

  /** The encoder `makeEncoder` gives: the options' client (a fresh one when missing) and SHAKE-256. */
  static create(spec: Spec, source: ByteSource, options: EncoderOptions): LongitudinalEncoder {
    return new LongitudinalEncoder(spec, options.client ?? newChainClient(source), source, options.shake);
  }

  constructor(
    readonly spec: Spec,
    readonly client: RapporClient,
    private readonly source: ByteSource = cryptoSource,
    private readonly shake: Shake256 = defaultShake256,
  ) {
    checkedSpec(spec); // both claims (ε₁, ε∞) checked against the exact probabilities
    if (client.secret.length !== 32) throw new RangeError("a client secret is 32 bytes");
    this.index = new DomainIndex(specDomain(spec));
    this.unary = spec.mechanism !== "l-grr";
    this.label = utf8(`ldp-${spec.mechanism}-memo-v1`);
    [this.p1, this.q1, this.p2, this.q2] = ["p1", "q1", "p2", "q2"].map((name) => specFraction(spec, name));
    for (const p of [this.p1, this.q1, this.p2, this.q2]) {
      if (p.num <= 0n || compare(p, ONE) >= 0) throw new RangeError(`${spec.mechanism} probabilities must be in (0, 1)`);
    }
    this.full = fullWords(this.index.size);
    if (!this.unary) {
      const k = BigInt(this.index.size);
      this.first = new StreamResponse(this.p1, k);
      this.second = new RandomizedResponse(this.p2, k);
    }
  }

  /** The value's identity for memoization: its domain index as decimal text (two spellings share it). */
  memoKey(value: Value): Uint8Array {
    return utf8(String(this.index.indexOf(value)));
  }

  /** The keyed PRF stream of the value's memo. */
  private memoStream(memoKey: Uint8Array): ByteSource {
    this.prfPrefix ??= prfInput(this.label, this.client.secret, utf8(this.spec.fingerprint));
    const input = new Uint8Array(this.prfPrefix.length + 4 + memoKey.length);
    input.set(this.prfPrefix);
    new DataView(input.buffer).setUint32(this.prfPrefix.length, memoKey.length); // big-endian
    input.set(memoKey, this.prfPrefix.length + 4);
    return this.shake(input);
  }

  /** L-GRR: the memoized domain index of `value` (randomized response at ε∞ from the PRF). */
  memoIndex(value: Value): number {
    if (this.first === undefined) throw new RangeError(`${this.spec.mechanism} memoizes bits, not an index`);
    const i = this.index.indexOf(value);
    return this.first.respond(i, this.memoStream(utf8(String(i))));
  }

  /** The unary chains: the memoized bits of `value` as 32-bit words (lane i = domain value i). */
  memoWords(value: Value): Uint32Array {
    const i = this.index.indexOf(value);
    const oneHot = new Uint32Array(this.full.length);
    oneHot[i >>> 5] = 2 ** (i & 31);
    const others = this.full.slice();
    others[i >>> 5] ^= oneHot[i >>> 5];
    const groups = [
      { mask: oneHot, probability: this.p1 },
      { mask: others, probability: this.q1 },
    ];
    return sampleLaneWords(this.index.size, groups, this.memoStream(utf8(String(i))));
  }

  encode(value: Value): Report {
    if (!this.unary) {
      const reported = this.second!.draw(this.memoIndex(value), bitReader(this.source)); // fresh: a walk on the CSPRNG's bits
      return { spec: this.spec.fingerprint, value: this.index.domain[reported] };
    }
    const memo = this.memoWords(value);
    const off = new Uint32Array(memo.length);
    for (let w = 0; w < memo.length; w++) off[w] = this.full[w] ^ memo[w];
    const groups = [
      { mask: memo, probability: this.p2 },
      { mask: off, probability: this.q2 },
    ];
    const lanes = runLaneWords(this.index.size, groups, bitReader(this.source)); // fresh: lanes as runs
    return { spec: this.spec.fingerprint, bits: wordsToPacked(lanes, this.index.size) };
  }
}
