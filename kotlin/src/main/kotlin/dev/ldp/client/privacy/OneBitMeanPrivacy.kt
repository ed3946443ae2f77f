package dev.ldp.client.privacy

import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import java.math.BigInteger

/**
 * 1BitMean (the port of `js/src/privacy/onebitmean.ts`; `ldp/specs/onebitmean.py`): one report keeps
 * with k = γ + (1 − 2γ)p between the ends of the range (every other input mixes them), ratio k/(1 − k).
 * With `rounding = "alpha"` each of the grid + 1 grid points has a memoized bit of ratio p/(1 − p),
 * which bounds any number of reports of that point; r reports of one point are (r·ε₁)-DP.
 *
 * @privacy onebitmean
 */
public fun oneBitMeanPrivacy(fields: JsonObject): MechanismPrivacy {
    val half = Fraction.of(1L, 2L)
    val p = PrivacyFields.keep(fields, half, "1/2")
    val gamma = PrivacyFields.prob(fields, "gamma")
    if (gamma >= half) throw SpecException("onebitmean: gamma must be below 1/2, got $gamma")
    val rounding = fields["rounding"]
    val memoized = rounding == "alpha"
    if (!memoized && rounding != "none") throw SpecException("onebitmean: rounding must be none or alpha, got $rounding")
    if (!memoized && gamma.num.signum() != 0) throw SpecException("onebitmean: gamma applies with rounding='alpha' only")
    val k = gamma + (Fraction.ONE - (gamma + gamma)) * p
    if (!memoized) return MechanismPrivacy.fresh(PrivacyFields.odds(k))
    val grid = PrivacyFields.int(fields, "grid")
    if (grid < BigInteger.ONE || grid > BigInteger.valueOf(1024)) throw SpecException("onebitmean: grid must be in [1, 1024], got $grid")
    return MechanismPrivacy.memoized(PrivacyFields.odds(k), PrivacyFields.odds(p), grid + BigInteger.ONE).copy(memoLinear = true)
}
