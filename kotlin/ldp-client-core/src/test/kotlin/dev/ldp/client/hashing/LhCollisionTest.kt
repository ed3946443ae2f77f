package dev.ldp.client.hashing

import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.Vectors
import java.math.BigInteger
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/** The `olh.collision_probability` vectors: P[H(x) = H(x′)] of the local-hashing family, exactly. */
class LhCollisionTest {
    @Test
    fun collisionProbabilityOfEveryVectorG() {
        @Suppress("UNCHECKED_CAST")
        val cases = Vectors.section("olh")["collision_probability"] as JsonObject
        assertTrue(cases.size >= 5)
        for ((g, p) in cases) assertEquals(p as String, lhCollisionProbability(g.toLong()).toString(), "g = $g")
    }

    @Test
    fun itIsOneForOneBucketZeroForPBucketsAndNearOneOverG() {
        assertEquals(Fraction.ONE, lhCollisionProbability(1))
        assertEquals(Fraction.ZERO, lhCollisionProbability(LH_PRIME)) // every residue in a bucket of its own
        // close to 1/g: within 1/P of it
        val g = 1000L
        val diff = lhCollisionProbability(g) - Fraction.of(1, g)
        assertTrue(diff.num.abs() * BigInteger.valueOf(LH_PRIME) < diff.den, "$diff")
        assertFailsWith<IllegalArgumentException> { lhCollisionProbability(0) }
    }
}
