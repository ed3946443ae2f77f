/**
 * Privacy facts of the count-mean sketches (`ldp/specs/sketch.py` CMS, HCMS).
 */
import { fraction, mul } from "../fraction.js";
import type { JsonObject } from "../json.js";
import { type MechanismPrivacy, domainSize, grouped, intIn, keep, odds } from "../privacyfields.js";
import { fail } from "../text.js";

/** Largest k·m: the aggregator keeps one int64 count per cell (`MAX_TABLE_COUNTERS`). */
const MAX_TABLE_COUNTERS = 1n << 24n;
/** Largest k·d: the decoder hashes every domain value in every row (`MAX_SKETCH_HASHES`). */
const MAX_SKETCH_HASHES = 1n << 26n;
/** Hash seeds are unsigned 32-bit: salt + j for every row j. */
const SEED_SPACE = 1n << 32n;

/**
 * The sketch's layout checked as `SketchSpec.__init__` checks it: k ∈ [1, 2^16],
 * m ∈ [2, 2^20], k·m ≤ 2^24, k·d ≤ 2^26, salt ∈ [0, 2^32 − k] (HCMS: m a
 * power of 2); then each bit kept with p > 1/2: the odds p/(1 − p) per
 * differing bit.
 */
function bitOdds(fields: JsonObject): ReturnType<typeof odds> {
  const mechanism = String(fields.mechanism);
  const d = domainSize(fields);
  if (d < 2n) fail(`${mechanism} needs a domain of at least 2 values, got ${d}`);
  const k = intIn(fields, "k", 1n, 1n << 16n);
  const m = intIn(fields, "m", 2n, 1n << 20n);
  if (k * m > MAX_TABLE_COUNTERS) {
    fail(
      `${mechanism}: a sketch of k=${k} x m=${m} is above the limit of ${grouped(MAX_TABLE_COUNTERS)} ` +
        "counters (the aggregator keeps int64 counts per cell)",
    );
  }
  if (k * d > MAX_SKETCH_HASHES) {
    fail(
      `${mechanism}: k=${k} hash functions over a domain of ${grouped(d)} values is above ` +
        `the limit of ${grouped(MAX_SKETCH_HASHES)} hash evaluations (the decoder hashes every value in every row)`,
    );
  }
  intIn(fields, "salt", 0n, SEED_SPACE - k);
  if (mechanism === "hcms" && (m & (m - 1n)) !== 0n) {
    fail(`hcms needs m a power of 2 (the Hadamard matrix H_m), got m=${m}`);
  }
  return odds(keep(fields, fraction(1n, 2n), "1/2"));
}

/**
 * CMS flips each bit of a one-hot row: two bits differ, ratio (p/(1 − p))².
 *
 * @privacy cms
 */
export function cmsPrivacy(fields: JsonObject): MechanismPrivacy {
  const ratio = bitOdds(fields);
  return { ratio: mul(ratio, ratio) };
}

/**
 * HCMS sends one Hadamard coefficient, flipped: ratio p/(1 − p).
 *
 * @privacy hcms
 */
export function hcmsPrivacy(fields: JsonObject): MechanismPrivacy {
  return { ratio: bitOdds(fields) };
}
