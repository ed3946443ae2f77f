package dev.ldp.client.hashing

import dev.ldp.client.LdpException
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith

/** Argument checks of the Bloom and MurmurHash3 functions: one clear line naming what was wrong. */
class BloomTest {
    @Test
    fun mmh3RefusesSeedsOutside32Bits() {
        val e = assertFailsWith<LdpException> { mmh3x64128(ByteArray(0), 1L shl 32) }
        assertEquals("MurmurHash3 seed must be in [0, 2^32), got 4294967296", e.message)
        assertFailsWith<LdpException> { mmh3x64128(ByteArray(0), -1) }
    }

    @Test
    fun bloomRefusesBadArguments() {
        assertFailsWith<LdpException> { bloomPositions(ByteArray(0), -1, 2, 16, BloomHash.MMH3) }
        assertFailsWith<LdpException> { bloomPositions(ByteArray(0), 1L shl 32, 2, 16, BloomHash.MMH3) }
        assertFailsWith<LdpException> { bloomPositions(ByteArray(0), 0, 2, 0, BloomHash.MMH3) }
        assertFailsWith<LdpException> { bloomPositions(ByteArray(0), 0, 17, 16, BloomHash.MD5) }
        assertEquals("unknown Bloom hash 'sha1' (expected mmh3 or md5)", assertFailsWith<LdpException> { BloomHash.of("sha1") }.message)
    }
}
