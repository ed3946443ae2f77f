/**
 * Privacy facts of RAPPOR (`ldp/specs/rappor.py`): memoized, with ε₁ from
 * one instantaneous report and ε∞ from the permanent randomized response.
 */
import { type Fraction, ONE, add, compare, div, divInt, fraction, mul, sub } from "../fraction.js";
import type { Json, JsonObject } from "../json.js";
import { type MechanismPrivacy, checkDomainLimit, domainSize, grouped, int, intIn, prob, text } from "../privacyfields.js";
import { fail } from "../text.js";

/** Largest num_cohorts × num_bits (`MAX_TABLE_COUNTERS`). */
const MAX_TABLE_COUNTERS = 1n << 24n;
/** Largest basic RAPPOR domain (`MAX_DOMAIN_SIZE`), and why. */
const MAX_DOMAIN_SIZE = 1n << 20n;
const DOMAIN_WHY = "the aggregator keeps one int64 count per value, bit and cohort, and the spec a value index";

function pow(a: Fraction, k: bigint): Fraction {
  return fraction(a.num ** k, a.den ** k);
}

/**
 * RAPPOR: per Bloom bit, P[S=1 | B=1] = q* = ½f(p+q) + (1−f)q and
 * P[S=1 | B=0] = p* = ½f(p+q) + (1−f)p. One report's ratio is the larger bit
 * ratio (boolean) or (q*·(1−p*) / (p*·(1−q*)))^h over the 2h bits two values'
 * filters differ in; the permanent response's is ((1 − f/2)/(f/2))^(2h)
 * (one bit for boolean), unbounded when f = 0. The memo holds one key per
 * domain value (2 for boolean), unboundedly many for a Bloom filter.
 *
 * @privacy rappor
 */
export function rapporPrivacy(fields: JsonObject): MechanismPrivacy {
  const [f, p, q] = [prob(fields, "f"), prob(fields, "p"), prob(fields, "q")];
  if (compare(f, ONE) >= 0) fail(`f must be in [0, 1), got ${text(f)}`);
  if (compare(p, q) >= 0) fail(`rappor needs p < q (IRR), got p=${text(p)}, q=${text(q)}`);
  const cohorts = intIn(fields, "num_cohorts", 1n, (1n << 32n) - 1n);
  const counters = cohorts * int(fields, "num_bits");
  if (counters > MAX_TABLE_COUNTERS) {
    fail(
      `rappor: num_cohorts x num_bits = ${grouped(cohorts)} x ${grouped(int(fields, "num_bits"))} = ${grouped(counters)} ` +
        `counters is above the limit of ${grouped(MAX_TABLE_COUNTERS)} (the aggregator keeps one int64 count per ` +
        "cohort and bit: 128 MiB at the limit)",
    );
  }
  const encoding = fields.encoding;
  const boolean = encoding === "boolean";
  const h = encoding === "bloom" ? int(fields, "num_hashes") : 1n;
  const halfFpq = divInt(mul(f, add(p, q)), 2n);
  const one = add(halfFpq, mul(sub(ONE, f), q)); // q*: P[S=1 | B=1]
  const zero = add(halfFpq, mul(sub(ONE, f), p)); // p*: P[S=1 | B=0]
  if (zero.num === 0n || compare(one, ONE) === 0) {
    fail(
      "rappor parameters give no single-report privacy (a reported bit can be certain); " +
        `got f=${text(f)}, p=${text(p)}, q=${text(q)}`,
    );
  }
  const up = div(one, zero); // a bit the input sets
  const down = div(sub(ONE, zero), sub(ONE, one)); // a bit the other input sets
  const ratio = boolean ? (compare(up, down) >= 0 ? up : down) : pow(mul(up, down), h);
  const halfF = divInt(f, 2n);
  const permanentRatio = f.num === 0n ? null : pow(div(sub(ONE, halfF), halfF), boolean ? 1n : 2n * h);
  const memoValues = boolean ? 2n : encoding === "basic" ? domainSize(fields) : null;
  // r reports of one value are (r·ε₁)-DP: per bit the log likelihood ratio is odd and concave beyond 0 in the
  // IRR log ratio, hence subadditive (docs/accounting.md#memoized-streams)
  return { ratio, permanentRatio, memoValues, memoLinear: true };
}

/**
 * RAPPOR's derived fields, completed in the canonical fields before the
 * claim is checked: basic and boolean fix num_bits, num_hashes and hash; a
 * Bloom filter needs its sizes (Python's `Rappor.__post_init__`).
 *
 * @canonical rappor
 */
export function rapporFields(out: JsonObject): void {
  const encoding = out.encoding;
  if (encoding === "bloom") {
    if (out.domain !== null) fail("rappor with encoding='bloom' takes no domain (decode with a candidate list)");
    if (out.num_bits === null || out.num_hashes === null) fail("rappor needs num_bits and num_hashes");
    if (out.hash !== "mmh3" && out.hash !== "md5") fail(`rappor hash must be one of ('mmh3', 'md5'), got '${String(out.hash)}'`);
    const [maxBits, maxHashes] = out.hash === "md5" ? [256n, 16n] : [1n << 20n, 64n];
    const k = intIn(out, "num_bits", 1n, maxBits);
    const h = intIn(out, "num_hashes", 1n, maxHashes);
    if (h > k) fail(`rappor num_hashes (${h}) cannot exceed num_bits (${k})`);
    return;
  }
  if (encoding !== "basic" && encoding !== "boolean") fail(`rappor encoding must be one of ('bloom', 'basic', 'boolean'), got '${String(encoding)}'`);
  const bits = encoding === "basic" ? BigInt((out.domain as Json[] | null)?.length ?? fail("rappor with encoding='basic' needs a domain")) : 1n;
  if (encoding === "basic") checkDomainLimit(out, MAX_DOMAIN_SIZE, DOMAIN_WHY, "basic rappor");
  if (encoding === "basic" && bits < 2n) fail("basic rappor needs a domain of at least 2 values");
  if (encoding === "boolean" && out.domain !== null) fail("boolean rappor takes no domain");
  if (encoding === "basic") {
    if (out.num_bits !== null && out.num_bits !== bits) {
      fail(`basic rappor has num_bits = domain size = ${bits}, got ${String(out.num_bits)}`);
    }
    if (out.num_hashes !== null && out.num_hashes !== 1n) fail(`basic rappor has num_hashes = 1, got ${String(out.num_hashes)}`);
  } else if ((out.num_bits !== null && out.num_bits !== 1n) || (out.num_hashes !== null && out.num_hashes !== 1n)) {
    fail("boolean rappor has num_bits = num_hashes = 1");
  }
  Object.assign(out, { num_bits: bits, num_hashes: 1n, hash: "none" });
}
