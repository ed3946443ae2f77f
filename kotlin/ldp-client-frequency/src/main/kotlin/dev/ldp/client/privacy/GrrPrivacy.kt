package dev.ldp.client.privacy

import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import java.math.BigInteger

/**
 * GRR over d values keeps the value with p > 1/d: ratio p/q, q = (1 − p)/(d − 1) (the port of
 * `js/src/privacy/grr.ts`; `ldp/specs/frequency.py` GRR, BinaryRR).
 *
 * @privacy grr binary-rr
 */
public fun grrPrivacy(fields: JsonObject): MechanismPrivacy {
    val mechanism = PrivacyFields.mechanism(fields)
    val d = PrivacyFields.domainSize(fields)
    if (mechanism == "binary-rr" && d != BigInteger.valueOf(2)) throw SpecException("binary-rr needs a domain of exactly 2 values, got $d")
    if (d < BigInteger.valueOf(2)) throw SpecException("$mechanism needs a domain of at least 2 values, got $d")
    val p = PrivacyFields.keep(fields, Fraction.of(BigInteger.ONE, d), "1/d = 1/$d")
    return MechanismPrivacy.fresh(PrivacyFields.rrRatio(p, d))
}
