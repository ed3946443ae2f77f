package dev.ldp.client.privacy

import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import java.math.BigInteger

/**
 * Subset selection reports ω of d values, the true one with p > ω/d: ratio p(d − ω)/((1 − p)ω) (the port
 * of `js/src/privacy/subset.ts`; `ldp/specs/subset.py`).
 *
 * @privacy ss
 */
public fun subsetPrivacy(fields: JsonObject): MechanismPrivacy {
    val d = PrivacyFields.domainSize(fields)
    if (d < BigInteger.valueOf(2)) throw SpecException("ss needs a domain of at least 2 values, got $d")
    val omega = PrivacyFields.int(fields, "omega")
    if (omega < BigInteger.ONE || omega > d - BigInteger.ONE) throw SpecException("omega must be in [1, ${d - BigInteger.ONE}], got $omega")
    val p = PrivacyFields.keep(fields, Fraction.of(omega, d), "omega/d = $omega/$d")
    return MechanismPrivacy.fresh(p * Fraction.of(d - omega) / ((Fraction.ONE - p) * Fraction.of(omega)))
}
