/**
 * Privacy facts of local hashing (`ldp/specs/frequency.py` OLH, BLH) and of
 * the prefix oracles built on it (`ldp/specs/heavy_hitters.py` PEM, TreeHist).
 */
import { fraction } from "../fraction.js";
import { LH_PRIME } from "../hashing.js";
import type { JsonObject } from "../json.js";
import { type MechanismPrivacy, domainSize, int, keep, rrRatio } from "../privacyfields.js";
import { fail } from "../text.js";

/** The hash range g of local hashing (and the prefix oracles), in [2, 2^31 − 2]. */
function hashRange(fields: JsonObject): bigint {
  const g = int(fields, "g");
  if (g < 2n || g > LH_PRIME - 1n) fail(`${String(fields.mechanism)}: g must be in [2, ${LH_PRIME - 1n}], got ${g}`);
  return g;
}

/** Randomized response over the g hash buckets: ratio p/q, q = (1 − p)/(g − 1). */
function hashedPrivacy(fields: JsonObject, g: bigint): MechanismPrivacy {
  return { ratio: rrRatio(keep(fields, fraction(1n, g), `1/g = 1/${g}`), g) };
}

/**
 * Local hashing: randomized response over g hash buckets (BLH: g = 2).
 *
 * @privacy olh blh
 */
export function localHashingPrivacy(fields: JsonObject): MechanismPrivacy {
  const mechanism = String(fields.mechanism);
  if (domainSize(fields) < 2n) fail(`${mechanism} needs a domain of at least 2 values`);
  const g = hashRange(fields);
  if (mechanism === "blh" && g !== 2n) fail(`blh has g = 2 by definition, got g=${g}; use olh for other g`);
  return hashedPrivacy(fields, g);
}

/**
 * The prefix oracles: each report is one local-hashing report of a prefix.
 *
 * @privacy pem treehist
 */
export function prefixPrivacy(fields: JsonObject): MechanismPrivacy {
  return hashedPrivacy(fields, hashRange(fields));
}
