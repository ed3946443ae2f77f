package dev.ldp.client.privacy

import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import java.math.BigInteger

/**
 * dBitFlip (the port of `js/src/privacy/dbitflip.ts`; `ldp/specs/dbitflip.py`): each of the d sampled
 * bits is memoized as 1 with p (its bucket holds the value) or q = 1 − p, and sent flipped with γ, so it
 * is 1 with p′ = γ + (1 − 2γ)p or q′ = 1 − p′. Two values change m = min(d, 2) sampled bits: one
 * report's ratio is (p′/q′)^m, the memoized bits' (p/q)^m; a client has min(d + 1, b) memo keys (the
 * patterns of which sampled bucket holds the value); r reports of one key are (r·ε₁)-DP.
 *
 * @privacy dbitflip
 */
public fun dbitflipPrivacy(fields: JsonObject): MechanismPrivacy {
    val b = PrivacyFields.domainSize(fields)
    if (b < BigInteger.valueOf(2)) throw SpecException("dbitflip needs a domain of at least 2 values, got $b")
    val d = PrivacyFields.int(fields, "d")
    if (d < BigInteger.ONE || d > b) throw SpecException("d must be in [1, $b], got $d")
    val p = PrivacyFields.prob(fields, "p")
    val gamma = PrivacyFields.prob(fields, "gamma")
    val half = Fraction.of(1L, 2L)
    if (p <= half || p >= Fraction.ONE) throw SpecException("dbitflip: p must exceed 1/2, got $p")
    if (gamma.num.signum() < 0 || gamma >= half) throw SpecException("dbitflip: gamma must be in [0, 1/2), got $gamma")
    val q = Fraction.ONE - p
    val sent = gamma + (Fraction.ONE - Fraction.of(2L, 1L) * gamma) * p
    val m = if (d < BigInteger.valueOf(2)) d.toInt() else 2
    val ratio = pow(sent / (Fraction.ONE - sent), m)
    val permanentRatio = pow(p / q, m)
    val memoValues = if (d + BigInteger.ONE < b) d + BigInteger.ONE else b
    return MechanismPrivacy.memoized(ratio, permanentRatio, memoValues).copy(memoLinear = true)
}

private fun pow(a: Fraction, k: Int): Fraction = Fraction.of(a.num.pow(k), a.den.pow(k))
