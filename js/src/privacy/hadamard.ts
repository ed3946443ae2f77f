/**
 * Privacy facts of Hadamard response (`ldp/specs/hadamard.py`).
 */
import { div, fraction } from "../fraction.js";
import { hadamardBlockSize, hadamardOutputProbabilities } from "../hrlayout.js";
import type { JsonObject } from "../json.js";
import { type MechanismPrivacy, domainSize, intIn, keep } from "../privacyfields.js";
import { fail } from "../text.js";

/**
 * Hadamard response over B blocks of b outputs: each output of C_x has
 * probability 2p/b, each other output (1 − p)/(Bb − b/2).
 *
 * @privacy hr
 */
export function hadamardPrivacy(fields: JsonObject): MechanismPrivacy {
  const d = domainSize(fields);
  if (d < 2n) fail(`hr needs a domain of at least 2 values, got ${d}`);
  const blocks = intIn(fields, "blocks", 1n, 1n << 22n);
  if (blocks & (blocks - 1n)) fail(`hr: blocks must be a power of two, got ${blocks}`);
  if (blocks > 2n * d) fail(`hr: blocks must be at most 2d = ${2n * d}, got ${blocks}`);
  const p = keep(fields, fraction(1n, 2n * blocks), `1/(2B) = 1/${2n * blocks}`);
  const b = BigInt(hadamardBlockSize(Number(d), Number(blocks)));
  return { ratio: div(...hadamardOutputProbabilities(p, blocks, b)) };
}
