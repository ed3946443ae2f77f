package dev.ldp.client.mechanisms

import dev.ldp.client.ChiSquare
import dev.ldp.client.ClientState
import dev.ldp.client.EncoderOptions
import dev.ldp.client.Exact
import dev.ldp.client.Fraction
import dev.ldp.client.Json
import dev.ldp.client.PooledSource
import dev.ldp.client.PrivacyRegistry
import dev.ldp.client.Registry
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.Vectors
import java.math.BigInteger
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/**
 * LOLOHA (its `encodings` and `specs` vectors run in [dev.ldp.client.VectorsTest]): the privacy facts
 * and claims, a client's pool index and memos, and chi-square tests of real `SecureRandom` output
 * against the exact probabilities, each one Pearson test at α = 1e-6 (unseeded) with its critical
 * value derived from the χ² distribution ([ChiSquare.critical]) and every expected count ≥ 1,000.
 */
class LolohaTest {
    private companion object {
        const val ALPHA = 1e-6
        const val REPORTS = 30_000
        val IDS = listOf("loloha/default", "loloha/bi", "loloha/non-ascii")
        val CLIENT = ClientState(ByteArray(32) { 3 }, 0)

        // Python: LOLOHA(domain=list("abcdef"), epsilon=0.2, epsilon_inf=3.0, g=5, pool_size=64)
        const val SMALL_EPSILON =
            """{"domain":["a","b","c","d","e","f"],"epsilon":0.2,"epsilon_inf":3.0,"format":1,"g":5,"mechanism":"loloha","p1":"15383205298130006975/18446744073709551616","p2":"4479040366852076251/18446744073709551616","pool_size":64}"""
    }

    private fun spec(id: String): Spec = Vectors.specs.getValue(id)

    private fun encoder(spec: Spec, client: ClientState? = null, source: PooledSource = PooledSource()): LolohaEncoder =
        Registry.makeEncoder(spec, EncoderOptions(source = source, client = client)) as LolohaEncoder

    private fun refused(text: String, vararg words: String) {
        val e = assertFailsWith<SpecException> { Spec.load(text) }
        for (w in words) assertTrue(w in e.message!!, e.message)
        assertTrue('\n' !in e.message!!, "one line: ${e.message}")
    }

    private fun edited(change: (MutableMap<String, Any?>) -> Unit): String {
        val fields = LinkedHashMap(Json.parseObject(spec("loloha/bi").canonicalJson))
        change(fields)
        return Json.dump(fields)
    }

    @Test
    fun oneReportsRatioIsTheChainsAOverBTheMemosP1OverQ1WithGMemoKeys() {
        for (id in IDS) {
            val spec = spec(id)
            val p1 = spec.fraction("p1")
            val p2 = spec.fraction("p2")
            val g = spec.int("g")
            val q1 = (Fraction.ONE - p1).divInt(g - BigInteger.ONE)
            val q2 = (Fraction.ONE - p2).divInt(g - BigInteger.ONE)
            val facts = PrivacyRegistry.mechanismPrivacy(spec.fields)!!
            assertEquals((p1 * p2 + (Fraction.ONE - p1) * q2) / (q1 * p2 + (Fraction.ONE - q1) * q2), facts.ratio, id)
            assertEquals(p1 / q1, facts.permanentRatio, id)
            assertEquals(g, facts.memoValues, id)
            assertTrue(facts.memoized && facts.memoLinear, id)
            assertEquals(spec.float("epsilon"), facts.memoReportEpsilon, id) // ε′ = ε₁ for these
        }
    }

    @Test
    fun rReportsOfOneBucketAreLGrrsOverGBuckets() {
        val facts = PrivacyRegistry.mechanismPrivacy(Spec.load(SMALL_EPSILON).fields)!!
        val expected = 0.20424570878003262 // Python's memo_report_epsilon (js/test/loloha.test.ts checks the same)
        assertTrue(Math.abs(facts.memoReportEpsilon!! - expected) <= 1e-9 * expected, "${facts.memoReportEpsilon}")
    }

    @Test
    fun anEditedClaimOrParametersOutOfRangeAreRefused() {
        refused(edited { it["epsilon"] = 0.25 }, "claims epsilon=", "load the server's spec")
        refused(edited { it["epsilon"] = 0.51 }, "must match them")
        refused(edited { it["epsilon_inf"] = 2.5 }, "epsilon_inf", "must match them")
        refused(edited { it["p1"] = "1/2" }, "p1 must exceed 1/g = 1/2")
        refused(edited { it["g"] = 1 }, "g must be in [2, 16777216], got 1")
        refused(edited { it["pool_size"] = 0 }, "pool_size must be in [1, 1048576], got 0")
        refused(edited { it["pool_size"] = 1 shl 20; it["g"] = 32 }, "pool_size x g")
        refused(edited { it["domain"] = listOf("a") }, "at least 2 values")
    }

    @Test
    fun aClientsPoolIndexAndMemosDependOnItsSecretOnly() {
        val spec = spec("loloha/bi") // g = 2, pool of 64
        val first = encoder(spec, CLIENT)
        val again = LolohaEncoder(spec, ClientState(CLIENT.secret, 0))
        assertEquals(first.seedIndex, again.seedIndex)
        assertEquals(first.hashSeed, again.hashSeed)
        assertEquals(LolohaEncoder.poolSeed(spec.fingerprint, first.seedIndex), first.hashSeed)
        assertTrue(first.seedIndex in 0 until 64)
        for (v in listOf("a", "b", "c")) {
            assertEquals(first.permanentBucket(v), again.permanentBucket(v))
            assertContentEquals(first.bucket(v).toString().toByteArray(), first.memoKey(v))
        }
        val values = HashSet<BigInteger>()
        repeat(64) {
            val report = first.encode("a")
            assertEquals(BigInteger.valueOf(first.seedIndex.toLong()), report.seed)
            values.add(report.value as BigInteger)
        }
        assertEquals(2, values.size) // round 2 draws anew: P[one bucket 64 times] < 1e-9
    }

    @Test
    fun aFreshClientDrawsItsSecretAndCohortFromTheSource() {
        val encoder = encoder(spec("loloha/bi"))
        assertEquals(0L, encoder.client.cohort)
        assertEquals(32, encoder.client.secret.size)
    }

    private fun assertFits(what: String, observed: LongArray, expected: DoubleArray, df: Int) {
        assertTrue(expected.all { it >= 1000.0 }, "$what: an expected count below 1,000")
        val x = ChiSquare.statistic(observed, expected)
        val critical = ChiSquare.critical(ALPHA, df)
        assertTrue(x < critical, "$what: chi-square $x >= $critical (df $df, alpha $ALPHA); observed ${observed.toList()}")
    }

    /** One client's reports of a value: its permanent bucket with p₂, each other bucket with q₂ = (1 − p₂)/(g − 1) (df = g − 1). */
    @TestFactory
    fun oneClientChiSquare(): List<DynamicTest> = listOf("loloha/bi", "loloha/non-ascii").map { id ->
        DynamicTest.dynamicTest(id) {
            val spec = spec(id)
            val g = spec.intValue("g")
            val x = spec.domain()[1]
            val p2 = spec.fraction("p2").toDouble()
            val q2 = (1 - p2) / (g - 1)
            val one = encoder(spec, source = PooledSource())
            val memo = one.permanentBucket(x)
            val counts = LongArray(g)
            repeat(REPORTS) { counts[(one.encode(x).value as BigInteger).toInt()]++ }
            assertFits("$id one client (memo $memo)", counts, DoubleArray(g) { REPORTS * (if (it == memo) p2 else q2) }, g - 1)
        }
    }

    /**
     * Over fresh clients (a CSPRNG secret each, so a random hash of the pool and fresh memos), the
     * report minus the client's own bucket of the value, mod g, is 0 with A = p₁p₂ + (1 − p₁)q₂ and each
     * other residue with B = q₁p₂ + (1 − q₁)q₂ (df = g − 1). On `loloha/bi` (g = 2, a pool of 64: a
     * client's pool seed costs few SHAKE draws), 5,000 clients (expected counts ≈ 3,000 and 2,000).
     */
    @Test
    fun overClientsChiSquare() {
        val spec = spec("loloha/bi")
        val clients = 5_000
        val g = spec.intValue("g")
        val x = spec.domain()[1]
        val p1 = spec.fraction("p1").toDouble()
        val p2 = spec.fraction("p2").toDouble()
        val q1 = (1 - p1) / (g - 1)
        val q2 = (1 - p2) / (g - 1)
        val source = PooledSource()
        val residues = LongArray(g)
        repeat(clients) {
            val e = encoder(spec, source = source)
            residues[Math.floorMod((e.encode(x).value as BigInteger).toInt() - e.bucket(x), g)]++
        }
        val a = p1 * p2 + (1 - p1) * q2
        val b = q1 * p2 + (1 - q1) * q2
        assertFits("loloha/bi over clients", residues, DoubleArray(g) { clients * (if (it == 0) a else b) }, g - 1)
    }

    @Test
    fun theEpsilonBoundsOfTheVectorSpecsAreTheirStatedClaims() {
        for (id in IDS) {
            val spec = spec(id)
            val facts = PrivacyRegistry.mechanismPrivacy(spec.fields)!!
            assertTrue(Exact.ratioWithin(facts.ratio!!, spec.float("epsilon")), id)
            assertTrue(Exact.ratioWithin(facts.permanentRatio!!, spec.float("epsilon_inf")), id)
        }
    }
}
