package dev.ldp.client.privacy

import dev.ldp.client.Epsilon
import dev.ldp.client.Exact
import dev.ldp.client.FloatText
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
    val stated = fields["epsilon"] as? Double ?: Double.NaN
    val statedInf = fields["epsilon_inf"] as? Double ?: Double.NaN
    Epsilon.checkEpsilonLimit(mechanism, "epsilon_inf", statedInf, MAX_EPSILON_INF, MAX_EPSILON_INF_REASON)
    if (!(statedInf > stated)) {
        throw SpecException(
            "$mechanism needs epsilon_inf > epsilon (the memoized round must be the weaker one), " +
                "got epsilon_inf=${FloatText.of(statedInf)}, epsilon=${FloatText.of(stated)}",
        )
    }
    val probabilities = listOf("p1", "q1", "p2", "q2").map { PrivacyFields.openProb(fields, it) }
    val (p1, q1, p2, q2) = probabilities
    val grr = mechanism == "l-grr"
    val problem = structure(mechanism, k, p1, q1, p2, q2)
    if (problem.isNotEmpty()) throw SpecException("$mechanism: $problem")
    val (a, b) = ChainMath.support(p1, q1, p2, q2)
    val ratio = if (grr) a / b else ueRatio(a, b)
    val permanentRatio = if (grr) p1 / q1 else ueRatio(p1, q1)
    val one = fields["epsilon"] as? Double ?: Exact.epsilonBoundOfRatio(ratio)
    val inf = fields["epsilon_inf"] as? Double ?: Exact.epsilonBoundOfRatio(permanentRatio)
    val key = listOf(mechanism, k, p1, q1, p2, q2, one, inf)
    val perReport = memoReportCache.getOrPut(key) { ChainMath.memoReportEpsilon(grr, p1, q1, p2, q2, k.toLong(), one, inf) }
    return MechanismPrivacy.memoized(ratio, permanentRatio, k).copy(memoReportEpsilon = perReport, memoLinear = true)
}

/** Largest ε∞ (`LongitudinalChain.max_epsilon_inf`), and why. */
private const val MAX_EPSILON_INF = 23.0
private const val MAX_EPSILON_INF_REASON = "the memoized round's smallest probability is a multiple of 2^-64"

/** Why stored probabilities are not of the chain's form ("" when they are): each chain's `_structure`. */
private fun structure(mechanism: String, k: BigInteger, p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction): String {
    val oue = { p: Fraction, q: Fraction -> p == HALF && q < HALF }
    val sue = { p: Fraction, q: Fraction -> p + q == Fraction.ONE && p > HALF }
    return when (mechanism) {
        "l-grr" -> when {
            q1 != (Fraction.ONE - p1).divInt(k - BigInteger.ONE) || q2 != (Fraction.ONE - p2).divInt(k - BigInteger.ONE) ->
                "GRR rounds need q = (1 - p)/(k - 1) in both rounds"
            p1 * Fraction.of(k) <= Fraction.ONE || p2 * Fraction.of(k) <= Fraction.ONE -> "GRR rounds need p > 1/k = 1/$k in both rounds"
            else -> ""
        }
        "l-osue" -> when {
            !oue(p1, q1) -> "the OUE round needs p1 = 1/2 > q1"
            !sue(p2, q2) -> "the SUE round needs q2 = 1 - p2 and p2 > 1/2"
            else -> ""
        }
        "l-oue" -> when {
            !oue(p1, q1) -> "the first OUE round needs p1 = 1/2 > q1"
            !oue(p2, q2) -> "the second OUE round needs p2 = 1/2 > q2"
            else -> ""
        }
        else -> when {
            !sue(p1, q1) -> "the first SUE round needs q1 = 1 - p1 and p1 > 1/2"
            !sue(p2, q2) -> "the second SUE round needs q2 = 1 - p2 and p2 > 1/2"
            else -> ""
        }
    }
}
