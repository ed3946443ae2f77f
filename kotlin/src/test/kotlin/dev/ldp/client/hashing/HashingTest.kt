package dev.ldp.client.hashing

import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/** Argument checks of the hashing functions: one clear line naming what was wrong. */
class HashingTest {
    @Test
    fun mmh3RefusesSeedsOutside32Bits() {
        val e = assertFailsWith<IllegalArgumentException> { mmh3x64128(ByteArray(0), 1L shl 32) }
        assertTrue(e.message!!.contains("seed"))
        assertFailsWith<IllegalArgumentException> { mmh3x64128(ByteArray(0), -1) }
    }

    @Test
    fun bloomRefusesBadArguments() {
        assertFailsWith<IllegalArgumentException> { bloomPositions(ByteArray(0), -1, 2, 16, BloomHash.MMH3) }
        assertFailsWith<IllegalArgumentException> { bloomPositions(ByteArray(0), 0, 2, 0, BloomHash.MMH3) }
        assertFailsWith<IllegalArgumentException> { bloomPositions(ByteArray(0), 0, 17, 16, BloomHash.MD5) }
        val e = assertFailsWith<IllegalArgumentException> { BloomHash.of("sha1") }
        assertEquals("unknown Bloom hash 'sha1' (expected mmh3 or md5)", e.message)
    }

    @Test
    fun localHashingRefusesBadArguments() {
        assertFailsWith<IllegalArgumentException> { lhBucket(LH_SEED_SPACE, 0, 2) }
        assertFailsWith<IllegalArgumentException> { lhBucket(0, -1, 2) }
        assertFailsWith<IllegalArgumentException> { lhBucket(0, 0, 0) }
        assertFailsWith<IllegalArgumentException> { lhBucket(0, 0, LH_PRIME + 1) }
    }

    @Test
    fun largeIndicesReduceModP() {
        val seed = 987654321987654321L
        assertEquals(lhBucket(seed, 5, 1000), lhBucket(seed, 5 + LH_PRIME, 1000))
        assertTrue(lhBucket(seed, Long.MAX_VALUE, LH_PRIME) < LH_PRIME)
    }

    @Test
    fun prfInputPrefixesLengths() {
        assertEquals("00000000" + "0000000261" + "62", LocalVectors.toHex(prfInput(ByteArray(0), "ab".toByteArray())))
    }
}
