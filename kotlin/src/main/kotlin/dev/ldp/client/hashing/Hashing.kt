@file:JvmName("Hashing")

package dev.ldp.client.hashing

/** The hash of a RAPPOR Bloom filter, by its name in the spec's `hash` field. */
public enum class BloomHash(public val specName: String) {
    /** MurmurHash3 x64-128 with seed = cohort, double hashing (h1 + i·h2) mod k. */
    MMH3("mmh3"),

    /** Google's RAPPOR: MD5(cohort as 4 big-endian bytes ‖ value), position i = digest[i] mod k. */
    MD5("md5"),
    ;

    public companion object {
        /**
         * The hash named [name] (`"mmh3"` or `"md5"`, as a spec's canonical JSON writes it).
         *
         * @throws IllegalArgumentException for any other name.
         */
        @JvmStatic
        public fun of(name: String): BloomHash =
            entries.firstOrNull { it.specName == name }
                ?: throw IllegalArgumentException("unknown Bloom hash '$name' (expected mmh3 or md5)")
    }
}

/** The largest cohort: cohorts are unsigned 32-bit integers (the mmh3 seed, MD5's 4-byte prefix). */
public const val MAX_COHORT: Long = 0xFFFF_FFFFL

/**
 * The Bloom positions of [data] (a value's bytes) in [cohort]: [numHashes]
 * positions in [0, [numBits]), in order, possibly repeated; the true Bloom
 * filter has exactly these bits set.
 *
 * - [BloomHash.MMH3]: h1, h2 of MurmurHash3 x64-128 with seed = cohort, as
 *   unsigned 64-bit integers; position i is (h1 + i·h2) mod k computed
 *   exactly, without wrapping at 2^64 (as from the residues of h1 and h2).
 * - [BloomHash.MD5]: D = MD5(cohort as 4 big-endian bytes ‖ data); position
 *   i is D[i] mod k (so h ≤ 16 and k ≤ 256 in a valid spec).
 *
 * @throws IllegalArgumentException if [cohort] is outside [0, 2^32),
 *   [numBits] < 1, [numHashes] < 0, or MD5 is asked for more than 16 hashes.
 */
public fun bloomPositions(data: ByteArray, cohort: Long, numHashes: Int, numBits: Int, hash: BloomHash): IntArray {
    require(cohort in 0..MAX_COHORT) { "cohort must be in [0, 2^32), got $cohort" }
    require(numBits >= 1) { "num_bits must be at least 1, got $numBits" }
    require(numHashes >= 0) { "num_hashes must not be negative, got $numHashes" }
    return when (hash) {
        BloomHash.MD5 -> {
            require(numHashes <= 16) { "MD5 Bloom hashing gives at most 16 positions, asked for $numHashes" }
            val prefixed = ByteArray(4 + data.size)
            for (i in 0 until 4) prefixed[i] = (cohort ushr (24 - 8 * i)).toByte()
            data.copyInto(prefixed, 4)
            val digest = md5(prefixed)
            IntArray(numHashes) { i -> (digest[i].toInt() and 0xff) % numBits }
        }
        BloomHash.MMH3 -> {
            val h = mmh3x64128(data, cohort)
            // (h1 + i·h2) mod k = (h1 mod k + (i mod k)·(h2 mod k)) mod k; every product below 2^62
            val k = numBits.toLong()
            val r1 = h.h1Mod(numBits).toLong()
            val r2 = h.h2Mod(numBits).toLong()
            IntArray(numHashes) { i -> ((r1 + (i.toLong() % k) * r2 % k) % k).toInt() }
        }
    }
}

/** The Mersenne prime P = 2^31 − 1 of the local-hashing family (OLH, BLH, PEM, TreeHist, LOLOHA). */
public const val LH_PRIME: Long = 2147483647L

/** The number of hash functions of the family: seeds s lie in [0, (P − 1)·P) (below 2^62, so a `Long`). */
public const val LH_SEED_SPACE: Long = (LH_PRIME - 1) * LH_PRIME

/**
 * The coefficients (a, b) of the hash named by [seed]: a = ⌊s/P⌋ + 1 ∈ [1, P),
 * b = s mod P.
 *
 * @throws IllegalArgumentException if [seed] is outside [0, [LH_SEED_SPACE]).
 */
public fun lhCoefficients(seed: Long): LongArray {
    require(seed in 0 until LH_SEED_SPACE) { "local-hashing seed must be in [0, $LH_SEED_SPACE), got $seed" }
    return longArrayOf(seed / LH_PRIME + 1, seed % LH_PRIME)
}

/**
 * The bucket in [0, [g]) of domain index [index] under the hash [seed]:
 * ((a·x + b) mod P)·g // P, exactly (x is reduced mod P first, so any
 * non-negative index works; every product stays below 2^63).
 *
 * @throws IllegalArgumentException if [seed] is outside the seed space,
 *   [index] is negative, or [g] is outside [1, P] (more buckets than P
 *   inputs would leave some empty).
 */
public fun lhBucket(seed: Long, index: Long, g: Long): Int {
    val (a, b) = lhCoefficients(seed)
    require(index >= 0) { "domain index must not be negative, got $index" }
    require(g in 1..LH_PRIME) { "number of buckets g must be in [1, 2^31 - 1], got $g" }
    val v = (a * (index % LH_PRIME) + b) % LH_PRIME // a, x mod P < 2^31: below 2^62
    return (v * g / LH_PRIME).toInt() // v, g < 2^31: below 2^62
}

/**
 * The probability that two distinct inputs share a bucket under a uniformly drawn hash of the family
 * with [g] buckets: the family is 2-universal over Z_P (a, b uniform over the (P − 1)·P seeds), so
 * (a·x + b, a·y + b) is a uniform pair of distinct residues; with s = ⌊P/g⌋ and r = P mod g, r buckets
 * hold s + 1 residues and g − r hold s, giving (r(s + 1)s + (g − r)s(s − 1)) / (P(P − 1)) exactly
 * (`lhCollisionProbability` of `js/src/hashing.ts`; the local-hashing decoders' q*).
 *
 * @throws IllegalArgumentException if [g] is outside [1, P].
 */
public fun lhCollisionProbability(g: Long): dev.ldp.client.Fraction {
    require(g in 1..LH_PRIME) { "number of buckets g must be in [1, 2^31 - 1], got $g" }
    val big = java.math.BigInteger::valueOf
    val s = LH_PRIME / g
    val r = LH_PRIME % g
    val same = big(r) * big(s + 1) * big(s) + big(g - r) * big(s) * big(s - 1)
    return dev.ldp.client.Fraction.of(same, big(LH_PRIME) * big(LH_PRIME - 1))
}
