/** Hadamard response's layout, shared by the encoder (hadamard.ts) and the spec's privacy check (claim.ts). */

/** b: the smallest power of two with blocks·(b − 1) ≥ d. */
export function hadamardBlockSize(domainSize: number, blocks: number): number {
  const need = Math.ceil(domainSize / blocks) + 1;
  let b = 1;
  while (b < need) b *= 2;
  return b;
}
