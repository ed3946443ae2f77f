package dev.ldp.client.mechanisms

import dev.ldp.client.ReportBits
import dev.ldp.client.Bytes
import dev.ldp.client.EncoderOptions
import dev.ldp.client.FixedSource
import dev.ldp.client.Fraction
import dev.ldp.client.Json
import dev.ldp.client.JsonObject
import dev.ldp.client.PooledSource
import dev.ldp.client.Registry
import dev.ldp.client.Report
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.ValueException
import dev.ldp.client.Vectors
import dev.ldp.client.hashing.LH_SEED_SPACE
import dev.ldp.client.hashing.lhBucket
import dev.ldp.client.int
import dev.ldp.client.ints
import dev.ldp.client.mechanisms.FamilyChecks.edited
import dev.ldp.client.mechanisms.FamilyChecks.refused
import dev.ldp.client.mechanisms.FamilyChecks.spec
import dev.ldp.client.str
import java.math.BigInteger
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/** PEM and TreeHist: the `pem` vectors (bits, prefixes, keys, rounds), the claim, errors, and the distribution of the reports. */
class PemTest {
    private companion object {
        val SPECS = listOf("pem/default", "pem/non-ascii", "treehist/default")
        const val REPORTS = 150_000
        val PEM: JsonObject get() = Vectors.section("pem")

        /** The prefix lengths of a spec's rounds. */
        fun lengths(id: String): List<Int> {
            val spec = spec(id)
            val maxLength = spec.intValue("max_length")
            return if (spec.mechanism == "treehist") Prefixes.treeHistPrefixLengths(maxLength)
            else Prefixes.pemPrefixLengths(maxLength, spec.intValue("top_k"), spec.intValue("eta"))
        }

        /** The key of the round's prefix of a value. */
        fun key(value: String, maxLength: Int, length: Int): Long =
            Prefixes.prefixKey(Prefixes.valueBits(value, maxLength).shiftRight(8 * maxLength - length), length)

        fun round(report: Report): Int = (report.extra.single { it.first == "round" }.second as Long).toInt()
    }

    @Test
    fun theLabelIsTheVectors() = assertEquals(PEM.str("label"), Prefixes.PREFIX_HASH_LABEL)

    @TestFactory
    fun bitsAndPrefixKeys(): List<DynamicTest> = Vectors.list(PEM, "values").map { c ->
        DynamicTest.dynamicTest("bits and prefix keys of ${c.str("value")}") {
            val maxLength = PEM.int("max_length")
            val bits = Prefixes.valueBits(c.str("value"), maxLength)
            assertEquals(c.str("bits"), Bytes.toHex(Bytes.toBytesBE(bits, maxLength)))
            for (p in Vectors.list(c, "prefixes")) {
                val length = p.int("length")
                val prefix = bits.shiftRight(8 * maxLength - length)
                val size = (length + 7) / 8
                assertEquals(p.str("prefix_bytes"), Bytes.toHex(Bytes.toBytesBE(prefix.shiftLeft(8 * size - length), size)), "length $length")
                assertEquals((p["key"] as BigInteger).toLong(), Prefixes.prefixKey(prefix, length), "key of length $length")
            }
        }
    }

    @TestFactory
    fun pemRounds(): List<DynamicTest> = Vectors.obj(PEM, "rounds").map { (k, r) ->
        @Suppress("UNCHECKED_CAST")
        val round = r as JsonObject
        DynamicTest.dynamicTest("prefix lengths of top_k $k, eta ${round.int("eta")}") {
            assertEquals(round.ints("lengths"), Prefixes.pemPrefixLengths(PEM.int("max_length"), k.toInt(), round.int("eta")))
        }
    }

    @Test
    fun treeHistHasMPlusOneGroups() {
        assertEquals(listOf(1, 2, 3, 4, 5, 6, 7, 8, 8), Prefixes.treeHistPrefixLengths(1))
    }

    @Test
    fun badValuesAreRefusedWithOneLine() {
        val encoder = Registry.makeEncoder(spec("pem/default"), EncoderOptions(source = FixedSource(ByteArray(64))))
        for ((value, words) in listOf(
            5 to "pem values are strings, got an integer 5",
            "a\u0000b" to "U+0000",
            "abcdefghé" to "is 10 bytes of UTF-8, above max_length=8",
            "a\ud800" to "not encodable as UTF-8",
        )) {
            val e = assertFailsWith<ValueException> { encoder.encode(value) }
            assertTrue(words in e.message!! && '\n' !in e.message!!, e.message)
        }
        val e = assertFailsWith<ValueException> { PemEncoder(spec("treehist/default")).encode(true) }
        assertTrue("treehist values are strings, got a boolean True" in e.message!!, e.message)
    }

    @Test
    fun badSpecsAreRefusedWithOneLine() {
        val pem = spec("pem/default")
        val treehist = spec("treehist/default")
        // the width follows from top_k and eta, not from ε: a spec without it takes Python's default (the vector's fingerprint)
        val noWidth = Json.parseObject(pem.canonicalJson, "pem/default").filterKeys { it != "width" }
        assertEquals(BigInteger.valueOf(40), pem.fields["width"])
        assertEquals(pem.fingerprint, Spec.load(noWidth).fingerprint)
        refused("""{"mechanism":"pem","epsilon":1,"p":"1/2"}""", "pem: g is calibrated from epsilon by the server")
        refused(edited(pem) { it["eta"] = 0 }, "eta must be in [1, 12], got 0")
        refused(edited(pem) { it["max_length"] = 257 }, "max_length must be in [1, 256], got 257")
        refused(edited(pem) { it["max_length"] = 1; it["top_k"] = 256 }, "pem: top_k=256 must be below 2^m = 2^8")
        refused(edited(pem) { it["top_k"] = 4096; it["eta"] = 9 }, "pem: top_k * 2^eta = 2,097,152 candidates per round")
        refused(edited(pem) { it["width"] = 9 }, "width must be in [10, 1048576], got 9")
        refused(edited(pem) { it["width"] = 70_000 }, "pem: width * 2^eta = 1,120,000 candidates per round")
        refused(edited(pem) { it["g"] = 1 }, "g must be in [2, 2147483646], got 1")
        refused(edited(pem) { it["p"] = "1/8" }, "pem: p must exceed 1/g = 1/8, got 1/8")
        refused(edited(treehist) { it["width"] = 70_000 }, "width must be in [1, 65536], got 70000")
        refused(edited(treehist) { it["beta"] = 1.0 }, "treehist: beta must be a number in (0, 1), got 1.0")
        refused(edited(treehist) { it["epsilon"] = 22.0 }, "above 21", "largest epsilon treehist supports")
    }

    @Test
    fun theRoundIsDrawnFirstThenTheSeedThenOneRandomizedResponse() {
        val spec = spec("treehist/default") // 33 rounds: uniform(33) on the source's bits
        // round: the walk's first leaves are at depth 6 (32 < 33 < 64): 0x04's top 6 bits → 1; seed: the next
        // 62 bits, zero → 0 (2^61 < (P − 1)P < 2^62); the response: zero bits reach p's first 1 digit before
        // q's (p > q), the leaf of the true bucket (group 0). One byte a read, leftover bits carried.
        val source = FixedSource(byteArrayOf(0x04) + ByteArray(16))
        val report = PemEncoder(spec, source).encode("ab")
        val p = spec.fraction("p")
        val firstOne = generateSequence(1) { it + 1 }.first { Fraction.of(BigInteger.ONE, BigInteger.ONE.shiftLeft(it)) <= p }
        val bits = 6 + 62 + firstOne
        assertEquals(bits.toLong(), dev.ldp.client.ReportBits.reader(source).bitsRead)
        assertEquals(List((bits + 7) / 8) { 1 }, source.reads)
        val bucket = lhBucket(0, key("ab", 4, 2), 8)
        assertEquals("""{"v":1,"spec":"${spec.fingerprint}","seed":0,"value":$bucket,"round":1}""", report.toJson())
        assertTrue(Registry.makeEncoder(spec) is PemEncoder)
        assertFailsWith<SpecException> { PemEncoder(spec("grr/str")) }
    }

    /**
     * P[round i, seed, y | v] = (1/R)·(p when y = h_seed(key_i(v)), else q)/((P − 1)P), listed for every
     * round, three seeds and all g buckets, for values whose first bits differ (their keys differ in
     * every round): the worst ratio p/q is reached there; elsewhere every probability is one of the same two.
     */
    @TestFactory
    fun theStatedEpsilonIsCheckedAgainstTheExactReportProbabilities(): List<DynamicTest> = SPECS.map { id ->
        DynamicTest.dynamicTest(id) {
            val spec = spec(id)
            val maxLength = spec.intValue("max_length")
            val g = spec.int("g").toLong()
            val p = spec.fraction("p")
            val q = (Fraction.ONE - p).divInt(BigInteger.valueOf(g - 1))
            val rounds = lengths(id)
            val values = listOf("a", "é", "")
            val seeds = listOf(1L, 2L, 3L).map { it * (LH_SEED_SPACE / 4) + 777 }
            val each = Fraction.of(BigInteger.ONE, BigInteger.valueOf(rounds.size.toLong()) * BigInteger.valueOf(LH_SEED_SPACE))
            val rows = values.map { v ->
                rounds.flatMap { length ->
                    val k = key(v, maxLength, length)
                    seeds.flatMap { s -> (0 until g).map { y -> each * (if (y == lhBucket(s, k, g).toLong()) p else q) } }
                }
            }
            FamilyChecks.claimIsChecked(spec, FamilyChecks.worstRatio(rows))
        }
    }

    /**
     * From real `SecureRandom` output, at α = 1e-6 each: the cells (round, reported bucket = the true one)
     * with probability (1/R)·p and (1/R)·(1 − p), 2R cells (df 2R − 1; treehist/default: 66 cells, the
     * smallest expected count ≈ 2,200; the local-hashing fit's ≈ 1,300); then the local-hashing fit of all reports, each against its round's
     * prefix key (LocalHashChecks.assertHashedReportsFit: true bucket × offset, and the seeds).
     */
    @TestFactory
    fun reportsFollowTheExactProbabilities(): List<DynamicTest> = SPECS.map { id ->
        DynamicTest.dynamicTest(id) {
            val spec = spec(id)
            val maxLength = spec.intValue("max_length")
            val g = spec.int("g").toLong()
            val p = spec.fraction("p").toDouble()
            val rounds = lengths(id)
            val value = "n\u00e9" // 3 bytes: within every spec's max_length
            val keys = rounds.map { key(value, maxLength, it) }
            val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))
            val cells = LongArray(2 * rounds.size)
            val hashed = ArrayList<Triple<Long, Long, Long>>(REPORTS)
            repeat(REPORTS) {
                val report = encoder.encode(value)
                val i = round(report)
                val seed = report.seed!!.toLong()
                val y = (report.value as BigInteger).toLong()
                val kept = y == lhBucket(seed, keys[i], g).toLong()
                cells[2 * i + (if (kept) 1 else 0)]++
                hashed.add(Triple(seed, y, keys[i]))
            }
            val probs = DoubleArray(cells.size) { c -> (if (c % 2 == 1) p else 1 - p) / rounds.size }
            FamilyChecks.assertFits("$id (round, kept)", cells, probs, REPORTS)
            LocalHashChecks.assertHashedReportsFit(id, g, spec.fraction("p"), hashed)
        }
    }
}
