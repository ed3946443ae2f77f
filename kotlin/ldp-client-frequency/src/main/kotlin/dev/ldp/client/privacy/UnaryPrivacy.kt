package dev.ldp.client.privacy

import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import java.math.BigInteger

/**
 * Unary encoding keeps a 1 with p and flips a 0 with q < p: two bits differ, ratio
 * p(1 − q)/((1 − p)q) (the port of `js/src/privacy/unary.ts`; `ldp/specs/frequency.py` SUE, OUE).
 *
 * @privacy sue oue
 */
public fun unaryPrivacy(fields: JsonObject): MechanismPrivacy {
    val mechanism = PrivacyFields.mechanism(fields)
    val d = PrivacyFields.domainSize(fields)
    if (d < BigInteger.valueOf(2)) throw SpecException("$mechanism needs a domain of at least 2 values, got $d")
    val p = PrivacyFields.openProb(fields, "p")
    val q = PrivacyFields.openProb(fields, "q")
    if (p <= q) throw SpecException("$mechanism: p must exceed q, got p=$p, q=$q")
    return MechanismPrivacy.fresh(p * (Fraction.ONE - q) / ((Fraction.ONE - p) * q))
}
