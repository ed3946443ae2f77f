package dev.ldp.client

/**
 * Pearson's chi-square test for the statistical tests of the encoders: the statistic, the survival
 * function of the χ² distribution (the regularized upper incomplete gamma Q(df/2, x/2), by its series
 * or continued fraction as in Numerical Recipes §6.2, relative error below 1e-12 here), and the critical
 * value at α by bisection on it.
 */
object ChiSquare {
    /** Σ (observed − expected)² / expected over the cells. */
    fun statistic(observed: LongArray, expected: DoubleArray): Double {
        require(observed.size == expected.size)
        return observed.indices.sumOf { i -> (observed[i] - expected[i]).let { it * it } / expected[i] }
    }

    /** P[χ²_df ≥ x]. */
    fun survival(x: Double, df: Int): Double = if (x <= 0) 1.0 else upperGamma(df / 2.0, x / 2.0)

    /** The x with P[χ²_df ≥ x] = α. */
    fun critical(alpha: Double, df: Int): Double {
        var lo = 0.0
        var hi = 1.0
        while (survival(hi, df) > alpha) hi *= 2
        repeat(200) {
            val mid = (lo + hi) / 2
            if (survival(mid, df) > alpha) lo = mid else hi = mid
        }
        return hi
    }

    private fun lnGamma(x: Double): Double { // Lanczos, g = 7, n = 9
        val c = doubleArrayOf(
            0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7,
        )
        val z = x - 1
        var sum = c[0]
        for (i in 1 until 9) sum += c[i] / (z + i)
        val t = z + 7.5
        return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(sum)
    }

    /** Q(a, x) = Γ(a, x)/Γ(a). */
    private fun upperGamma(a: Double, x: Double): Double {
        val front = Math.exp(-x + a * Math.log(x) - lnGamma(a))
        if (x < a + 1) { // series for P(a, x)
            var term = 1.0 / a
            var sum = term
            var n = a
            while (Math.abs(term) > Math.abs(sum) * 1e-16) {
                n += 1
                term *= x / n
                sum += term
            }
            return 1 - sum * front
        }
        // continued fraction for Q(a, x) (modified Lentz)
        val tiny = 1e-300
        var b = x + 1 - a
        var c = 1 / tiny
        var d = 1 / b
        var h = d
        var i = 1
        while (true) {
            val an = -i * (i - a)
            b += 2
            d = an * d + b
            if (Math.abs(d) < tiny) d = tiny
            c = b + an / c
            if (Math.abs(c) < tiny) c = tiny
            d = 1 / d
            val delta = d * c
            h *= delta
            if (Math.abs(delta - 1) < 1e-16 || i > 10000) break
            i++
        }
        return front * h
    }
}
