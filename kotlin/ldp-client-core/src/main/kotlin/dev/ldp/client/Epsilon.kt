package dev.ldp.client

/**
 * The stated ε of a spec and the certified comparison of a ratio with it (the port of
 * `js/src/epsilon.ts`), shared by the categorical claims ([Claim]) and the numeric tables'; see
 * [Claim] for what is checked and why.
 */
public object Epsilon {
    /** A stated e^ε may exceed the exact probability ratio by this relative amount at most (Python's `CLAIM_TOLERANCE`). */
    public const val CLAIM_TOLERANCE: Double = 1e-9

    /** Largest ε whose e^ε is a finite double, so that a claim can be certified (Python's `REPRESENTABLE_MAX_EPSILON`). */
    public const val REPRESENTABLE_MAX_EPSILON: Double = 700.0
    private const val REPRESENTABLE_WHY = "e^epsilon must be a finite double to certify the claim"

    private val SAFETY = Fraction.of((1L shl 50) - 1, 1L shl 50) // 1 − 2^-50, as ldp/exact.py
    private val HIGH = Fraction.of((1L shl 51) + 1, 1L shl 51) // e^ε rounded one ulp up at most ...
    private val LOW = Fraction.of((1L shl 51) - 1, 1L shl 51) // ... or down (Python's libm exp)
    private val ONE_PLUS_TOLERANCE = Fraction.ONE + Fraction.exactDouble(CLAIM_TOLERANCE)

    /** A stated ε field (`epsilon`, `epsilon_one`, `epsilon_inf`): a finite number > 0 whose e^ε is a finite double. */
    @JvmStatic
    public fun statedClaim(fields: JsonObject, name: String): Double {
        val mechanism = PrivacyFields.mechanism(fields)
        val epsilon = fields[name]
        if (epsilon !is Double || epsilon.isNaN() || epsilon.isInfinite() || epsilon <= 0) {
            specFail("$name must be a finite number > 0, got ${describe(epsilon)}")
        }
        checkEpsilonLimit(mechanism, name, epsilon, REPRESENTABLE_MAX_EPSILON, REPRESENTABLE_WHY)
        return epsilon
    }

    /** The stated ε: a finite number > 0 within the mechanism's limit (`facts`' [MechanismPrivacy.maxEpsilon], else [REPRESENTABLE_MAX_EPSILON]). */
    @JvmStatic
    public fun statedEpsilon(fields: JsonObject, facts: MechanismPrivacy?): Double {
        val mechanism = PrivacyFields.mechanism(fields)
        val epsilon = fields["epsilon"]
        if (epsilon !is Double || epsilon.isNaN() || epsilon.isInfinite() || epsilon <= 0) {
            specFail("epsilon must be a finite number > 0, got ${describe(epsilon)}")
        }
        val limit = facts?.maxEpsilon
        if (limit == null) checkEpsilonLimit(mechanism, "epsilon", epsilon, REPRESENTABLE_MAX_EPSILON, REPRESENTABLE_WHY)
        else checkEpsilonLimit(mechanism, "epsilon", epsilon, limit, facts.maxEpsilonReason ?: "")
        return epsilon
    }

    private fun describe(v: Any?): String = if (v is Double) FloatText.of(v) else v.toString()

    /** Refuse `epsilon` (the value of the field `name`) above `limit`, saying why (Python's `check_epsilon_limit`). */
    @JvmStatic
    public fun checkEpsilonLimit(mechanism: String, name: String, epsilon: Double, limit: Double, why: String) {
        if (!(epsilon <= limit)) {
            specFail("$mechanism: $name=${FloatText.formatG(epsilon, 10)} is above ${FloatText.formatG(limit)}, the largest epsilon $mechanism supports${if (why.isNotEmpty()) " ($why)" else ""}")
        }
    }

    /**
     * Refuse a ratio that gives more than ε (certified), or, when `matches`, a stated ε clearly above
     * what the ratio gives (Python's `_check_claim`). `name`: the stated field, in messages.
     */
    @JvmStatic
    public fun checkRatio(mechanism: String, epsilon: Double, ratio: Fraction, matches: Boolean, name: String) {
        val e = Exact.expCorrectlyRounded(epsilon)
        if (e.isInfinite()) return // beyond every limit: refused by statedEpsilon, statedClaim
        val bound = Fraction.exactDouble(e) * SAFETY // Python's exp_lower_bound(ε), up to one ulp of exp
        val achieved = FloatText.of(Exact.epsilonOfRatio(ratio))
        if (ratio > bound * HIGH) {
            specFail(
                "$mechanism claims $name=${FloatText.of(epsilon)} but its exact probabilities give $name=$achieved; " +
                    "the claim must be at least what the probabilities give: load the server's spec",
            )
        }
        if (matches && bound * LOW > ratio * ONE_PLUS_TOLERANCE) {
            specFail(
                "$mechanism states $name=${FloatText.of(epsilon)} but its exact probabilities give $name=$achieved; " +
                    "the stated $name must match them (e^$name within a relative $CLAIM_TOLERANCE): load the server's spec",
            )
        }
    }
}
