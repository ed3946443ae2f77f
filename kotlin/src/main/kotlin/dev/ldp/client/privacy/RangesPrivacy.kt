package dev.ldp.client.privacy

import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import java.math.BigInteger

/**
 * range-hierarchy (the port of `js/src/privacy/ranges.ts`; `ldp/specs/ranges.py`): OUE of the user's
 * node at the sampled level (the level is independent of the value); two values differ in two bits of
 * that level, ratio p(1 − q)/((1 − p)q).
 *
 * @privacy range-hierarchy
 */
public fun rangeHierarchyPrivacy(fields: JsonObject): MechanismPrivacy {
    if (PrivacyFields.domainSize(fields) < BigInteger.valueOf(2)) throw SpecException("range-hierarchy needs a domain of at least 2 values")
    val branching = PrivacyFields.int(fields, "branching")
    if (branching < BigInteger.valueOf(2) || branching > BigInteger.valueOf(1024)) {
        throw SpecException("range-hierarchy: branching must be in [2, 1024], got $branching")
    }
    val p = PrivacyFields.prob(fields, "p")
    val q = PrivacyFields.prob(fields, "q")
    for ((name, v) in listOf("p" to p, "q" to q)) {
        if (v.num.signum() <= 0 || v >= Fraction.ONE) throw SpecException("range-hierarchy: $name must be in (0, 1), got $v")
    }
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
    if (PrivacyFields.domainSize(fields) < BigInteger.valueOf(2)) throw SpecException("range-haar needs a domain of at least 2 values")
    return MechanismPrivacy.fresh(PrivacyFields.odds(PrivacyFields.keep(fields, Fraction.of(1L, 2L), "1/2")))
}
