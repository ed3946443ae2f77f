@file:JvmName("Mmh3")

package dev.ldp.client.hashing

import dev.ldp.client.LdpException
import org.apache.commons.codec.digest.MurmurHash3

/** The largest seed of MurmurHash3: seeds are unsigned 32-bit integers. */
public const val MMH3_MAX_SEED: Long = 0xFFFF_FFFFL

/**
 * The two 64-bit halves of a MurmurHash3 x64-128 hash, as the vectors name
 * them: [h1] is the digest's first 8 bytes and [h2] its last 8, each read
 * little-endian as an **unsigned** 64-bit integer. A Kotlin `Long` holds the
 * same 64 bits signed; use [h1Unsigned]/[h2Unsigned] or the `mod` helpers,
 * never the signed value, in arithmetic.
 */
public class Mmh3Hash(public val h1: Long, public val h2: Long) {
    /** h1 as the unsigned integer Python's `mmh3` gives. */
    public fun h1Unsigned(): java.math.BigInteger = unsigned64(h1)

    /** h2 as the unsigned integer Python's `mmh3` gives. */
    public fun h2Unsigned(): java.math.BigInteger = unsigned64(h2)

    /** h1 (unsigned) mod [m], exactly: the position of a Count-Mean Sketch row. */
    public fun h1Mod(m: Int): Int {
        requireArg(m > 0) { "modulus must be positive, got $m" }
        return java.lang.Long.remainderUnsigned(h1, m.toLong()).toInt()
    }

    /** h2 (unsigned) mod [m], exactly. */
    public fun h2Mod(m: Int): Int {
        requireArg(m > 0) { "modulus must be positive, got $m" }
        return java.lang.Long.remainderUnsigned(h2, m.toLong()).toInt()
    }

    /** The canonical 16-byte digest: h1 then h2, each little-endian (Python's `mmh3.hash_bytes`). */
    public fun digest(): ByteArray {
        val out = ByteArray(16)
        for (i in 0 until 8) {
            out[i] = (h1 ushr (8 * i)).toByte()
            out[8 + i] = (h2 ushr (8 * i)).toByte()
        }
        return out
    }

    override fun equals(other: Any?): Boolean = other is Mmh3Hash && other.h1 == h1 && other.h2 == h2

    override fun hashCode(): Int = (h1 * 31 + h2).hashCode()

    override fun toString(): String = "Mmh3Hash(h1=${java.lang.Long.toUnsignedString(h1)}, h2=${java.lang.Long.toUnsignedString(h2)})"
}

/** The unsigned value of the 64 bits of [x]. */
internal fun unsigned64(x: Long): java.math.BigInteger =
    java.math.BigInteger(java.lang.Long.toUnsignedString(x))

/**
 * MurmurHash3 x64-128 of [data] with [seed], an unsigned 32-bit integer
 * (0 ≤ seed ≤ 2^32 − 1: RAPPOR cohorts and sketch salts ≥ 2^31 occur), as
 * Python's `mmh3.hash128(data, seed, signed=False)` computes it.
 *
 * Apache Commons Codec's `MurmurHash3.hash128x64` does the work: it takes
 * the seed's 32 bits zero-extended (its deprecated `hash128` sign-extends a
 * negative `int` seed and differs from the reference for seeds ≥ 2^31).
 *
 * @throws LdpException if [seed] is outside [0, 2^32).
 */
public fun mmh3x64128(data: ByteArray, seed: Long): Mmh3Hash {
    requireArg(seed in 0..MMH3_MAX_SEED) { "MurmurHash3 seed must be in [0, 2^32), got $seed" }
    val hash = MurmurHash3.hash128x64(data, 0, data.size, seed.toInt())
    return Mmh3Hash(hash[0], hash[1])
}

/** The canonical 16-byte MurmurHash3 x64-128 digest of [data] with [seed] (see [mmh3x64128]). */
public fun mmh3Digest(data: ByteArray, seed: Long): ByteArray = mmh3x64128(data, seed).digest()
