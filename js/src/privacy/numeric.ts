/**
 * Privacy facts of the numeric mechanisms (`ldp/specs/numeric.py`).
 */
import { floatText } from "../float.js";
import { fraction } from "../fraction.js";
import type { JsonObject } from "../json.js";
import { fractionToNumber } from "../exact.js";
import { type MechanismPrivacy, checkValueScale, intIn, keep, odds } from "../privacyfields.js";
import { fail } from "../text.js";

/** Largest input grid (`MAX_GRID`: tables are (grid + 1) × ~2·grid integers). */
const MAX_GRID = 1024n;
/** Smallest positive normal double (`SMALLEST_NORMAL`). */
const SMALLEST_NORMAL = 2 ** -1022;

/**
 * The value range and the grid, as `NumericSpec._init_range`, `_init_grid` and
 * `_check_resolution` check them: low < high, high − low finite, grid in
 * [1, 1024], (high − low)/grid a normal double. (The table-size and
 * value-scale limits need the server's tables: the server checks them.)
 */
function checkRange(fields: JsonObject, grid: bigint): void {
  const mechanism = String(fields.mechanism);
  const [low, high] = [fields.low as number, fields.high as number];
  if (!(low < high)) fail(`${mechanism}: need low < high, got low=${floatText(low)}, high=${floatText(high)}`);
  const width = high - low;
  if (!Number.isFinite(width)) {
    fail(`${mechanism}: the range [${floatText(low)}, ${floatText(high)}] is too wide: high - low overflows a double`);
  }
  const resolution = width / Number(grid);
  if (resolution < SMALLEST_NORMAL) {
    fail(
      `${mechanism}: the range [${floatText(low)}, ${floatText(high)}] is too narrow: its resolution (high - low)/${grid} = ` +
        `${floatText(resolution)} is below the smallest normal double ${floatText(SMALLEST_NORMAL)}`,
    );
  }
}

/**
 * Duchi's mechanism and stochastic rounding send one of two values, the
 * likelier with p > 1/2: ratio p/(1 − p).
 *
 * @privacy duchi stochastic-rounding
 */
export function binaryNumericPrivacy(fields: JsonObject): MechanismPrivacy {
  checkRange(fields, 1n);
  const p = keep(fields, fraction(1n, 2n), "1/2");
  // one report's unbiased native estimate is ±C′, C′ = 1/(2p − 1) (Duchi's outputs; stochastic rounding's C′(2b − 1))
  const c = fractionToNumber(p.den, 2n * p.num - p.den);
  checkValueScale(String(fields.mechanism), fields.low as number, fields.high as number, fields.epsilon as number, c);
  return { ratio: odds(p) };
}

/**
 * The grid mechanisms: their probabilities are a table the server computes,
 * not spec fields, so their ratio is checked when an encoder is given the
 * table (`checkTableClaim` in numeric.ts); here only the range, the grid,
 * Gaussian's δ and the stated ε are checked.
 *
 * @privacy piecewise hybrid laplace gaussian
 */
export function gridPrivacy(fields: JsonObject): MechanismPrivacy {
  const mechanism = String(fields.mechanism);
  const [low, high] = [fields.low as number, fields.high as number];
  if (!(low < high)) fail(`${mechanism}: need low < high, got low=${floatText(low)}, high=${floatText(high)}`);
  checkRange(fields, intIn(fields, "grid", 1n, MAX_GRID));
  if (mechanism === "gaussian") {
    const delta = fields.delta as number;
    if (!(delta > 0 && delta < 1)) fail(`gaussian: delta must be in (0, 1), got ${floatText(delta)}`);
  }
  return { ratio: null };
}
