package dev.ldp.client.privacy

import dev.ldp.client.Exact
import dev.ldp.client.FloatText
import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import java.math.BigInteger

/** Largest input grid (`MAX_GRID`: tables are (grid + 1) × ~2·grid integers). */
private const val MAX_GRID = 1024L

/** Smallest positive normal double (`SMALLEST_NORMAL`). */
private const val SMALLEST_NORMAL = java.lang.Double.MIN_NORMAL

private fun lowHigh(fields: JsonObject): Pair<Double, Double> = PrivacyFields.float(fields, "low") to PrivacyFields.float(fields, "high")

/**
 * The value range and the grid, as `NumericSpec._init_range`, `_init_grid` and `_check_resolution` check
 * them: low < high, high − low finite, (high − low)/grid a normal double.
 */
private fun checkRange(fields: JsonObject, grid: BigInteger) {
    val mechanism = PrivacyFields.mechanism(fields)
    val (low, high) = lowHigh(fields)
    val range = "[${FloatText.of(low)}, ${FloatText.of(high)}]"
    if (!(low < high)) throw SpecException("$mechanism: need low < high, got low=${FloatText.of(low)}, high=${FloatText.of(high)}")
    val width = high - low
    if (width.isInfinite()) throw SpecException("$mechanism: the range $range is too wide: high - low overflows a double")
    val resolution = width / grid.toDouble()
    if (resolution < SMALLEST_NORMAL) {
        throw SpecException(
            "$mechanism: the range $range is too narrow: its resolution (high - low)/$grid = " +
                "${FloatText.of(resolution)} is below the smallest normal double ${FloatText.of(SMALLEST_NORMAL)}",
        )
    }
}

/**
 * Duchi's mechanism and stochastic rounding send one of two values, the likelier with p > 1/2: ratio
 * p/(1 − p) (the port of `js/src/privacy/numeric.ts`; `ldp/specs/numeric.py`), after the range and
 * value-scale checks of the Python constructor.
 *
 * @privacy duchi stochastic-rounding
 */
public fun binaryNumericPrivacy(fields: JsonObject): MechanismPrivacy {
    checkRange(fields, BigInteger.ONE)
    val p = PrivacyFields.keep(fields, Fraction.of(1L, 2L), "1/2")
    // one report's unbiased native estimate is ±C′, C′ = 1/(2p − 1) (Duchi's outputs; stochastic rounding's C′(2b − 1))
    val c = Exact.fractionToDouble(p.den, BigInteger.valueOf(2) * p.num - p.den)
    val (low, high) = lowHigh(fields)
    PrivacyFields.checkValueScale(PrivacyFields.mechanism(fields), low, high, fields["epsilon"] as? Double ?: Double.NaN, c)
    return MechanismPrivacy.fresh(PrivacyFields.odds(p))
}

/**
 * The grid mechanisms: their probabilities are a table the server computes, not spec fields, so their
 * ratio is checked when an encoder is given the table ([dev.ldp.client.mechanisms.NumericTable.checkClaim]);
 * here only the range, the grid, Gaussian's δ and the stated ε are checked.
 *
 * @privacy piecewise hybrid laplace gaussian
 */
public fun gridPrivacy(fields: JsonObject): MechanismPrivacy {
    val mechanism = PrivacyFields.mechanism(fields)
    val (low, high) = lowHigh(fields)
    if (!(low < high)) throw SpecException("$mechanism: need low < high, got low=${FloatText.of(low)}, high=${FloatText.of(high)}")
    checkRange(fields, PrivacyFields.intIn(fields, "grid", 1L, MAX_GRID))
    if (mechanism == "gaussian") {
        val delta = PrivacyFields.float(fields, "delta")
        if (!(delta > 0 && delta < 1)) throw SpecException("gaussian: delta must be in (0, 1), got ${FloatText.of(delta)}")
    }
    return MechanismPrivacy.fresh(null)
}
