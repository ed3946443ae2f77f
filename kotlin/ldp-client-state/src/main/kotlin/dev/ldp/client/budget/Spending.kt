package dev.ldp.client.budget

import dev.ldp.client.Claim
import dev.ldp.client.Exact
import dev.ldp.client.FloatText
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.Spec
import java.math.BigInteger

/**
 * One report's privacy-loss atoms as a Python ledger with an `exact` budget records them (`loss`:
 * `log_p`, `log_q`); kept so a version-2 file is written back as it was read.
 */
public class StreamLoss(logP: List<Double>, logQ: List<Double>) {
    /** The log P-masses. */
    public val logP: List<Double> = logP.toList()

    /** The log Q-masses. */
    public val logQ: List<Double> = logQ.toList()
}

/**
 * What one stream has spent (Python's `Stream`; its fields are the ledger file's).
 *
 * @property spec the spec's fingerprint
 * @property epsilon ε of one report (a memoized spec: the per-report charge ε′, ε₁ unless the spec states
 *   `memoReportEpsilon`)
 * @property epsilonCap memoized: ε∞, the most any number of reports of one memo key cost (null: unbounded)
 * @property reports reports charged so far
 * @property memoized one memo key of a memoized spec (false: fresh randomness per report)
 * @property values memoized: how many distinct memo keys the spec has (null: unbounded)
 * @property linear memoized: r reports of one key cost min(r·ε′, ε∞) (true) or ε₁ then ε∞ (false)
 * @property epsilonFirst memoized: ε₁, a key's first report's cost, when below [epsilon]; null: [epsilon]
 * @property loss one report's privacy-loss atoms, as a Python `exact` ledger records them (else null)
 */
public class Stream @JvmOverloads constructor(
    public val spec: String,
    public val epsilon: Double,
    public val epsilonCap: Double?,
    public val reports: Long,
    public val memoized: Boolean = false,
    public val values: BigInteger? = null,
    public val linear: Boolean = true,
    public val epsilonFirst: Double? = null,
    public val loss: StreamLoss? = null,
) {
    /** This stream with [count] reports. */
    public fun withReports(count: Long): Stream = Stream(spec, epsilon, epsilonCap, count, memoized, values, linear, epsilonFirst, loss)

    /** The pure ε-DP pieces the stream amounts to: ε per report, or one [Spending.memoKeyCost] for a memo key (Python's `Stream.charges`). */
    public fun charges(): List<Double> {
        if (!memoized) return List(reports.toInt()) { epsilon }
        if (reports == 0L) return emptyList()
        return listOf(Spending.memoKeyCost(reports, epsilon, epsilonCap, linear, epsilonFirst))
    }
}

/**
 * How a spec's reports are charged (Python's `stream_parameters`, `memo_is_linear` and
 * `first_report_epsilon`): the fields of its streams but the report count.
 */
public class StreamParameters @JvmOverloads constructor(
    public val epsilon: Double,
    public val epsilonCap: Double?,
    public val memoized: Boolean,
    public val values: BigInteger? = null,
    public val linear: Boolean = true,
    public val epsilonFirst: Double? = null,
) {
    /** A stream of [spec] (a fingerprint) with [reports] reports under these parameters (and the atoms [loss], if any). */
    @JvmOverloads
    public fun stream(spec: String, reports: Long, loss: StreamLoss? = null): Stream =
        Stream(spec, epsilon, epsilonCap, reports, memoized, values, if (memoized) linear else true, epsilonFirst, loss)
}

/**
 * ε₁ (one report) and ε∞ (any number of reports of one memo key; null when unbounded) of a memoized spec.
 */
public class MemoizedEpsilons(public val one: Double, public val inf: Double?)

/**
 * What a client's reports spend (the port of the accounting of `js/src/budget.ts`, itself of Python's
 * `ldp/privacy/spending.py`), pure functions over [Stream]s:
 *
 * - a fresh-randomness spec (GRR, OUE, ...) is one stream per spec; each report costs the spec's ε;
 * - each memo key of a memoized spec (RAPPOR's value, a longitudinal chain's value, ...) is its own
 *   stream: r reports cost min(r·ε′, ε∞) when the mechanism proves r·ε′ ([MechanismPrivacy.memoLinear],
 *   ε′ = [MechanismPrivacy.memoReportEpsilon] or ε₁), else ε₁ for one report and ε∞ from the second;
 *   a key's first report costs ε₁ ([Stream.epsilonFirst]) whatever ε′;
 * - the budget is enforced on the *committed* total ([committedEpsilon]), the largest *spent* total
 *   ([spentEpsilon]) any values could give with the same number of reports per spec, so a refusal
 *   reveals nothing about the values.
 *
 * Totals combine by the budget's rule: `basic` (Python's `math.fsum(pure) + math.fsum(ε·count)`) or
 * `optimal` ([Composition.heterogeneousEpsilon] at the budget's δ, never above the sum).
 */
public object Spending {
    /** The relative slack of [fitsBudget], as Python's: ten reports of ε = 0.1 fit a budget of 1. */
    public const val SLACK: Double = 1e-12

    /**
     * Pure ε of [reports] reports of one memo key (Python's `memo_key_cost`): ε₁ = [first] (default
     * [epsilon]) for one report; from the second, min(r·ε′, ε∞) when [linear] (ε′ = [epsilon]), else ε∞
     * ([cap]; null: unbounded, +∞).
     */
    @JvmStatic
    @JvmOverloads
    public fun memoKeyCost(reports: Long, epsilon: Double, cap: Double?, linear: Boolean = true, first: Double? = null): Double {
        if (reports <= 0) return 0.0
        if (reports == 1L) return if (first == null) epsilon else minOf(first, epsilon)
        val capped = cap ?: Double.POSITIVE_INFINITY
        return if (linear) minOf(reports.toDouble() * epsilon, capped) else capped
    }

    /**
     * The largest Σ_v [memoKeyCost] (r_v) over spreads of [reports] over at most [values] memo keys
     * (Python's `worst_case_memoized_cost`, docs/accounting.md#lifetime): the cost is concave on r ≥ 1,
     * so for m keys each holding a report the even spread is the largest, and the largest over m is at
     * m = min(d, R), min(d, ⌊R/2⌋) or min(d, ⌊R/2⌋ + 1).
     */
    @JvmStatic
    @JvmOverloads
    public fun worstCaseMemoizedCost(
        reports: Long,
        epsilon: Double,
        cap: Double?,
        values: BigInteger?,
        linear: Boolean = true,
        first: Double? = null,
    ): Double {
        if (reports <= 0) return 0.0
        val keys = if (values == null) reports else values.min(BigInteger.valueOf(reports)).toLong()
        val one = if (first == null) epsilon else minOf(first, epsilon)
        fun cost(r: Long) = memoKeyCost(r, epsilon, cap, linear, first)
        fun even(m: Long): Double {
            val base = reports / m
            val extra = reports - base * m
            return (if (extra != 0L) extra.toDouble() * cost(base + 1) else 0.0) + (m - extra).toDouble() * cost(base)
        }
        if (linear && one == epsilon && (cap == null || values == null)) return reports.toDouble() * epsilon
        val half = reports / 2
        var best = Double.NEGATIVE_INFINITY
        for (m in linkedSetOf(keys, minOf(keys, half), minOf(keys, half + 1))) {
            if (m >= 1) best = maxOf(best, even(m))
        }
        return best
    }

    /**
     * ε₁ and ε∞ of a memoized spec, as Python's `stream_parameters` reads its spec's `epsilon_one` and
     * `epsilon_inf`: the stated field when the spec states one (checked against the exact ratio when it
     * was loaded), else ln of the exact worst-case ratio rounded up to the smallest certified double
     * ([Exact.epsilonBoundOfRatio]). An [AccountingException] for a spec that is not memoized.
     */
    @JvmStatic
    public fun memoizedEpsilons(spec: Spec): MemoizedEpsilons = memoizedEpsilons(spec.fields, Claim.privacyFacts(spec.fields))

    internal fun memoizedEpsilons(fields: JsonObject, facts: MechanismPrivacy): MemoizedEpsilons {
        val ratio = facts.ratio
        if (!facts.memoized || ratio == null) throw AccountingException("${fields["mechanism"]} is not memoized")
        fun stated(name: String): Double? = fields[name] as? Double
        val one = stated("epsilon_one") ?: stated("epsilon") ?: Exact.epsilonBoundOfRatio(ratio)
        val permanent = facts.permanentRatio ?: return MemoizedEpsilons(one, null)
        return MemoizedEpsilons(one, stated("epsilon_inf") ?: Exact.epsilonBoundOfRatio(permanent))
    }

    /**
     * Whether a spec's mechanism is memoized: its reports derive from a permanent response per memo key,
     * so its client keeps a persistent state and the ledger charges each memo key's stream.
     */
    @JvmStatic
    public fun isMemoized(spec: Spec): Boolean = Claim.privacyFacts(spec.fields).memoized

    /**
     * How [spec]'s reports are charged (Python's `stream_parameters`): a memoized spec's ε′ (its
     * `memoReportEpsilon`, else ε₁), ε∞, memo keys, linearity and ε₁ when below ε′; a fresh spec's ε. An
     * [AccountingException] for a spec with no ε or an (ε, δ) mechanism (Gaussian): the ledger composes
     * pure ε-DP reports.
     */
    @JvmStatic
    public fun streamParameters(spec: Spec): StreamParameters = streamParameters(spec.fields, Claim.privacyFacts(spec.fields))

    internal fun streamParameters(fields: JsonObject, facts: MechanismPrivacy): StreamParameters {
        val mechanism = fields["mechanism"]
        if (facts.memoized) {
            val epsilons = memoizedEpsilons(fields, facts)
            val epsilon = facts.memoReportEpsilon ?: epsilons.one
            // a key's first report is one report of the spec: ε₁, below the charge ε′ of r ≥ 2 (Python's first_report_epsilon)
            val first = if (epsilons.one < epsilon) epsilons.one else null
            return StreamParameters(epsilon, epsilons.inf, true, facts.memoValues, facts.memoLinear, first)
        }
        val epsilon = fields["epsilon"] as? Double ?: throw AccountingException("cannot account for $mechanism: it has no epsilon")
        val delta = fields["delta"]
        if (delta != null) {
            val text = if (delta is Double) FloatText.of(delta) else delta.toString()
            throw AccountingException(
                "cannot account for $mechanism: the ledger composes pure epsilon-DP reports, this spec is (epsilon, delta)-DP (delta=$text)",
            )
        }
        return StreamParameters(epsilon, null, false)
    }

    /**
     * The total of pure pieces and fresh streams' reports (ε, count) under [budget] (Python's `_compose`):
     * `basic`, or `optimal` at δ = 0, is fsum(pure) + fsum(ε·count); `optimal` at δ > 0 the smaller of that
     * and the exact composition of all the pieces.
     */
    private fun compose(pure: List<Double>, fresh: List<Stream>, budget: Budget): Double {
        val basic = Composition.fsum(pure) + Composition.fsum(fresh.map { it.epsilon * it.reports.toDouble() })
        if (budget.composition == CompositionRule.BASIC || budget.delta == 0.0 || (pure.isEmpty() && fresh.isEmpty())) return basic
        if (basic.isInfinite()) return basic // an unbounded piece: unbounded at any δ (refused, never composed)
        val pieces = DoubleArray(pure.size + fresh.sumOf { it.reports }.toInt())
        var i = 0
        for (x in pure) pieces[i++] = x
        for (s in fresh) repeat(s.reports.toInt()) { pieces[i++] = s.epsilon }
        return minOf(basic, Composition.heterogeneousEpsilon(pieces, budget.delta))
    }

    /** What was actually sent, given the values (Python's `spent_epsilon`; informational, never used to refuse). */
    @JvmStatic
    public fun spentEpsilon(streams: Collection<Stream>, budget: Budget): Double =
        compose(streams.filter { it.memoized }.flatMap { it.charges() }, streams.filter { !it.memoized && it.reports > 0 }, budget)

    /**
     * The enforced total (Python's `committed_epsilon`): fresh streams as spent, each memoized spec one
     * piece, [worstCaseMemoizedCost] of its reports over its memo keys. Depends only on how many reports
     * were sent under each spec.
     */
    @JvmStatic
    public fun committedEpsilon(streams: Collection<Stream>, budget: Budget): Double {
        val memo = LinkedHashMap<String, MutableList<Stream>>()
        for (s in streams) if (s.memoized) memo.getOrPut(s.spec) { ArrayList() }.add(s)
        val pure = memo.values.map { group ->
            val first = group[0]
            worstCaseMemoizedCost(
                group.sumOf { it.reports },
                first.epsilon,
                first.epsilonCap,
                first.values,
                group.all { it.linear },
                first.epsilonFirst,
            )
        }
        return compose(pure, streams.filter { !it.memoized && it.reports > 0 }, budget)
    }

    /** True when a committed total is within [budget] (with Python's relative slack [SLACK]). */
    @JvmStatic
    public fun fitsBudget(committed: Double, budget: Budget): Boolean = committed <= budget.epsilon * (1 + SLACK)
}
