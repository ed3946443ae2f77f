@file:JvmName("Hashing")

package dev.ldp.client.hashing

import dev.ldp.client.Fraction
import dev.ldp.client.LdpException
import java.math.BigInteger

/** The Mersenne prime P = 2^31 − 1 of the local-hashing family (OLH, BLH, PEM, TreeHist, LOLOHA). */
public const val LH_PRIME: Long = 2147483647L

/** The number of hash functions of the family: seeds s lie in [0, (P − 1)·P) (below 2^62, so a `Long`). */
public const val LH_SEED_SPACE: Long = (LH_PRIME - 1) * LH_PRIME

/**
 * The coefficients (a, b) of the hash named by [seed]: a = ⌊s/P⌋ + 1 ∈ [1, P),
 * b = s mod P.
 *
 * @throws LdpException if [seed] is outside [0, [LH_SEED_SPACE]).
 */
public fun lhCoefficients(seed: Long): LongArray {
    requireArg(seed in 0 until LH_SEED_SPACE) { "local-hashing seed must be in [0, $LH_SEED_SPACE), got $seed" }
    return longArrayOf(seed / LH_PRIME + 1, seed % LH_PRIME)
}

/**
 * The bucket in [0, [g]) of domain index [index] under the hash [seed]:
 * ((a·x + b) mod P)·g // P, exactly (x is reduced mod P first, so any
 * non-negative index works; every product stays below 2^63).
 *
 * @throws LdpException if [seed] is outside the seed space,
 *   [index] is negative, or [g] is outside [1, P] (more buckets than P
 *   inputs would leave some empty).
 */
public fun lhBucket(seed: Long, index: Long, g: Long): Int {
    val (a, b) = lhCoefficients(seed)
    requireArg(index >= 0) { "domain index must not be negative, got $index" }
    requireArg(g in 1..LH_PRIME) { "number of buckets g must be in [1, 2^31 - 1], got $g" }
    val v = (a * (index % LH_PRIME) + b) % LH_PRIME // a, x mod P < 2^31: below 2^62
    return (v * g / LH_PRIME).toInt() // v, g < 2^31: below 2^62
}

/**
 * P[H(x) = H(x′)] for x ≠ x′ over the family, exactly: the aggregator's
 * constant. With s = ⌊P/g⌋ and r = P mod g, r buckets receive s + 1 of the P
 * residues and g − r receive s, so the number of ordered colliding pairs is
 * r(s + 1)s + (g − r)s(s − 1), out of P(P − 1).
 *
 * @throws LdpException if [g] is outside [1, P].
 */
public fun lhCollisionProbability(g: Long): Fraction {
    requireArg(g in 1..LH_PRIME) { "number of buckets g must be in [1, 2^31 - 1], got $g" }
    val p = BigInteger.valueOf(LH_PRIME)
    val big = BigInteger.valueOf(g)
    val s = p.divide(big)
    val r = p.mod(big)
    val same = r.multiply(s.add(BigInteger.ONE)).multiply(s).add(big.subtract(r).multiply(s).multiply(s.subtract(BigInteger.ONE)))
    return Fraction.of(same, p.multiply(p.subtract(BigInteger.ONE)))
}

/** An [LdpException] with [message] unless [condition] (the argument checks of this package). */
internal inline fun requireArg(condition: Boolean, message: () -> String) {
    if (!condition) throw LdpException(message())
}
