package dev.ldp.client

import java.math.BigDecimal
import java.math.MathContext
import java.math.RoundingMode

/**
 * Python's text form of a float (`repr`, as `json.dumps` writes it): the port of `js/src/float.ts`.
 *
 * The digits are the shortest that read back as the same double, the closest to its exact value among
 * them (as Python's and JavaScript's); they are found here with exact decimal arithmetic, not with
 * `Double.toString` (not the shortest digits before Java 19, nor on every Android release). The layout
 * is Python's: fixed notation for decimal exponents −4 ≤ e < 16 with `.0` on integral values, otherwise
 * `d.ddde±XX`.
 */
public object FloatText {
    /** `x` as Python writes it (`1.0`, `1e-05`, `1e+16`, `-0.0`, `NaN`, `Infinity`). */
    @JvmStatic
    public fun of(x: Double): String {
        if (x.isNaN()) return "NaN"
        if (x.isInfinite()) return if (x > 0) "Infinity" else "-Infinity"
        if (x == 0.0) return if (1.0 / x < 0) "-0.0" else "0.0"
        val sign = if (x < 0) "-" else ""
        val (digits, exp) = shortestDigits(Math.abs(x))
        if (exp < -4 || exp >= 16) {
            val frac = if (digits.length > 1) "." + digits.substring(1) else ""
            val e = Math.abs(exp).toString().padStart(2, '0')
            return "$sign${digits[0]}${frac}e${if (exp < 0) "-" else "+"}$e"
        }
        if (exp < 0) return "${sign}0.${"0".repeat(-exp - 1)}$digits"
        val intPart = digits.substring(0, minOf(digits.length, exp + 1)).padEnd(exp + 1, '0')
        val fracPart = if (digits.length > exp + 1) digits.substring(exp + 1) else "0"
        return "$sign$intPart.$fracPart"
    }

    /**
     * `x` as Python's `%g` (`%.{precision}g`) writes it: `precision` significant digits, correctly rounded
     * (ties to even on the exact value), trailing zeros removed, scientific `d.ddde±XX` below 1e-4 or
     * from 10^precision (the port of `formatG` of `js/src/float.ts`; limits and ranges in messages).
     */
    @JvmStatic
    @JvmOverloads
    public fun formatG(x: Double, precision: Int = 6): String {
        if (x.isNaN()) return "nan"
        if (x.isInfinite()) return if (x > 0) "inf" else "-inf"
        if (x == 0.0) return if (1.0 / x < 0) "-0" else "0"
        val rounded = BigDecimal(x).round(MathContext(precision, RoundingMode.HALF_EVEN))
        val exp = rounded.precision() - rounded.scale() - 1
        val strip = { t: String -> if ('.' in t) t.trimEnd('0').trimEnd('.') else t }
        if (exp < -4 || exp >= precision) {
            val digits = rounded.unscaledValue().abs().toString()
            val mantissa = if (digits.length > 1) "${digits[0]}.${digits.substring(1)}" else digits
            val e = Math.abs(exp).toString().padStart(2, '0')
            return "${if (x < 0) "-" else ""}${strip(mantissa)}e${if (exp < 0) "-" else "+"}$e"
        }
        return strip(rounded.setScale(maxOf(precision - 1 - exp, 0)).toPlainString())
    }

    /**
     * The shortest decimal digits d₁d₂… (no trailing zeros) and exponent e with x = d₁.d₂… × 10^e read
     * back as `x` (> 0, finite), the closest to `x` among the candidates of that length.
     */
    internal fun shortestDigits(x: Double): Pair<String, Int> {
        val exact = BigDecimal(x)
        for (p in 1..17) {
            val nearest = exact.round(MathContext(p, RoundingMode.HALF_EVEN))
            // the nearest p-digit decimal, and its neighbours (the round-trip interval is asymmetric at powers of 2)
            val ulp = BigDecimal.ONE.scaleByPowerOfTen(nearest.precision() - nearest.scale() - p)
            var best: BigDecimal? = null
            for (candidate in listOf(nearest, nearest.subtract(ulp), nearest.add(ulp))) {
                if (candidate.signum() <= 0 || candidate.toDouble() != x) continue
                if (best == null || candidate.subtract(exact).abs() < best.subtract(exact).abs()) best = candidate
            }
            if (best != null) {
                val stripped = best.stripTrailingZeros()
                val digits = stripped.unscaledValue().toString()
                return Pair(digits, digits.length - 1 - stripped.scale())
            }
        }
        throw IllegalStateException("no 17-digit decimal reads back as $x") // every double has one
    }

}
