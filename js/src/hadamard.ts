/**
 * Hadamard response (mechanism "hr"): one output y in [0, K) per value, as
 * the Python client draws it (tests/vectors/README.md, `encodings`).
 *
 * Layout: B = `blocks` blocks of b outputs, b the smallest power of two with
 * B·(b − 1) ≥ d; index x sits in block ⌊x/(b−1)⌋ at row (x mod (b−1)) + 1 of
 * the Sylvester Hadamard matrix H_b (entry (r, c) = (−1)^popcount(r & c)).
 * C_x is the row's b/2 "+1" positions inside x's block.
 */
import { type ByteSource, cryptoSource } from "./random.js";
import { type BitReader, KnuthYao, bitReader } from "./reportbits.js";
import type { Report } from "./report.js";
import type { Catalog } from "./catalog.js";
import { hr } from "./catalog/hadamard.js";
import { type Spec, checkedSpecIn, specDomain, specFraction, specInt } from "./specload.js";
import { DomainIndex, type Value } from "./values.js";
import { hadamardBlockSize, hadamardOutputProbabilities } from "./hrlayout.js";

export { hadamardBlockSize };
import type { Encoder } from "./encoder.js";

function popcountParity(x: number): number {
  let parity = 0;
  while (x) {
    parity ^= 1;
    x &= x - 1;
  }
  return parity;
}

/** The j-th position (j in [0, b/2)) of row r ≥ 1 of H_b whose entry is +1 (`plus`) or −1. */
export function rowPosition(row: number, j: number, plus: boolean): number {
  const low = row & -row; // lowest set bit of the row
  const base = ((j & ~(low - 1)) << 1) | (j & (low - 1)); // j with a 0 inserted at that bit
  const parity = popcountParity(row & base) ^ (plus ? 0 : 1);
  return base | (parity ? low : 0);
}

/** The mechanisms this module encodes: their spec entries (a spec built by hand is loaded again with them). */
const MECHANISMS: Catalog = { hr };

/**
 * HR client: one Knuth–Yao walk per report over the b/2 members of C_x (each with probability in) and the K − b/2
 * of its complement (each with out), on the CSPRNG's bits.
 *
 * @mechanisms hr
 */
export class HadamardEncoder implements Encoder {
  private readonly index: DomainIndex;
  private readonly blockSize: number;
  private readonly walk: KnuthYao;
  private readonly bits: BitReader;

  constructor(readonly spec: Spec, source: ByteSource = cryptoSource) {
    checkedSpecIn(MECHANISMS, spec);
    this.index = new DomainIndex(specDomain(spec));
    const blocks = specInt(spec, "blocks");
    this.blockSize = hadamardBlockSize(this.index.size, Number(blocks));
    const [inside, outside] = hadamardOutputProbabilities(specFraction(spec, "p"), blocks, BigInt(this.blockSize));
    const half = BigInt(this.blockSize / 2);
    const outputs = blocks * BigInt(this.blockSize);
    this.walk = new KnuthYao([
      { count: half, probability: inside },
      { count: outputs - half, probability: outside },
    ]);
    this.bits = bitReader(source);
  }

  encode(value: Value): Report {
    const x = this.index.indexOf(value);
    const b = this.blockSize;
    const half = b / 2;
    const block = Math.floor(x / (b - 1));
    const row = (x % (b - 1)) + 1;
    const inside = this.walk.sample(this.bits) === 0;
    const u = this.walk.member as number; // a member of C_x, or of its complement (K < 2^51 outcomes: a Number)
    let output: number;
    if (inside) {
      output = block * b + rowPosition(row, u, true);
    } else {
      if (u < half) output = block * b + rowPosition(row, u, false);
      else {
        const other = u - half; // an output of the other blocks, x's block skipped
        output = other >= block * b ? other + b : other;
      }
    }
    return { spec: this.spec.fingerprint, value: BigInt(output) };
  }
}
