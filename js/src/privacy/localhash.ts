/**
 * Privacy facts of local hashing (`ldp/specs/frequency.py` OLH, BLH) and of
 * the prefix oracles built on it (`ldp/specs/heavy_hitters.py` PEM, TreeHist).
 */
import { floatText } from "../float.js";
import { fraction } from "../fraction.js";
import { LH_PRIME } from "../hashing.js";
import type { JsonObject } from "../json.js";
import { type MechanismPrivacy, domainSize, grouped, intIn, keep, rrRatio } from "../privacyfields.js";
import { fail } from "../text.js";

/** The hash range g of local hashing (and the prefix oracles), in [2, 2^31 − 2]. */
function hashRange(fields: JsonObject): bigint {
  return intIn(fields, "g", 2n, LH_PRIME - 1n);
}

/** Longest value, in bytes of UTF-8 (`PEM_MAX_LENGTH`). */
const MAX_LENGTH = 256n;
/** Largest top_k (`PEM_MAX_TOP_K`). */
const MAX_TOP_K = 4096n;
/** Largest PEM extension step η (`PEM_MAX_ETA`). */
const MAX_ETA = 12n;
/** Most candidates a PEM round evaluates (`PEM_MAX_CANDIDATES`). */
const MAX_CANDIDATES = 1n << 20n;
/** Largest TreeHist width (`TREEHIST_MAX_WIDTH`). */
const TREEHIST_MAX_WIDTH = 1n << 16n;

/** max_length and top_k, as `HeavyHitterSpec._set_common` checks them: top_k below 2^m, m = 8·max_length. */
function common(fields: JsonObject): bigint {
  const mechanism = String(fields.mechanism);
  const length = intIn(fields, "max_length", 1n, MAX_LENGTH);
  const k = intIn(fields, "top_k", 1n, MAX_TOP_K);
  if (k >= 1n << (8n * length)) {
    fail(`${mechanism}: top_k=${k} must be below 2^m = 2^${8n * length} (m = 8·max_length)`);
  }
  return k;
}

/** PEM's eta and width, as `PEM.__init__` checks them: at most 2^20 candidates per round. */
function pemRounds(fields: JsonObject, k: bigint): void {
  const step = intIn(fields, "eta", 1n, MAX_ETA);
  const limit = grouped(MAX_CANDIDATES);
  const why = "(the aggregator evaluates each against every report of its round)";
  if (k << step > MAX_CANDIDATES) {
    fail(`pem: top_k * 2^eta = ${grouped(k << step)} candidates per round is above the limit of ${limit} ${why}`);
  }
  const kept = intIn(fields, "width", k, MAX_CANDIDATES);
  if (kept << step > MAX_CANDIDATES) {
    fail(`pem: width * 2^eta = ${grouped(kept << step)} candidates per round is above the limit of ${limit} ${why}`);
  }
}

/** TreeHist's width and beta, as `TreeHist.__init__` checks them. */
function treehistRounds(fields: JsonObject): void {
  intIn(fields, "width", 1n, TREEHIST_MAX_WIDTH);
  const beta = fields.beta;
  if (typeof beta !== "number" || !(beta > 0 && beta < 1)) {
    fail(`treehist: beta must be a number in (0, 1), got ${typeof beta === "number" ? floatText(beta) : String(beta)}`);
  }
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
  const d = domainSize(fields);
  if (d < 2n) fail(`${mechanism} needs a domain of at least 2 values, got ${d}`);
  if (mechanism === "blh" && fields.g !== 2n) fail(`blh has g = 2 by definition, got g=${String(fields.g)}; use olh for other g`);
  const g = hashRange(fields);
  return hashedPrivacy(fields, g);
}

/**
 * The prefix oracles: each report is one local-hashing report of a prefix.
 *
 * @privacy pem treehist
 */
export function prefixPrivacy(fields: JsonObject): MechanismPrivacy {
  const k = common(fields);
  if (fields.mechanism === "pem") pemRounds(fields, k);
  else treehistRounds(fields);
  return hashedPrivacy(fields, hashRange(fields));
}

/** PEM's default width factor (`PEM_DEFAULT_WIDTH_FACTOR`). */
const PEM_DEFAULT_WIDTH_FACTOR = 4n;

/**
 * A prefix oracle's spec without a width takes the default width, as the
 * Python constructors do (it follows from top_k, and PEM's eta, not from ε):
 * PEM max(top_k, min(4·top_k, 2^20 >> eta)), TreeHist 4·top_k.
 *
 * @canonical pem treehist
 */
export function prefixFields(out: JsonObject): void {
  if (out.width !== null) return;
  const k = typeof out.top_k === "bigint" ? out.top_k : fail(`${String(out.mechanism)} spec has no integer top_k`);
  if (out.mechanism === "treehist") {
    out.width = 4n * k;
    return;
  }
  const eta = typeof out.eta === "bigint" ? out.eta : fail("pem spec has no integer eta");
  // eta is checked with the other fields: here only a shift that stays in range
  const room = eta >= 0n && eta <= MAX_ETA ? MAX_CANDIDATES >> eta : MAX_CANDIDATES;
  const factor = PEM_DEFAULT_WIDTH_FACTOR * k;
  const width = factor < room ? factor : room;
  out.width = k > width ? k : width;
}
