package dev.ldp.client

import java.math.BigInteger

/**
 * The privacy facts of one spec, read from its exact probabilities (Python's `privacy_ratio`, and for a
 * memoized mechanism its `permanent_ratio` and `memo_domain_size`): what a family's privacy function in
 * `dev.ldp.client.privacy` returns (the port of `MechanismPrivacy` of `js/src/privacyfields.ts`).
 *
 * @property ratio the exact worst-case ratio max P[y|x]/P[y|x′] of one report (a memoized mechanism's
 *   ε₁ = ln ratio); null when the ratio is not in the spec (numeric grid tables come from the server)
 * @property memoized true for a memoized mechanism (a permanent response derived per memo key)
 * @property permanentRatio memoized only: the worst-case ratio of the permanent response, which bounds
 *   any number of reports of one memo key (ε∞ = ln permanentRatio); null when unbounded
 * @property memoValues memoized only: how many distinct memo keys exist; null when unbounded
 * @property maxEpsilon the largest stated ε the mechanism supports (the Python spec's `max_epsilon`):
 *   added by [PrivacyRegistry.mechanismPrivacy] from the generated limits; family functions leave it null
 * @property maxEpsilonReason why [maxEpsilon]
 * @property claimMatches false when the stated ε may exceed what the probabilities give (the Python
 *   spec's `claim_matches_probabilities`): added by the registry, like [maxEpsilon]
 * @property memoLinear memoized only: r reports of one memo key are (r·ε′)-DP (Python's `memo_linear`)
 * @property memoReportEpsilon memoized only: the per-report ε the ledger charges when it exceeds ε₁
 *   (Python's `memo_report_epsilon`); null: ε₁
 */
public data class MechanismPrivacy @JvmOverloads constructor(
    val ratio: Fraction?,
    val memoized: Boolean = false,
    val permanentRatio: Fraction? = null,
    val memoValues: BigInteger? = null,
    val maxEpsilon: Double? = null,
    val maxEpsilonReason: String? = null,
    val claimMatches: Boolean = true,
    val memoLinear: Boolean = false,
    val memoReportEpsilon: Double? = null,
) {
    public companion object {
        /** The facts of a mechanism with fresh randomness per report: its ratio only. */
        @JvmStatic
        public fun fresh(ratio: Fraction?): MechanismPrivacy = MechanismPrivacy(ratio)

        /** The facts of a memoized mechanism: ε₁'s ratio, ε∞'s (null: unbounded) and the number of memo keys (null: unbounded). */
        @JvmStatic
        public fun memoized(ratio: Fraction?, permanentRatio: Fraction?, memoValues: BigInteger?): MechanismPrivacy =
            MechanismPrivacy(ratio, memoized = true, permanentRatio = permanentRatio, memoValues = memoValues)
    }
}

/**
 * A family's privacy function: the facts of canonical spec fields, after the range checks of its Python
 * constructor (a [SpecException] naming what is wrong otherwise). Each is a top-level function of
 * `dev.ldp.client.privacy`, tagged `@privacy NAME...` in its KDoc; the generated
 * [PrivacyRegistry] dispatches to it.
 */
public typealias PrivacyFunction = (JsonObject) -> MechanismPrivacy

/**
 * The spec-field readers and ratio helpers the privacy functions share (the port of the helpers of
 * `js/src/privacyfields.ts`). They read canonical fields ([Spec.fields]) and fail with a
 * [SpecException].
 */
public object PrivacyFields {
    /** The mechanism name of canonical fields. */
    @JvmStatic
    public fun mechanism(fields: JsonObject): String = fields["mechanism"].toString()

    /** A probability field (a fraction string). */
    @JvmStatic
    public fun prob(fields: JsonObject, name: String): Fraction {
        val v = fields[name]
        return if (v is String) Fraction.parse(v) else specFail("${mechanism(fields)} spec has no probability $name")
    }

    /** An integer field. */
    @JvmStatic
    public fun int(fields: JsonObject, name: String): BigInteger =
        fields[name] as? BigInteger ?: specFail("${mechanism(fields)} spec has no integer $name")

    /** An integer field within [minimum, maximum] (Python's `check_int`, with its message: the field, the range and the value). */
    @JvmStatic
    public fun intIn(fields: JsonObject, name: String, minimum: BigInteger, maximum: BigInteger): BigInteger {
        val v = int(fields, name)
        if (v < minimum || v > maximum) specFail("$name must be in [$minimum, $maximum], got $v")
        return v
    }

    /** [intIn] with `Long` bounds. */
    @JvmStatic
    public fun intIn(fields: JsonObject, name: String, minimum: Long, maximum: Long): BigInteger =
        intIn(fields, name, BigInteger.valueOf(minimum), BigInteger.valueOf(maximum))

    /** An integer with thousands separators, as Python's `f"{n:,}"` writes it (limits in messages). */
    @JvmStatic
    public fun grouped(n: Any): String = n.toString().replace(Regex("\\B(?=(\\d{3})+(?!\\d))"), ",")

    /**
     * The stated ε fields (`epsilon`, `epsilon_one`, `epsilon_inf`, when given) finite and > 0, as Python's
     * `check_epsilon` checks them when the spec is built, before the family's checks.
     */
    @JvmStatic
    public fun checkStatedEpsilons(fields: JsonObject) {
        for (name in listOf("epsilon", "epsilon_one", "epsilon_inf")) {
            val v = fields[name] ?: continue
            if (v !is Double || v.isNaN() || v.isInfinite() || v <= 0) {
                specFail("$name must be a finite number > 0, got ${if (v is Double) FloatText.of(v) else v.toString()}")
            }
        }
    }

    /** A domain of at most `limit` values (the Python spec class's `max_domain_size`, with `why`, its `max_domain_reason`). */
    @JvmStatic
    public fun checkDomainLimit(fields: JsonObject, limit: Long, why: String) {
        val d = fields["domain"]
        if (d is List<*> && d.size > limit) {
            specFail("${mechanism(fields)}: a domain of ${grouped(d.size)} values is above the limit of ${grouped(limit)} ($why)")
        }
    }

    /** A probability field in (0, 1) (Python's `check_probability` with both ends open, and its message). */
    @JvmStatic
    public fun openProb(fields: JsonObject, name: String): Fraction {
        val v = prob(fields, name)
        if (v.num.signum() <= 0 || v >= Fraction.ONE) specFail("$name must be in (0, 1), got $v")
        return v
    }

    /** Reports an int64 count can hold (`REPORT_HEADROOM`): numeric sums and variances stay finite up to this many. */
    private val REPORT_HEADROOM = Math.pow(2.0, 63.0)

    /**
     * A numeric range whose value-unit quantities stay finite over 2^63 reports
     * (`NumericSpec._check_value_scale`), for a mechanism whose unbiased native estimate of one report is
     * ±c: its deviation c·(high − low)/2 and its reach |low/2 + high/2| + that deviation.
     */
    @JvmStatic
    public fun checkValueScale(mechanism: String, low: Double, high: Double, epsilon: Double, c: Double) {
        val spread = Math.abs(c) * ((high - low) / 2.0)
        val extent = Math.abs(low / 2 + high / 2) + spread
        val limit = Math.sqrt(Double.MAX_VALUE / REPORT_HEADROOM)
        if (!(spread <= limit && extent <= Double.MAX_VALUE / REPORT_HEADROOM)) {
            specFail(
                "$mechanism: the range [${FloatText.of(low)}, ${FloatText.of(high)}] is too wide at epsilon=${FloatText.formatG(epsilon)}: one " +
                    "report's unbiased estimate reaches ${FloatText.formatG(extent, 3)} in value units, and its deviation ${FloatText.formatG(spread, 3)} " +
                    "must stay below ${FloatText.formatG(limit, 3)} so that sums and variances over up to 2^63 reports stay finite",
            )
        }
    }

    /** A float field. */
    @JvmStatic
    public fun float(fields: JsonObject, name: String): Double =
        fields[name] as? Double ?: specFail("${mechanism(fields)} spec has no number $name")

    /** The number of values of the spec's domain. */
    @JvmStatic
    public fun domainSize(fields: JsonObject): BigInteger {
        val d = fields["domain"]
        return if (d is List<*>) BigInteger.valueOf(d.size.toLong()) else specFail("${mechanism(fields)} spec has no domain")
    }

    /** p (the field `p`) below 1, and above `floor` (the probability that gives no signal; `floorText` names it). */
    @JvmStatic
    public fun keep(fields: JsonObject, floor: Fraction, floorText: String): Fraction {
        val p = prob(fields, "p")
        val mechanism = mechanism(fields)
        if (p >= Fraction.ONE) specFail("p must be in [0, 1), got $p")
        if (p <= floor) specFail("$mechanism: p must exceed $floorText, got $p")
        return p
    }

    /** Randomized response over n outputs with keep probability p: p/q, q = (1 − p)/(n − 1). */
    @JvmStatic
    public fun rrRatio(p: Fraction, n: BigInteger): Fraction = p / (Fraction.ONE - p).divInt(n - BigInteger.ONE)

    /** The odds p/(1 − p) of a kept bit (a binary randomized response's ratio). */
    @JvmStatic
    public fun odds(p: Fraction): Fraction = p / (Fraction.ONE - p)
}
