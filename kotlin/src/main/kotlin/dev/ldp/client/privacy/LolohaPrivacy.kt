package dev.ldp.client.privacy

import dev.ldp.client.Exact
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
    if (PrivacyFields.domainSize(fields) < BigInteger.valueOf(2)) throw SpecException("loloha needs a domain of at least 2 values")
    val g = PrivacyFields.int(fields, "g")
    val poolSize = PrivacyFields.int(fields, "pool_size")
    if (g < BigInteger.valueOf(2) || g > MAX_TABLE) throw SpecException("g must be an integer in [2, $MAX_TABLE], got $g")
    if (poolSize < BigInteger.ONE || poolSize > MAX_POOL) throw SpecException("pool_size must be an integer in [1, $MAX_POOL], got $poolSize")
    if (poolSize * g > MAX_TABLE) throw SpecException("loloha: pool_size x g = $poolSize x $g is above the limit of $MAX_TABLE")
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
