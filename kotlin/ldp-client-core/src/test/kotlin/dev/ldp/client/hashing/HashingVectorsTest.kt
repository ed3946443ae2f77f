package dev.ldp.client.hashing

import dev.ldp.client.BouncyCastleShake256
import dev.ldp.client.Bytes
import dev.ldp.client.JsonObject
import dev.ldp.client.Vectors
import dev.ldp.client.ints
import dev.ldp.client.prfInput
import dev.ldp.client.str
import java.math.BigInteger
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/** The pure-hash sections of the vectors that core encodes: the local-hashing family, the PRR's PRF streams (mmh3, md5, Bloom positions and sketch rows: ldp-client-rappor's BloomVectorsTest). */
class HashingVectorsTest {
    private fun long(c: JsonObject, key: String): Long = when (val v = c[key]) {
        is BigInteger -> v.longValueExact()
        is String -> v.toLong()
        else -> error("vector field $key is not an integer: $v")
    }

    @Test
    fun localHashingFamily() {
        val olh = Vectors.section("olh")
        assertEquals(long(olh, "prime"), LH_PRIME)
        assertEquals(olh.str("seed_space"), LH_SEED_SPACE.toString())
        val indices = (olh["indices"] as List<*>).map { (it as BigInteger).toLong() }
        val seeds = Vectors.list(olh, "seeds")
        assertTrue(seeds.isNotEmpty())
        for (c in seeds) {
            val seed = long(c, "seed")
            val (a, b) = lhCoefficients(seed)
            assertEquals(long(c, "a"), a, "a of $seed")
            assertEquals(long(c, "b"), b, "b of $seed")
            val buckets = Vectors.obj(c, "buckets")
            assertTrue(buckets.isNotEmpty())
            for ((g, expected) in buckets) {
                val got = indices.map { lhBucket(seed, it, g.toLong()) }
                assertEquals((expected as List<*>).map { (it as BigInteger).toInt() }, got, "seed $seed g $g")
            }
        }
        val collisions = Vectors.obj(olh, "collision_probability")
        assertTrue(collisions.isNotEmpty())
        for ((g, p) in collisions) assertEquals(p, lhCollisionProbability(g.toLong()).toString(), "g = $g")
    }

    @Test
    fun prfInputAndStreamOfEveryPrrCase() {
        val cases = Vectors.cases("prr").filter { it.containsKey("prf_input") }
        assertTrue(cases.size > 10)
        for (c in cases) {
            val parts = (c["prf_parts"] as List<*>).map { Bytes.fromHex(it as String) }
            val input = prfInput(*parts.toTypedArray())
            assertEquals(c.str("prf_input"), Bytes.toHex(input), c.str("spec"))
            val stream = BouncyCastleShake256.stream(input)
            val got = Bytes.concat(*c.ints("prf_reads").map { stream.read(it) }.toTypedArray())
            assertEquals(c.str("prf_bytes"), Bytes.toHex(got), c.str("spec"))
        }
    }

    @Test
    fun shakeReadsContinueOneOutput() {
        val input = Bytes.utf8("ldp")
        val whole = BouncyCastleShake256.stream(input).read(300)
        val stream = BouncyCastleShake256.stream(input)
        val parts = listOf(0, 1, 7, 135, 136, 21).map { stream.read(it) } // across the 136-byte rate
        assertContentEquals(whole, Bytes.concat(*parts.toTypedArray()))
    }
}
