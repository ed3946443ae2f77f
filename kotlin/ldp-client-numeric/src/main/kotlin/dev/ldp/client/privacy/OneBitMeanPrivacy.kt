package dev.ldp.client.privacy

import dev.ldp.client.Exact
import dev.ldp.client.FloatText
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
    val low = PrivacyFields.float(fields, "low")
    val high = PrivacyFields.float(fields, "high")
    val range = "[${FloatText.of(low)}, ${FloatText.of(high)}]"
    if (!(low < high)) throw SpecException("onebitmean: need low < high, got low=${FloatText.of(low)}, high=${FloatText.of(high)}")
    val rounding = fields["rounding"]
    val memoized = rounding == "alpha"
    if (!memoized && rounding != "none") throw SpecException("onebitmean: rounding must be one of ('none', 'alpha'), got '$rounding'")
    if (!memoized && fields["grid"] != null) {
        throw SpecException("onebitmean: grid applies with rounding='alpha' only (plain 1BitMean sends a fresh bit per report)")
    }
    if (!memoized && PrivacyFields.prob(fields, "gamma").num.signum() != 0) {
        throw SpecException(
            "onebitmean: gamma (output perturbation of a memoized bit) applies with rounding='alpha' only; " +
                "without it each bit is fresh and epsilon alone sets its privacy",
        )
    }
    val grid = if (memoized) PrivacyFields.intIn(fields, "grid", 1L, MAX_GRID) else null
    val width = high - low
    if (width.isInfinite()) throw SpecException("onebitmean: the range $range is too wide: high - low overflows a double")
    if (width / (grid ?: BigInteger.ONE).toDouble() < java.lang.Double.MIN_NORMAL) {
        throw SpecException(
            "onebitmean: the range $range is too narrow for grid=${grid ?: "None"}: its step " +
                "is below the smallest normal double ${FloatText.of(java.lang.Double.MIN_NORMAL)}",
        )
    }
    val half = Fraction.of(1L, 2L)
    val p = PrivacyFields.keep(fields, half, "1/2")
    val gamma = PrivacyFields.prob(fields, "gamma")
    if (gamma >= half) throw SpecException("onebitmean: gamma must be below 1/2, got $gamma")
    val k = gamma + (Fraction.ONE - (gamma + gamma)) * p
    // one report's unbiased native estimate is C′(2b − 1), C′ = 1/(2k − 1)
    val c = Exact.fractionToDouble(k.den, BigInteger.valueOf(2) * k.num - k.den)
    PrivacyFields.checkValueScale("onebitmean", low, high, fields["epsilon"] as? Double ?: Double.NaN, c)
    if (grid == null) return MechanismPrivacy.fresh(PrivacyFields.odds(k))
    return MechanismPrivacy.memoized(PrivacyFields.odds(k), PrivacyFields.odds(p), grid + BigInteger.ONE).copy(memoLinear = true)
}

/** Largest α grid (`MAX_GRID`). */
private const val MAX_GRID = 1024L

/** The α grid when a memoized spec gives none (Python's `DEFAULT_ALPHA_GRID`). */
private val DEFAULT_ALPHA_GRID: BigInteger = BigInteger.valueOf(16)

/**
 * A memoized (α-rounded) spec without a grid takes the default grid, as `OneBitMean.__init__` does (the
 * canonical fields, hence the fingerprint, hold it; the port of `oneBitMeanFields` of
 * `js/src/privacy/onebitmean.ts`).
 *
 * @canonical onebitmean
 */
public fun oneBitMeanFields(out: MutableMap<String, Any?>) {
    if (out["rounding"] == "alpha" && out["grid"] == null) out["grid"] = DEFAULT_ALPHA_GRID
}
