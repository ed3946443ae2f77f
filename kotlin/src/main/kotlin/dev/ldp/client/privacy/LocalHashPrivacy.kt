package dev.ldp.client.privacy

import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import dev.ldp.client.hashing.LH_PRIME
import java.math.BigInteger

/** The hash range g of local hashing (and of the prefix oracles), in [2, 2^31 − 2]. */
private fun hashRange(fields: JsonObject): BigInteger {
    val g = PrivacyFields.int(fields, "g")
    val top = BigInteger.valueOf(LH_PRIME - 1)
    if (g < BigInteger.valueOf(2) || g > top) throw SpecException("${PrivacyFields.mechanism(fields)}: g must be in [2, $top], got $g")
    return g
}

/** Randomized response over the g hash buckets: ratio p/q, q = (1 − p)/(g − 1). */
private fun hashedPrivacy(fields: JsonObject, g: BigInteger): MechanismPrivacy =
    MechanismPrivacy.fresh(PrivacyFields.rrRatio(PrivacyFields.keep(fields, Fraction.of(BigInteger.ONE, g), "1/g = 1/$g"), g))

/**
 * Local hashing: randomized response over g hash buckets (BLH: g = 2), ratio p/q with
 * q = (1 − p)/(g − 1) (the port of `js/src/privacy/localhash.ts`; `ldp/specs/frequency.py` OLH, BLH).
 *
 * @privacy olh blh
 */
public fun localHashingPrivacy(fields: JsonObject): MechanismPrivacy {
    val mechanism = PrivacyFields.mechanism(fields)
    if (PrivacyFields.domainSize(fields) < BigInteger.valueOf(2)) throw SpecException("$mechanism needs a domain of at least 2 values")
    val g = hashRange(fields)
    if (mechanism == "blh" && g != BigInteger.valueOf(2)) throw SpecException("blh has g = 2 by definition, got g=$g; use olh for other g")
    return hashedPrivacy(fields, g)
}
