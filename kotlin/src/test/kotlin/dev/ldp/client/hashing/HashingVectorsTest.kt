package dev.ldp.client.hashing

import dev.ldp.client.hashing.LocalVectors.hex
import dev.ldp.client.hashing.LocalVectors.objects
import dev.ldp.client.hashing.LocalVectors.toHex
import org.json.JSONArray
import org.json.JSONObject
import java.math.BigInteger
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/** The pure-hash sections of the vectors: mmh3, md5, Bloom positions, sketch rows, the local-hashing family, PRF input and stream. */
class HashingVectorsTest {
    private val bloom = LocalVectors.section("bloom") as JSONObject

    @Test
    fun mmh3X64128() {
        val cases = objects(bloom.getJSONArray("mmh3_x64_128"))
        assertTrue(cases.size >= 40)
        for (c in cases) {
            val h = mmh3x64128(hex(c.getString("data")), c.getLong("seed"))
            val what = "data ${c.getString("data")} seed ${c.getLong("seed")}"
            assertEquals(c.getString("digest"), toHex(h.digest()), what)
            assertEquals(c.getString("digest"), toHex(mmh3Digest(hex(c.getString("data")), c.getLong("seed"))), what)
            assertEquals(BigInteger(c.getString("h1")), h.h1Unsigned(), what)
            assertEquals(BigInteger(c.getString("h2")), h.h2Unsigned(), what)
        }
        assertTrue(cases.any { it.getLong("seed") >= 1L shl 31 }, "the vectors cover seeds >= 2^31")
    }

    @Test
    fun md5Digests() {
        val cases = objects(bloom.getJSONArray("md5"))
        assertTrue(cases.isNotEmpty())
        for (c in cases) assertEquals(c.getString("digest"), toHex(md5(hex(c.getString("data")))), c.getString("data"))
    }

    @Test
    fun bloomPositionsOfEveryCase() {
        val cases = objects(bloom.getJSONArray("positions"))
        assertEquals(setOf("mmh3", "md5"), cases.map { it.getString("hash") }.toSet())
        for (c in cases) {
            val got = bloomPositions(
                LocalVectors.valueBytes(c.get("value")),
                c.getLong("cohort"),
                c.getInt("num_hashes"),
                c.getInt("num_bits"),
                BloomHash.of(c.getString("hash")),
            )
            assertEquals(LocalVectors.ints(c.getJSONArray("positions")), got.toList(), c.toString())
        }
    }

    @Test
    fun bloomPositionsAreExactNotWrapped() {
        // (h1 + i·h2) mod k over the integers, not mod 2^64: checked against BigInteger arithmetic
        val data = "wrap".toByteArray()
        for (k in listOf(3, 7, 1000, 4096, 65_521, 1 shl 30)) {
            val h = mmh3x64128(data, 5)
            val expected = (0 until 16).map { i ->
                h.h1Unsigned().add(BigInteger.valueOf(i.toLong()).multiply(h.h2Unsigned())).mod(BigInteger.valueOf(k.toLong())).toInt()
            }
            assertEquals(expected, bloomPositions(data, 5, 16, k, BloomHash.MMH3).toList(), "k = $k")
        }
    }

    @Test
    fun sketchRowsHashWithSaltPlusRow() {
        val cases = objects(LocalVectors.section("sketch") as JSONArray)
        assertTrue(cases.isNotEmpty())
        for (c in cases) {
            val data = LocalVectors.valueBytes(c.get("value"))
            val salt = c.getLong("salt")
            val got = (0 until c.getInt("k")).map { j -> mmh3x64128(data, salt + j).h1Mod(c.getInt("m")) }
            assertEquals(LocalVectors.ints(c.getJSONArray("positions")), got, c.toString())
        }
    }

    @Test
    fun localHashingFamily() {
        val olh = LocalVectors.section("olh") as JSONObject
        assertEquals(olh.getLong("prime"), LH_PRIME)
        assertEquals(olh.getString("seed_space"), LH_SEED_SPACE.toString())
        val indices = (0 until olh.getJSONArray("indices").length()).map { olh.getJSONArray("indices").getLong(it) }
        for (c in objects(olh.getJSONArray("seeds"))) {
            val seed = c.getString("seed").toLong()
            val (a, b) = lhCoefficients(seed)
            assertEquals(c.getLong("a"), a, "a of $seed")
            assertEquals(c.getLong("b"), b, "b of $seed")
            val buckets = c.getJSONObject("buckets")
            assertTrue(buckets.length() > 0)
            for (g in buckets.keySet()) {
                val got = indices.map { lhBucket(seed, it, g.toLong()) }
                assertEquals(LocalVectors.ints(buckets.getJSONArray(g)), got, "seed $seed g $g")
            }
        }
    }

    @Test
    fun prfInputAndStreamOfEveryPrrCase() {
        val cases = objects(LocalVectors.section("prr") as JSONArray).filter { it.has("prf_input") }
        assertTrue(cases.size > 10)
        for (c in cases) {
            val parts = c.getJSONArray("prf_parts")
            val input = prfInput(*Array(parts.length()) { hex(parts.getString(it)) })
            assertEquals(c.getString("prf_input"), toHex(input), c.getString("spec"))
            val stream = Shake256Stream(input)
            val reads = LocalVectors.ints(c.getJSONArray("prf_reads"))
            val got = reads.map { stream.read(it) }.fold(ByteArray(0)) { acc, b -> acc + b }
            assertEquals(c.getString("prf_bytes"), toHex(got), c.getString("spec"))
        }
    }

    @Test
    fun prrTruePositionsOfBloomSpecs() {
        val cases = objects(LocalVectors.section("prr") as JSONArray)
        var checked = 0
        for (c in cases) {
            val spec = LocalVectors.spec(c.getString("spec"))
            val hash = spec.optString("hash")
            if (hash != "mmh3" && hash != "md5") continue // basic and boolean RAPPOR have no Bloom hash
            val got = bloomPositions(
                LocalVectors.valueBytes(c.get("value")),
                c.getLong("cohort"),
                spec.getInt("num_hashes"),
                spec.getInt("num_bits"),
                BloomHash.of(hash),
            )
            assertEquals(LocalVectors.ints(c.getJSONArray("true_positions")), got.toList(), c.toString())
            checked++
        }
        assertTrue(checked > 10)
    }

    @Test
    fun shakeReadsContinueOneOutput() {
        val input = "ldp".toByteArray()
        val whole = shake256(input, 300)
        val stream = Shake256Stream(input)
        val parts = listOf(0, 1, 7, 135, 136, 21).map { stream.read(it) } // across the 136-byte rate
        assertContentEquals(whole, parts.fold(ByteArray(0)) { acc, b -> acc + b })
        // SHAKE-256 of the empty input begins 46 b9 dd 2b (FIPS 202 example)
        assertEquals("46b9dd2b", toHex(shake256(ByteArray(0), 4)))
    }
}
