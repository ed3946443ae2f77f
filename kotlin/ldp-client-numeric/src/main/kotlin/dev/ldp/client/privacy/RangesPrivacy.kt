package dev.ldp.client.privacy

import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import java.math.BigInteger

/** Largest padded leaf count (`MAX_RANGE_LEAVES`: the aggregator keeps dense D × D matrices). */
private val MAX_RANGE_LEAVES: BigInteger = BigInteger.ONE.shiftLeft(12)

/** The padded leaves at most `MAX_RANGE_LEAVES` (`RangeSpec._check_leaves`). */
private fun checkLeaves(mechanism: String, leaves: BigInteger) {
    if (leaves > MAX_RANGE_LEAVES) {
        throw SpecException(
            "$mechanism: ${PrivacyFields.grouped(leaves)} padded leaves exceed ${PrivacyFields.grouped(MAX_RANGE_LEAVES)} " +
                "(the aggregator keeps dense leaf-by-leaf matrices for exact variances)",
        )
    }
}

/**
 * range-hierarchy (the port of `js/src/privacy/ranges.ts`; `ldp/specs/ranges.py`): OUE of the user's
 * node at the sampled level (the level is independent of the value); two values differ in two bits of
 * that level, ratio p(1 − q)/((1 − p)q).
 *
 * @privacy range-hierarchy
 */
public fun rangeHierarchyPrivacy(fields: JsonObject): MechanismPrivacy {
    val d = PrivacyFields.domainSize(fields)
    if (d < BigInteger.valueOf(2)) throw SpecException("range-hierarchy needs a domain of at least 2 values, got $d")
    val branching = PrivacyFields.intIn(fields, "branching", 2L, 1024L)
    var leaves = branching // B^h ≥ d
    while (leaves < d) leaves *= branching
    checkLeaves("range-hierarchy", leaves)
    val p = PrivacyFields.openProb(fields, "p")
    val q = PrivacyFields.openProb(fields, "q")
    if (p <= q) throw SpecException("range-hierarchy: p must exceed q, got p=$p, q=$q")
    return MechanismPrivacy.fresh(p * (Fraction.ONE - q) / ((Fraction.ONE - p) * q))
}

/**
 * range-haar: binary randomized response of the Hadamard-transformed Haar sign (the level and index are
 * independent of the value), ratio p/(1 − p).
 *
 * @privacy range-haar
 */
public fun rangeHaarPrivacy(fields: JsonObject): MechanismPrivacy {
    val d = PrivacyFields.domainSize(fields)
    if (d < BigInteger.valueOf(2)) throw SpecException("range-haar needs a domain of at least 2 values, got $d")
    checkLeaves("range-haar", BigInteger.ONE.shiftLeft(maxOf((d - BigInteger.ONE).bitLength(), 1))) // 2^⌈log2 d⌉
    return MechanismPrivacy.fresh(PrivacyFields.odds(PrivacyFields.keep(fields, Fraction.of(1L, 2L), "1/2")))
}
