package dev.ldp.client.privacy

import dev.ldp.client.Exact
import dev.ldp.client.Fraction

/**
 * The math of a two-round chain (a memoized round 1, a fresh round 2) that the longitudinal chains and
 * LOLOHA share (Python's `ldp.chain_math`; the TS client's `memoReportEpsilon` of
 * `js/src/privacy/longitudinal.ts`): what one report supports, and the per-report ε the ledger charges
 * a memo key.
 */
public object ChainMath {
    /** (A, B): one report supports v with A when x = v and B otherwise (`ldp.chain_math.chain_support`). */
    @JvmStatic
    public fun support(p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction): Pair<Fraction, Fraction> =
        Pair(p1 * p2 + (Fraction.ONE - p1) * q2, q1 * p2 + (Fraction.ONE - q1) * q2)

    /** ln of a probability (or a ratio), as a double. */
    private fun ln(f: Fraction): Double = Exact.epsilonOfRatio(f)

    private fun logAddExp(a: Double, b: Double): Double {
        if (a == Double.NEGATIVE_INFINITY) return b
        if (b == Double.NEGATIVE_INFINITY) return a
        return maxOf(a, b) + Math.log1p(Math.exp(-Math.abs(a - b)))
    }

    /** L-GRR: max over (n_x, n_x′) of the log ratio of r reports, the rest spread evenly over the k − 2 others. */
    private fun grrMemoLogRatio(p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction, k: Long, r: Int): Double {
        val lp1 = ln(p1)
        val lq1 = ln(q1)
        val rho = ln(p2) - ln(q2)
        var best = Double.NEGATIVE_INFINITY
        for (j in 0..r) {
            for (l in 0..(r - j)) {
                val m = r - j - l
                var logS = Double.NEGATIVE_INFINITY
                if (k > 2) {
                    val base = m / (k - 2)
                    val extra = m - base * (k - 2)
                    logS = logAddExp(
                        if (extra > 0) Math.log(extra.toDouble()) + (base + 1) * rho else Double.NEGATIVE_INFINITY,
                        Math.log((k - 2 - extra).toDouble()) + base * rho,
                    )
                } else if (m > 0) {
                    continue
                }
                val top = logAddExp(logAddExp(lp1 + j * rho, lq1 + l * rho), lq1 + logS)
                val bottom = logAddExp(logAddExp(lq1 + j * rho, lp1 + l * rho), lq1 + logS)
                best = maxOf(best, top - bottom)
            }
        }
        return best
    }

    /** The unary chains: the worst count of ones on x's bit times the worst on x′'s. */
    private fun unaryMemoLogRatio(p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction, r: Int): Double {
        val one = Fraction.ONE
        val a = ln(p2)
        val b = ln(one - p2)
        val c = ln(q2)
        val d = ln(one - q2)
        val x1 = ln(p1)
        val x0 = ln(one - p1)
        val o1 = ln(q1)
        val o0 = ln(one - q1)
        var up = Double.NEGATIVE_INFINITY
        var down = Double.NEGATIVE_INFINITY
        for (n in 0..r) {
            val on = n * a + (r - n) * b
            val off = n * c + (r - n) * d
            val setByX = logAddExp(x1 + on, x0 + off)
            val setByOther = logAddExp(o1 + on, o0 + off)
            up = maxOf(up, setByX - setByOther)
            down = maxOf(down, setByOther - setByX)
        }
        return up + down
    }

    /**
     * Python's `memo_report_epsilon`: the smallest ε′ ≥ ε₁ with ε(r reports) ≤ min(r·ε′, ε∞) for every
     * r, checked for each r < ε∞/ε₁ up to 400 (L-GRR, and LOLOHA as L-GRR over its g buckets) or 4,000
     * (unary), else the fresh round's own bound when larger.
     *
     * @param grr randomized response over `k` values in both rounds (else the unary chains' bits)
     * @param p1 round 1's probability of the true value (bit)
     * @param q1 round 1's probability of each other value (a 0 bit's of becoming 1)
     * @param p2 round 2's, of the memo
     * @param q2 round 2's, of each other value (of a 0 memo bit)
     * @param one ε₁ (the stated or derived per-report ε)
     * @param inf ε∞
     */
    @JvmStatic
    public fun memoReportEpsilon(grr: Boolean, p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction, k: Long, one: Double, inf: Double): Double {
        val limit = Math.ceil(inf / one)
        if (limit > (if (grr) 400 else 4000)) {
            val fresh = if (grr) {
                Exact.epsilonBoundOfRatio(p2 / q2)
            } else {
                val a = p2 / q2
                val b = (Fraction.ONE - q2) / (Fraction.ONE - p2)
                2 * Exact.epsilonBoundOfRatio(if (a >= b) a else b)
            }
            return maxOf(one, fresh)
        }
        var worst = one
        for (r in 2..limit.toInt()) {
            val log = if (grr) grrMemoLogRatio(p1, q1, p2, q2, k, r) else unaryMemoLogRatio(p1, q1, p2, q2, r)
            worst = maxOf(worst, minOf(inf, log * (1 + 1e-9) + 1e-12) / r)
        }
        return worst
    }
}
