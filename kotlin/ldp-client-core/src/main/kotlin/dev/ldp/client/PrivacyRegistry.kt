package dev.ldp.client

/** The privacy function of each mechanism's family, and its derived fields, from the artifacts on the class path. */
public object PrivacyRegistry {
    /** The registered mechanisms with a privacy function on the class path, in registry order. */
    @JvmField
    public val CHECKED: List<String> = Registry.ENCODED

    /** The facts with what the Python spec class says of the mechanism (its ε limit, a loose claim). */
    private fun limited(facts: MechanismPrivacy, mechanism: String): MechanismPrivacy {
        val claims = if (mechanism in SpecFields.LOOSE_CLAIMS) facts.copy(claimMatches = false) else facts
        val limit = SpecFields.EPSILON_LIMITS[mechanism] ?: return claims
        return claims.copy(maxEpsilon = limit.first, maxEpsilonReason = limit.second)
    }

    /**
     * The privacy facts of canonical spec fields, from the family's function in
     * `dev.ldp.client.privacy`, after the range checks of the spec's constructor (a
     * [SpecException] naming what is wrong, or the artifact to add when the mechanism's is not
     * on the class path); null for a mechanism no artifact has a privacy function for.
     */
    @JvmStatic
    public fun mechanismPrivacy(fields: JsonObject): MechanismPrivacy? {
        val mechanism = fields["mechanism"].toString()
        SpecFields.DOMAIN_LIMITS[mechanism]?.let { PrivacyFields.checkDomainLimit(fields, it.first, it.second) }
        PrivacyFields.checkStatedEpsilons(fields)
        val family = Families.find(mechanism)
            ?: if (mechanism in Registry.ARTIFACTS) specFail(Families.missing(mechanism)) else return null
        return family.privacy(fields, ::mechanismPrivacy)?.let { limited(it, mechanism) }
    }

    /** Complete a mechanism's derived fields in canonical fields, in place (its `@canonical` function; most have none). */
    @JvmStatic
    public fun completeFields(out: MutableMap<String, Any?>) {
        val mechanism = out["mechanism"] as? String ?: return
        Families.find(mechanism)?.completeFields(out)
    }
}
