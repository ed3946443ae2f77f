package dev.ldp.client.hashing

import dev.ldp.client.Bytes
import dev.ldp.client.JsonObject
import dev.ldp.client.Values
import dev.ldp.client.Vectors
import dev.ldp.client.hex
import dev.ldp.client.int
import dev.ldp.client.ints
import dev.ldp.client.str
import java.math.BigInteger
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/** The pure-hash sections of the vectors: mmh3, md5, Bloom positions, sketch rows, and the PRR's true Bloom positions (the local-hashing family and the PRF streams: ldp-client-core's HashingVectorsTest). */
class BloomVectorsTest {
    private val bloom = Vectors.section("bloom")

    private fun long(c: JsonObject, key: String): Long = when (val v = c[key]) {
        is BigInteger -> v.longValueExact()
        is String -> v.toLong()
        else -> error("vector field $key is not an integer: $v")
    }

    @Test
    fun mmh3X64128() {
        val cases = Vectors.list(bloom, "mmh3_x64_128")
        assertTrue(cases.size >= 40)
        for (c in cases) {
            val what = "data ${c.str("data")} seed ${c["seed"]}"
            val h = mmh3x64128(c.hex("data"), long(c, "seed"))
            assertEquals(c.str("digest"), Bytes.toHex(h.digest()), what)
            assertEquals(c.str("digest"), Bytes.toHex(mmh3Digest(c.hex("data"), long(c, "seed"))), what)
            assertEquals(BigInteger(c.str("h1")), h.h1Unsigned(), what)
            assertEquals(BigInteger(c.str("h2")), h.h2Unsigned(), what)
        }
        assertTrue(cases.any { long(it, "seed") >= 1L shl 31 }, "the vectors cover seeds >= 2^31")
    }

    @Test
    fun md5Digests() {
        val cases = Vectors.list(bloom, "md5")
        assertTrue(cases.isNotEmpty())
        for (c in cases) assertEquals(c.str("digest"), Bytes.toHex(md5(c.hex("data"))), c.str("data"))
    }

    @Test
    fun bloomPositionsOfEveryCase() {
        val cases = Vectors.list(bloom, "positions")
        assertEquals(setOf("mmh3", "md5"), cases.map { it.str("hash") }.toSet())
        for (c in cases) {
            val got = bloomPositions(Values.bytes(c["value"]), long(c, "cohort"), c.int("num_hashes"), c.int("num_bits"), BloomHash.of(c.str("hash")))
            assertEquals(c.ints("positions"), got.toList(), c.toString())
        }
        assertTrue(cases.any { long(it, "cohort") >= 1L shl 31 }, "the vectors cover cohorts >= 2^31")
    }

    @Test
    fun bloomPositionsAreExactNotWrapped() {
        // (h1 + i·h2) mod k over the integers, not mod 2^64: checked against BigInteger arithmetic
        val data = Bytes.utf8("wrap")
        for (k in listOf(3, 7, 1000, 4096, 65_521, 1 shl 30, Int.MAX_VALUE)) {
            val h = mmh3x64128(data, 5)
            val expected = (0 until 16).map { i ->
                h.h1Unsigned().add(BigInteger.valueOf(i.toLong()).multiply(h.h2Unsigned())).mod(BigInteger.valueOf(k.toLong())).toInt()
            }
            assertEquals(expected, bloomPositions(data, 5, 16, k, BloomHash.MMH3).toList(), "k = $k")
        }
    }

    @Test
    fun sketchRowsHashWithSaltPlusRow() {
        val cases = Vectors.cases("sketch")
        assertTrue(cases.isNotEmpty())
        for (c in cases) {
            val data = Values.bytes(c["value"])
            val got = (0 until c.int("k")).map { j -> mmh3x64128(data, long(c, "salt") + j).h1Mod(c.int("m")) }
            assertEquals(c.ints("positions"), got, c.toString())
        }
    }

    @Test
    fun prrTruePositionsOfBloomSpecs() {
        val specs = Vectors.list(Vectors.section("specs"), "cases").associateBy { it.str("id") }
        var checked = 0
        for (c in Vectors.cases("prr")) {
            val spec = dev.ldp.client.Json.parseObject(specs.getValue(c.str("spec")).str("canonical_json"))
            val hash = spec["hash"] as? String
            if (hash != "mmh3" && hash != "md5") continue // basic and boolean RAPPOR have no Bloom hash
            val got = bloomPositions(
                Values.bytes(c["value"]),
                long(c, "cohort"),
                (spec["num_hashes"] as BigInteger).toInt(),
                (spec["num_bits"] as BigInteger).toInt(),
                BloomHash.of(hash),
            )
            assertEquals(c.ints("true_positions"), got.toList(), c.toString())
            checked++
        }
        assertTrue(checked > 10)
    }
}
