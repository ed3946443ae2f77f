@file:JvmName("Bloom")

package dev.ldp.client.hashing

import dev.ldp.client.LdpException

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
         * @throws LdpException for any other name.
         */
        @JvmStatic
        public fun of(name: String): BloomHash =
            entries.firstOrNull { it.specName == name }
                ?: throw LdpException("unknown Bloom hash '$name' (expected mmh3 or md5)")
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
 * @throws LdpException if [cohort] is outside [0, 2^32),
 *   [numBits] < 1, [numHashes] < 0, or MD5 is asked for more than 16 hashes.
 */
public fun bloomPositions(data: ByteArray, cohort: Long, numHashes: Int, numBits: Int, hash: BloomHash): IntArray {
    requireArg(cohort in 0..MAX_COHORT) { "cohort must be in [0, 2^32), got $cohort" }
    requireArg(numBits >= 1) { "num_bits must be at least 1, got $numBits" }
    requireArg(numHashes >= 0) { "num_hashes must not be negative, got $numHashes" }
    return when (hash) {
        BloomHash.MD5 -> {
            requireArg(numHashes <= 16) { "MD5 Bloom hashing gives at most 16 positions, asked for $numHashes" }
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
