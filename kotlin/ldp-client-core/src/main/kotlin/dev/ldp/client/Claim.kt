package dev.ldp.client

/**
 * The privacy claim of a spec, checked against its exact probabilities as the Python specs check it
 * (the port of `js/src/claim.ts`; `ExactPrivacySpec._check_claim` in `ldp/specs/base.py`):
 *
 * - the probabilities must honour the stated ε: their exact worst-case ratio max P[y|x]/P[y|x′] is at
 *   most e^ε, certified (rational arithmetic, e^ε bounded below by a correctly rounded exp times
 *   1 − 2^-50);
 * - where the spec stores both ε and its probabilities, the stated e^ε may exceed that ratio by a
 *   relative 1e-9 at most (an edited ε is noticed);
 * - ε is finite, > 0, and at most the mechanism's limit;
 * - a memoized mechanism's stated ε∞ (`epsilon_inf`) is checked in the same way against the exact
 *   ratio of its permanent response.
 *
 * A spec whose probabilities give ε = 4 while it states ε = 1 would be encoded at 4 and charged 1: it is
 * refused here, before any encoder exists. The facts come from the family's privacy function
 * ([PrivacyRegistry.mechanismPrivacy], generated from the `@privacy` tags): this object names no
 * mechanism. A spec whose mechanism has no privacy function in this client is refused.
 */
public object Claim {
    private const val UNSTATED_WHY = "e^epsilon must be a finite double to certify the claim; it follows from the spec's probabilities"

    /** The privacy facts of canonical spec fields; a [SpecException] for a mechanism this client has no privacy function for. */
    @JvmStatic
    public fun privacyFacts(fields: JsonObject): MechanismPrivacy =
        PrivacyRegistry.mechanismPrivacy(fields)
            ?: specFail("${PrivacyFields.mechanism(fields)}: this client cannot check its privacy claim (it has no privacy module for it): update the client")

    /** The exact worst-case ratio of a spec's probabilities (null when not in the spec or not known here). */
    @JvmStatic
    public fun privacyRatio(fields: JsonObject): Fraction? = PrivacyRegistry.mechanismPrivacy(fields)?.ratio

    /** Check canonical spec fields: ε finite, positive and within its limit, the probabilities in range, the claim against their exact ratio. */
    @JvmStatic
    public fun check(fields: JsonObject) {
        val mechanism = PrivacyFields.mechanism(fields)
        val facts = privacyFacts(fields)
        var statesOne = false
        for (name in listOf("epsilon", "epsilon_one")) {
            if (!fields.containsKey(name) || (name == "epsilon_one" && fields[name] == null)) continue
            statesOne = true
            val epsilon = if (name == "epsilon") Epsilon.statedEpsilon(fields, facts) else Epsilon.statedClaim(fields, name)
            val ratio = facts.ratio
            if (ratio != null) Epsilon.checkRatio(mechanism, epsilon, ratio, facts.claimMatches, name)
        }
        if (!facts.memoized) return
        val permanent = facts.permanentRatio
        if (fields["epsilon_inf"] != null) {
            val epsilonInf = Epsilon.statedClaim(fields, "epsilon_inf")
            if (permanent == null) {
                specFail("$mechanism states epsilon_inf=${FloatText.of(epsilonInf)} but its permanent response is not randomized: epsilon_inf is unbounded")
            }
            Epsilon.checkRatio(mechanism, epsilonInf, permanent, true, "epsilon_inf")
        } else if (permanent != null) {
            Epsilon.checkEpsilonLimit(mechanism, "epsilon_inf", Exact.epsilonOfRatio(permanent), Epsilon.REPRESENTABLE_MAX_EPSILON, UNSTATED_WHY)
        }
        val ratio = facts.ratio
        if (!statesOne && ratio != null) {
            Epsilon.checkEpsilonLimit(mechanism, "epsilon_one", Exact.epsilonOfRatio(ratio), Epsilon.REPRESENTABLE_MAX_EPSILON, UNSTATED_WHY)
        }
    }
}
