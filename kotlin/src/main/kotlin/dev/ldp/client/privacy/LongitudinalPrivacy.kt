package dev.ldp.client.privacy

import dev.ldp.client.Exact
import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import java.math.BigInteger
import java.util.concurrent.ConcurrentHashMap

private val HALF = Fraction.of(1, 2)

/** ε′ by its inputs: [ChainMath.memoReportEpsilon] runs up to 4,000 rounds, once per distinct spec. */
private val memoReportCache = ConcurrentHashMap<List<Any>, Double>()

/** Independent bits over a one-hot vector: one(1 − zero)/((1 − one)·zero). */
private fun ueRatio(one: Fraction, zero: Fraction): Fraction = one * (Fraction.ONE - zero) / ((Fraction.ONE - one) * zero)

/**
 * A two-round chain (the port of `js/src/privacy/longitudinal.ts`; `ldp/specs/longitudinal.py`):
 * memoized, one report's ratio A/B (L-GRR, randomized response over the domain) or
 * A(1 − B)/((1 − A)B) (the unary chains, two differing bits), with (A, B) = [ChainMath.support]; the
 * memo's p₁/q₁ or p₁(1 − q₁)/((1 − p₁)q₁) bounds any number of reports of one value; one memo key per
 * domain value; r reports of one memo cost min(r·ε′, ε∞) with ε′ = [ChainMath.memoReportEpsilon]
 * (Python's `memo_linear`, `memo_report_epsilon`). The probabilities must have the chain's form, as the
 * Python constructor checks.
 *
 * @privacy l-grr l-osue l-oue l-sue
 */
public fun longitudinalPrivacy(fields: JsonObject): MechanismPrivacy {
    val mechanism = PrivacyFields.mechanism(fields)
    val k = PrivacyFields.domainSize(fields)
    if (k < BigInteger.valueOf(2)) throw SpecException("$mechanism needs a domain of at least 2 values, got $k")
    val probabilities = listOf("p1", "q1", "p2", "q2").map { PrivacyFields.prob(fields, it) }
    for (p in probabilities) {
        if (p.num.signum() <= 0 || p >= Fraction.ONE) throw SpecException("$mechanism: probabilities must be in (0, 1)")
    }
    val (p1, q1, p2, q2) = probabilities
    val complement = { p: Fraction, q: Fraction -> p + q == Fraction.ONE && p > HALF }
    val oue = { p: Fraction, q: Fraction -> p == HALF && q < HALF }
    val grr = mechanism == "l-grr"
    val kFraction = Fraction.of(k)
    val form = when (mechanism) {
        "l-grr" -> q1 == (Fraction.ONE - p1).divInt(k - BigInteger.ONE) && q2 == (Fraction.ONE - p2).divInt(k - BigInteger.ONE) &&
            p1 * kFraction > Fraction.ONE && p2 * kFraction > Fraction.ONE
        "l-osue" -> oue(p1, q1) && complement(p2, q2)
        "l-oue" -> oue(p1, q1) && oue(p2, q2)
        else -> complement(p1, q1) && complement(p2, q2)
    }
    if (!form) throw SpecException("$mechanism: the probabilities p1, q1, p2, q2 are not of the chain's form")
    val (a, b) = ChainMath.support(p1, q1, p2, q2)
    val ratio = if (grr) a / b else ueRatio(a, b)
    val permanentRatio = if (grr) p1 / q1 else ueRatio(p1, q1)
    val one = fields["epsilon"] as? Double ?: Exact.epsilonBoundOfRatio(ratio)
    val inf = fields["epsilon_inf"] as? Double ?: Exact.epsilonBoundOfRatio(permanentRatio)
    val key = listOf(mechanism, k, p1, q1, p2, q2, one, inf)
    val perReport = memoReportCache.getOrPut(key) { ChainMath.memoReportEpsilon(grr, p1, q1, p2, q2, k.toLong(), one, inf) }
    return MechanismPrivacy.memoized(ratio, permanentRatio, k).copy(memoReportEpsilon = perReport, memoLinear = true)
}
