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
    if (PrivacyFields.domainSize(fields) < BigInteger.valueOf(2)) throw SpecException("$mechanism needs a domain of at least 2 values")
    val p = PrivacyFields.prob(fields, "p")
    val q = PrivacyFields.prob(fields, "q")
    for ((name, v) in listOf("p" to p, "q" to q)) {
        if (v.num.signum() <= 0 || v >= Fraction.ONE) throw SpecException("$mechanism: $name must be in (0, 1), got $v")
    }
    if (p <= q) throw SpecException("$mechanism: p must exceed q, got p=$p, q=$q")
    return MechanismPrivacy.fresh(p * (Fraction.ONE - q) / ((Fraction.ONE - p) * q))
}
