package dev.ldp.client.hashing

import dev.ldp.client.LdpException
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/** Argument checks of the hashing functions: one clear line naming what was wrong. */
class HashingTest {
    @Test
    fun localHashingRefusesBadArguments() {
        assertFailsWith<LdpException> { lhBucket(LH_SEED_SPACE, 0, 2) }
        assertFailsWith<LdpException> { lhBucket(-1, 0, 2) }
        assertFailsWith<LdpException> { lhBucket(0, -1, 2) }
        assertFailsWith<LdpException> { lhBucket(0, 0, 0) }
        assertFailsWith<LdpException> { lhBucket(0, 0, LH_PRIME + 1) }
        assertFailsWith<LdpException> { lhCollisionProbability(0) }
    }

    @Test
    fun largeIndicesReduceModP() {
        val seed = 987654321987654321L
        assertEquals(lhBucket(seed, 5, 1000), lhBucket(seed, 5 + LH_PRIME, 1000))
        assertTrue(lhBucket(seed, Long.MAX_VALUE, LH_PRIME) < LH_PRIME)
        assertEquals(lhBucket(LH_SEED_SPACE - 1, LH_PRIME - 1, LH_PRIME), lhBucket(LH_SEED_SPACE - 1, 2 * LH_PRIME - 1, LH_PRIME))
    }
}
