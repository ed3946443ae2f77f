package dev.ldp.client.privacy

import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import java.math.BigInteger

/** k·m at most 2^24 counters (`MAX_TABLE_COUNTERS` of `ldp/specs/limits.py`). */
private val MAX_TABLE_COUNTERS: BigInteger = BigInteger.ONE.shiftLeft(24)

/** k·d at most 2^26 hash evaluations (`MAX_SKETCH_HASHES` of `ldp/specs/sketch.py`). */
private val MAX_SKETCH_HASHES: BigInteger = BigInteger.ONE.shiftLeft(26)

/**
 * The range checks of `SketchSpec.__init__` (`ldp/specs/sketch.py`): k in [1, 2^16], m in [2, 2^20]
 * (HCMS: a power of 2), k·m and k·d within the aggregator's limits, salt in [0, 2^32 − k] (every seed
 * salt + j an unsigned 32-bit integer); then the odds p/(1 − p) of a bit kept with p > 1/2.
 */
private fun bitOdds(fields: JsonObject): Fraction {
    val mechanism = PrivacyFields.mechanism(fields)
    val d = PrivacyFields.domainSize(fields)
    if (d < BigInteger.valueOf(2)) throw SpecException("$mechanism needs a domain of at least 2 values, got $d")
    val k = PrivacyFields.intIn(fields, "k", BigInteger.ONE, BigInteger.ONE.shiftLeft(16))
    val m = PrivacyFields.intIn(fields, "m", BigInteger.valueOf(2), BigInteger.ONE.shiftLeft(20))
    if (k * m > MAX_TABLE_COUNTERS) {
        throw SpecException(
            "$mechanism: a sketch of k=$k x m=$m is above the limit of ${PrivacyFields.grouped(MAX_TABLE_COUNTERS)} " +
                "counters (the aggregator keeps int64 counts per cell)",
        )
    }
    if (k * d > MAX_SKETCH_HASHES) {
        throw SpecException(
            "$mechanism: k=$k hash functions over a domain of ${PrivacyFields.grouped(d)} values is above " +
                "the limit of ${PrivacyFields.grouped(MAX_SKETCH_HASHES)} hash evaluations (the decoder hashes every value in every row)",
        )
    }
    PrivacyFields.intIn(fields, "salt", BigInteger.ZERO, BigInteger.ONE.shiftLeft(32) - k)
    if (mechanism == "hcms" && m.and(m - BigInteger.ONE).signum() != 0) {
        throw SpecException("hcms needs m a power of 2 (the Hadamard matrix H_m), got m=$m")
    }
    return PrivacyFields.odds(PrivacyFields.keep(fields, Fraction.of(1, 2), "1/2"))
}

/**
 * CMS flips each bit of a one-hot row: two bits differ, ratio (p/(1 − p))² (the port of
 * `js/src/privacy/sketch.ts`; `ldp/specs/sketch.py` CMS).
 *
 * @privacy cms
 */
public fun cmsPrivacy(fields: JsonObject): MechanismPrivacy {
    val ratio = bitOdds(fields)
    return MechanismPrivacy.fresh(ratio * ratio)
}

/**
 * HCMS sends one Hadamard coefficient, flipped: ratio p/(1 − p) (the port of
 * `js/src/privacy/sketch.ts`; `ldp/specs/sketch.py` HCMS).
 *
 * @privacy hcms
 */
public fun hcmsPrivacy(fields: JsonObject): MechanismPrivacy = MechanismPrivacy.fresh(bitOdds(fields))
