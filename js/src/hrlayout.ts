/** Hadamard response's layout and output probabilities, shared by the encoder (hadamard.ts) and the spec's privacy check (privacy/hadamard.ts). */
import { type Fraction, ONE, divInt, fraction, sub } from "./fraction.js";

/** b: the smallest power of two with blocks·(b − 1) ≥ d. */
export function hadamardBlockSize(domainSize: number, blocks: number): number {
  const need = Math.ceil(domainSize / blocks) + 1;
  let b = 1;
  while (b < need) b *= 2;
  return b;
}

/**
 * The probability of each output of C_x, 2p/b, and of each other output,
 * (1 − p)/(Bb − b/2), over `blocks` blocks of `b` outputs.
 */
export function hadamardOutputProbabilities(p: Fraction, blocks: bigint, b: bigint): [inside: Fraction, outside: Fraction] {
  return [fraction(2n * p.num, p.den * b), divInt(sub(ONE, p), blocks * b - b / 2n)];
}
