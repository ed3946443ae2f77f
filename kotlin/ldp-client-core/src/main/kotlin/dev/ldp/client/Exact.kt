package dev.ldp.client

import java.math.BigInteger

/**
 * Exact ratios and e^ε (the port of `js/src/exact.ts`, itself of `ldp/exact.py`): doubles as exact
 * fractions, correctly rounded conversions back, ln of an exact ratio, and the certified comparison of
 * a probability ratio with e^ε that every privacy claim rests on ([ratioWithin], [epsilonBoundOfRatio]).
 */
public object Exact {
    /** The exact value of a finite double as (numerator, denominator a power of two). */
    @JvmStatic
    public fun doubleToFraction(x: Double): Pair<BigInteger, BigInteger> {
        if (x.isNaN() || x.isInfinite()) fail("not a finite number: $x")
        val bits = java.lang.Double.doubleToRawLongBits(x)
        val exponent = ((bits ushr 52) and 0x7ff).toInt()
        var mantissa = bits and ((1L shl 52) - 1)
        if (exponent != 0) mantissa = mantissa or (1L shl 52)
        val e = (if (exponent == 0) 1 else exponent) - 1075
        var m = BigInteger.valueOf(mantissa)
        if (bits < 0) m = m.negate()
        return if (e >= 0) Pair(m.shiftLeft(e), BigInteger.ONE) else Pair(m, BigInteger.ONE.shiftLeft(-e))
    }

    /** num/den as the nearest double (ties to even), as Python's `float(Fraction)`; ±Infinity beyond range. */
    @JvmStatic
    public fun fractionToDouble(num: BigInteger, den: BigInteger): Double {
        var n = num
        var d = den
        if (d.signum() < 0) {
            n = n.negate()
            d = d.negate()
        }
        if (n.signum() == 0) return 0.0
        val negative = n.signum() < 0
        if (negative) n = n.negate()
        val s = 55 - (n.bitLength() - d.bitLength()) // a quotient of 55 or 56 bits
        val scaledNum = if (s >= 0) n.shiftLeft(s) else n
        val scaledDen = if (s >= 0) d else d.shiftLeft(-s)
        val qr = scaledNum.divideAndRemainder(scaledDen)
        var q = qr[0]
        if (qr[1].signum() != 0) q = q.setBit(0) // sticky bit below the rounding bit
        // q < 2^57 converts exactly to a long, then rounds once to a double; the scaling by 2^-s is exact
        // in the normal range (subnormal results may round twice, as the TS client: never a probability)
        val value = Math.scalb(q.toLong().toDouble(), -s)
        return if (negative) -value else value
    }

    private fun lnBig(n: BigInteger): Double {
        val shift = maxOf(0, n.bitLength() - 53)
        return StrictMath.log(n.shiftRight(shift).toDouble()) + shift * LN2
    }

    private val LN2 = StrictMath.log(2.0)

    /** ln(ratio) as a double (Python's `epsilon_of_ratio`); an [LdpException] for a ratio ≤ 0. */
    @JvmStatic
    public fun epsilonOfRatio(r: Fraction): Double {
        if (r.num.signum() <= 0) fail("a probability ratio must be positive")
        val x = fractionToDouble(r.num, r.den)
        return if (!x.isInfinite() && x != 0.0) StrictMath.log(x) else lnBig(r.num) - lnBig(r.den)
    }

    private const val FIXED = 256 // fraction bits of the fixed-point exp

    /**
     * e^x rounded to the nearest double, for 0 ≤ x < 709 (Python's `exp`, glibc's, is correctly
     * rounded wherever the ledger uses it): 256-bit fixed point, halving to below 2^-8, Taylor series,
     * squaring back. Outside [0, 709): [StrictMath.exp].
     */
    @JvmStatic
    public fun expCorrectlyRounded(x: Double): Double {
        if (!(x >= 0 && x < 709)) return StrictMath.exp(x)
        if (x == 0.0) return 1.0
        val (num, den) = doubleToFraction(x)
        val one = BigInteger.ONE.shiftLeft(FIXED)
        var halvings = 0
        while (x / Math.pow(2.0, halvings.toDouble()) >= Math.pow(2.0, -8.0)) halvings++
        val y = num.shiftLeft(FIXED) / den.shiftLeft(halvings) // x / 2^halvings in fixed point (truncated)
        var sum = one
        var term = one
        var n = 1L
        while (term.signum() != 0) {
            term = term * y / BigInteger.valueOf(n).shiftLeft(FIXED)
            sum += term
            n++
        }
        repeat(halvings) { sum = (sum * sum).shiftRight(FIXED) }
        return fractionToDouble(sum, one)
    }

    private val SAFETY_NUM = BigInteger.ONE.shiftLeft(50) - BigInteger.ONE
    private val SAFETY_DEN = BigInteger.ONE.shiftLeft(50)

    /** True when ratio ≤ exp(ε)·(1 − 2^-50), exactly (Python's `ratio_within`). */
    @JvmStatic
    public fun ratioWithin(r: Fraction, epsilon: Double): Boolean {
        val e = expCorrectlyRounded(epsilon)
        if (e.isInfinite()) return true
        val (m, d) = doubleToFraction(e)
        return r.num * d * SAFETY_DEN <= m * SAFETY_NUM * r.den
    }

    /** The next double above `x` (toward +∞). */
    @JvmStatic
    public fun nextUp(x: Double): Double = Math.nextUp(x)

    /** ln(ratio) rounded up: the smallest double ε (from ln's) that [ratioWithin] certifies (Python's `epsilon_bound_of_ratio`). */
    @JvmStatic
    public fun epsilonBoundOfRatio(r: Fraction): Double {
        if (r.num == r.den) return 0.0
        var eps = epsilonOfRatio(r)
        while (!ratioWithin(r, eps)) eps = maxOf(nextUp(eps), eps + Math.pow(2.0, -53.0))
        return eps
    }
}
