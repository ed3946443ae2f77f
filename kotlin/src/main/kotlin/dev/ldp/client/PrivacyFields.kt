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
        if (p >= Fraction.ONE) specFail("$mechanism: p must be in [0, 1), got $p")
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
