package dev.ldp.client.privacy

import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import java.math.BigInteger

private fun pow(a: Fraction, k: BigInteger): Fraction = Fraction.of(a.num.pow(k.intValueExact()), a.den.pow(k.intValueExact()))

/**
 * RAPPOR (the port of `js/src/privacy/rappor.ts`; `ldp/specs/rappor.py`): per Bloom bit,
 * P[S=1 | B=1] = q* = ½f(p+q) + (1−f)q and P[S=1 | B=0] = p* = ½f(p+q) + (1−f)p. One report's ratio
 * is the larger bit ratio (boolean) or (q*·(1−p*) / (p*·(1−q*)))^h over the 2h bits two values'
 * filters differ in; the permanent response's is ((1 − f/2)/(f/2))^(2h) (one bit for boolean),
 * unbounded when f = 0. The memo holds one key per domain value (2 for boolean), unboundedly many for
 * a Bloom filter. r reports of one value are (r·ε₁)-DP (`memoLinear`: per bit the log-likelihood
 * ratio is odd and concave beyond 0 in the IRR log ratio, hence subadditive).
 *
 * @privacy rappor
 */
public fun rapporPrivacy(fields: JsonObject): MechanismPrivacy {
    val f = PrivacyFields.prob(fields, "f")
    val p = PrivacyFields.prob(fields, "p")
    val q = PrivacyFields.prob(fields, "q")
    if (f >= Fraction.ONE) throw SpecException("f must be in [0, 1), got $f")
    if (p >= q) throw SpecException("rappor needs p < q (IRR), got p=$p, q=$q")
    val cohorts = PrivacyFields.intIn(fields, "num_cohorts", BigInteger.ONE, BigInteger.ONE.shiftLeft(32) - BigInteger.ONE)
    val bits = PrivacyFields.int(fields, "num_bits")
    val counters = cohorts * bits
    if (counters > MAX_TABLE_COUNTERS) {
        throw SpecException(
            "rappor: num_cohorts x num_bits = ${PrivacyFields.grouped(cohorts)} x ${PrivacyFields.grouped(bits)} = " +
                "${PrivacyFields.grouped(counters)} counters is above the limit of ${PrivacyFields.grouped(MAX_TABLE_COUNTERS)} " +
                "(the aggregator keeps one int64 count per cohort and bit: 128 MiB at the limit)",
        )
    }
    val encoding = fields["encoding"]
    val boolean = encoding == "boolean"
    val h = if (encoding == "bloom") PrivacyFields.int(fields, "num_hashes") else BigInteger.ONE
    val two = BigInteger.valueOf(2)
    val halfFpq = (f * (p + q)).divInt(two)
    val one = halfFpq + (Fraction.ONE - f) * q // q*: P[S=1 | B=1]
    val zero = halfFpq + (Fraction.ONE - f) * p // p*: P[S=1 | B=0]
    if (zero.num.signum() == 0 || one.compareTo(Fraction.ONE) == 0) {
        throw SpecException(
            "rappor parameters give no single-report privacy (a reported bit can be certain); got f=$f, p=$p, q=$q",
        )
    }
    val up = one / zero // a bit the input sets
    val down = (Fraction.ONE - zero) / (Fraction.ONE - one) // a bit the other input sets
    val ratio = if (boolean) maxOf(up, down) else pow(up * down, h)
    val halfF = f.divInt(two)
    val permanentRatio = if (f.num.signum() == 0) null else pow((Fraction.ONE - halfF) / halfF, if (boolean) BigInteger.ONE else two * h)
    val memoValues = when (encoding) {
        "boolean" -> two
        "basic" -> PrivacyFields.domainSize(fields)
        else -> null
    }
    return MechanismPrivacy.memoized(ratio, permanentRatio, memoValues).copy(memoLinear = true)
}

/**
 * RAPPOR's derived fields, completed in the canonical fields before the claim is checked: basic and
 * boolean fix num_bits, num_hashes and hash; a Bloom filter needs its sizes (Python's
 * `Rappor.__post_init__`).
 *
 * @canonical rappor
 */
public fun rapporFields(out: MutableMap<String, Any?>) {
    val encoding = out["encoding"]
    if (encoding == "bloom") {
        if (out["domain"] != null) throw SpecException("rappor with encoding='bloom' takes no domain (decode with a candidate list)")
        if (out["num_bits"] == null || out["num_hashes"] == null) throw SpecException("rappor needs num_bits and num_hashes")
        val hash = out["hash"]
        if (hash != "mmh3" && hash != "md5") throw SpecException("rappor hash must be one of ('mmh3', 'md5'), got '$hash'")
        val (maxBits, maxHashes) = if (hash == "md5") 256L to 16L else (1L shl 20) to 64L
        val k = PrivacyFields.intIn(out, "num_bits", 1L, maxBits)
        val h = PrivacyFields.intIn(out, "num_hashes", 1L, maxHashes)
        if (h > k) throw SpecException("rappor num_hashes ($h) cannot exceed num_bits ($k)")
        return
    }
    if (encoding != "basic" && encoding != "boolean") {
        throw SpecException("rappor encoding must be one of ('bloom', 'basic', 'boolean'), got '$encoding'")
    }
    val bits = if (encoding == "basic") {
        BigInteger.valueOf(((out["domain"] as List<*>?) ?: throw SpecException("rappor with encoding='basic' needs a domain")).size.toLong())
    } else {
        BigInteger.ONE
    }
    if (encoding == "basic" && bits > MAX_DOMAIN_SIZE) {
        throw SpecException(
            "basic rappor: a domain of ${PrivacyFields.grouped(bits)} values is above the limit of " +
                "${PrivacyFields.grouped(MAX_DOMAIN_SIZE)} ($DOMAIN_WHY)",
        )
    }
    if (encoding == "basic" && bits < BigInteger.valueOf(2)) throw SpecException("basic rappor needs a domain of at least 2 values")
    if (encoding == "boolean" && out["domain"] != null) throw SpecException("boolean rappor takes no domain")
    if (encoding == "basic") {
        if (out["num_bits"] != null && out["num_bits"] != bits) {
            throw SpecException("basic rappor has num_bits = domain size = $bits, got ${out["num_bits"]}")
        }
        if (out["num_hashes"] != null && out["num_hashes"] != BigInteger.ONE) {
            throw SpecException("basic rappor has num_hashes = 1, got ${out["num_hashes"]}")
        }
    } else if ((out["num_bits"] != null && out["num_bits"] != BigInteger.ONE) || (out["num_hashes"] != null && out["num_hashes"] != BigInteger.ONE)) {
        throw SpecException("boolean rappor has num_bits = num_hashes = 1")
    }
    out["num_bits"] = bits
    out["num_hashes"] = BigInteger.ONE
    out["hash"] = "none"
}

/** Largest num_cohorts × num_bits (`MAX_TABLE_COUNTERS`). */
private val MAX_TABLE_COUNTERS: BigInteger = BigInteger.ONE.shiftLeft(24)

/** Largest basic RAPPOR domain (`MAX_DOMAIN_SIZE`), and why. */
private val MAX_DOMAIN_SIZE: BigInteger = BigInteger.ONE.shiftLeft(20)
private const val DOMAIN_WHY = "the aggregator keeps one int64 count per value, bit and cohort, and the spec a value index"
