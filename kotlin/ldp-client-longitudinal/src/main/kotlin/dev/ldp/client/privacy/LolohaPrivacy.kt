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

/** The largest pool_size × g (the aggregator's table of counts), as Python's `MAX_TABLE_COUNTERS`. */
private val MAX_TABLE: BigInteger = BigInteger.ONE.shiftLeft(24)

/** The largest pool, as Python's `MAX_POOL_SIZE`. */
private val MAX_POOL: BigInteger = BigInteger.ONE.shiftLeft(20)

/** Largest ε∞ (`RR64_MAX_EPSILON`), and why (LOLOHA's `max_epsilon_reason`). */
private const val RR64_MAX_EPSILON = 23.0
private const val MAX_EPSILON_REASON =
    "its smallest probabilities, about 1/(e^epsilon + g - 1), are multiples of 2^-64 and could not match " +
        "e^epsilon to 1e-9 above it"

/** ε′ by its inputs (up to 400 rounds of [ChainMath.memoReportEpsilon], once per distinct spec). */
private val lolohaReportCache = ConcurrentHashMap<List<Any>, Double>()

/**
 * LOLOHA (the port of `js/src/privacy/loloha.ts`; `ldp/specs/loloha.py`): round 1 keeps the bucket
 * w.p. p₁ (each other q₁ = (1 − p₁)/(g − 1)), round 2 keeps the memo w.p. p₂. One report's worst-case
 * ratio is the chain's A/B ([ChainMath.support]); any number of reports of one bucket are bounded by
 * the memo's p₁/q₁; a client has at most g memo keys (its buckets). r reports of one bucket are
 * L-GRR's over the g buckets, so the ledger charges them min(r·ε′, ε∞) with L-GRR's ε′ (Python's
 * `memo_report_epsilon`, `memo_linear`).
 *
 * @privacy loloha
 */
public fun lolohaPrivacy(fields: JsonObject): MechanismPrivacy {
    val d = PrivacyFields.domainSize(fields)
    if (d < BigInteger.valueOf(2)) throw SpecException("loloha needs a domain of at least 2 values, got $d")
    val stated = fields["epsilon"] as? Double ?: Double.NaN
    val statedInf = fields["epsilon_inf"] as? Double ?: Double.NaN
    Epsilon.checkEpsilonLimit("loloha", "epsilon_inf", statedInf, RR64_MAX_EPSILON, MAX_EPSILON_REASON)
    if (!(stated < statedInf)) {
        throw SpecException(
            "loloha needs epsilon (one report) < epsilon_inf (the memoized round), got ${FloatText.of(stated)} and ${FloatText.of(statedInf)}",
        )
    }
    val g = PrivacyFields.intIn(fields, "g", BigInteger.valueOf(2), MAX_TABLE)
    val poolSize = PrivacyFields.intIn(fields, "pool_size", BigInteger.ONE, MAX_POOL)
    if (poolSize * g > MAX_TABLE) {
        throw SpecException(
            "loloha: pool_size x g = ${PrivacyFields.grouped(poolSize)} x ${PrivacyFields.grouped(g)} is above the limit of " +
                "${PrivacyFields.grouped(MAX_TABLE)} (the aggregator keeps one int64 count per pool function and bucket)",
        )
    }
    val p1 = PrivacyFields.prob(fields, "p1")
    val p2 = PrivacyFields.prob(fields, "p2")
    if (p1 >= Fraction.ONE) throw SpecException("loloha: p1 must be in [0, 1), got $p1")
    if (p2 > Fraction.ONE) throw SpecException("loloha: p2 must be in [0, 1], got $p2")
    for ((name, p) in listOf("p1" to p1, "p2" to p2)) {
        if (p <= Fraction.of(BigInteger.ONE, g)) throw SpecException("loloha: $name must exceed 1/g = 1/$g, got $p")
    }
    val q1 = (Fraction.ONE - p1).divInt(g - BigInteger.ONE)
    val q2 = (Fraction.ONE - p2).divInt(g - BigInteger.ONE)
    val (a, b) = ChainMath.support(p1, q1, p2, q2)
    val ratio = a / b
    val permanentRatio = p1 / q1
    val one = fields["epsilon"] as? Double ?: Exact.epsilonBoundOfRatio(ratio)
    val inf = fields["epsilon_inf"] as? Double ?: Exact.epsilonBoundOfRatio(permanentRatio)
    val key = listOf(g, p1, p2, one, inf)
    val perReport = lolohaReportCache.getOrPut(key) { ChainMath.memoReportEpsilon(true, p1, q1, p2, q2, g.toLong(), one, inf) }
    return MechanismPrivacy.memoized(ratio, permanentRatio, g).copy(memoReportEpsilon = perReport, memoLinear = true)
}

/** The default pool (Python's `DEFAULT_POOL_SIZE`). */
private val DEFAULT_POOL_SIZE: BigInteger = BigInteger.ONE.shiftLeft(16)

/**
 * A spec without a pool_size takes Python's default, min(2^16, ⌊2^24/g⌋) (`default_pool_size`: it
 * follows from g, not from ε; the port of `lolohaFields` of `js/src/privacy/loloha.ts`).
 *
 * @canonical loloha
 */
public fun lolohaFields(out: MutableMap<String, Any?>) {
    if (out["pool_size"] != null) return
    val g = out["g"] as? BigInteger ?: throw SpecException("loloha spec has no integer g")
    if (g < BigInteger.valueOf(2) || g > MAX_TABLE) return // refused with Python's message by lolohaPrivacy
    out["pool_size"] = (MAX_TABLE / g).min(DEFAULT_POOL_SIZE)
}
