package dev.ldp.client

import java.math.BigInteger

/**
 * An exact rational in lowest terms with a positive denominator (probabilities): the port of
 * `js/src/fraction.ts`. Equal fractions are [equals]; [toString] is Python's `str(Fraction)`.
 */
public class Fraction private constructor(
    /** The numerator (any sign). */
    @JvmField public val num: BigInteger,
    /** The denominator, > 0 and coprime with [num]. */
    @JvmField public val den: BigInteger,
) : Comparable<Fraction> {
    public operator fun plus(other: Fraction): Fraction = of(num * other.den + other.num * den, den * other.den)

    public operator fun minus(other: Fraction): Fraction = of(num * other.den - other.num * den, den * other.den)

    public operator fun times(other: Fraction): Fraction = of(num * other.num, den * other.den)

    public operator fun div(other: Fraction): Fraction = of(num * other.den, den * other.num)

    /** This fraction divided by the integer `n`. */
    public fun divInt(n: BigInteger): Fraction = of(num, den * n)

    override fun compareTo(other: Fraction): Int = (num * other.den).compareTo(other.num * den)

    override fun equals(other: Any?): Boolean = other is Fraction && num == other.num && den == other.den

    override fun hashCode(): Int = 31 * num.hashCode() + den.hashCode()

    /** `"a/b"`, or `"a"` when b = 1 (Python's `str(Fraction)`). */
    override fun toString(): String = if (den == BigInteger.ONE) num.toString() else "$num/$den"

    /** The nearest double (ties to even), as Python's `float(Fraction)`. */
    public fun toDouble(): Double = Exact.fractionToDouble(num, den)

    public companion object {
        @JvmField public val ZERO: Fraction = Fraction(BigInteger.ZERO, BigInteger.ONE)

        @JvmField public val ONE: Fraction = Fraction(BigInteger.ONE, BigInteger.ONE)

        /** num/den in lowest terms; an [LdpException] for a zero denominator. */
        @JvmStatic
        @JvmOverloads
        public fun of(num: BigInteger, den: BigInteger = BigInteger.ONE): Fraction {
            if (den.signum() == 0) fail("zero denominator")
            var n = num
            var d = den
            if (d.signum() < 0) {
                n = n.negate()
                d = d.negate()
            }
            val g = n.gcd(d)
            return if (g == BigInteger.ONE || g.signum() == 0) Fraction(n, d) else Fraction(n / g, d / g)
        }

        /** num/den of longs. */
        @JvmStatic
        public fun of(num: Long, den: Long): Fraction = of(BigInteger.valueOf(num), BigInteger.valueOf(den))

        private val RATIO = Regex("""^([+-]?\d+)\s*/\s*([+-]?\d+)$""")
        private val DECIMAL = Regex("""^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$""")

        /** The exact value of a decimal or fraction string: `"3/4"`, `"0.39"`, `"1e-3"`, `"-2"`; an [LdpException] otherwise. */
        @JvmStatic
        public fun parse(text: String): Fraction {
            val t = text.trim()
            RATIO.matchEntire(t)?.let { return of(BigInteger(it.groupValues[1].removePrefix("+")), BigInteger(it.groupValues[2].removePrefix("+"))) }
            val m = DECIMAL.matchEntire(t)
            if (m == null || (m.groupValues[2].isEmpty() && m.groupValues[3].isEmpty())) fail("not a fraction: ${Text.clip(text, 80, true)}")
            val (sign, whole, frac, expText) = m.destructured
            val expGiven = if (expText.isEmpty()) 0L else expText.removePrefix("+").toLongOrNull() ?: fail("exponent out of range: ${Text.clip(text)}")
            val exp = expGiven - frac.length
            if (Math.abs(exp) > 100_000) fail("exponent out of range: ${Text.clip(text)}")
            var n = BigInteger((whole + frac).ifEmpty { "0" })
            if (sign == "-") n = n.negate()
            return if (exp >= 0) of(n * BigInteger.TEN.pow(exp.toInt())) else of(n, BigInteger.TEN.pow((-exp).toInt()))
        }

        /** A float read as the shortest decimal that prints it (0.75 is 3/4), as Python's `Fraction(repr(x))`. */
        @JvmStatic
        public fun ofDouble(x: Double): Fraction {
            if (x.isNaN() || x.isInfinite()) fail("not a finite number: $x")
            return parse(FloatText.of(x))
        }

        /** The exact value of a finite double (a dyadic rational). */
        @JvmStatic
        public fun exactDouble(x: Double): Fraction {
            val (n, d) = Exact.doubleToFraction(x)
            return of(n, d)
        }

        /** lcm(a, b) of positive integers. */
        @JvmStatic
        public fun lcm(a: BigInteger, b: BigInteger): BigInteger = a / a.gcd(b) * b
    }
}
