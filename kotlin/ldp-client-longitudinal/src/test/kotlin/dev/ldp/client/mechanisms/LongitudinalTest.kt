package dev.ldp.client.mechanisms

import dev.ldp.client.ChiSquare
import dev.ldp.client.ClientState
import dev.ldp.client.EncoderOptions
import dev.ldp.client.Fraction
import dev.ldp.client.Json
import dev.ldp.client.PooledSource
import dev.ldp.client.PrivacyRegistry
import dev.ldp.client.Registry
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.Vectors
import dev.ldp.client.privacy.ChainMath
import java.math.BigInteger
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/**
 * The longitudinal chains l-grr, l-osue, l-oue, l-sue (their `encodings` and `specs` vectors run in
 * [dev.ldp.client.VectorsTest]): the memo, the privacy facts and claims, and chi-square tests of real
 * `SecureRandom` output against the exact probabilities.
 *
 * Each chi-square test is one Pearson test at α = 1e-6 (runs are unseeded: a correct encoder fails a
 * given test once in a million runs), its critical value derived from the χ² distribution with the
 * stated degrees of freedom ([ChiSquare.critical]); every expected cell count is at least 1,000.
 */
class LongitudinalTest {
    private companion object {
        const val ALPHA = 1e-6
        const val REPORTS = 20_000

        /** Fresh clients per over-clients test (each builds an encoder); the smallest expected count is l-grr/str's B ≈ 0.175: ≈ 1,400. */
        const val CLIENTS = 8_000
        val GRR_IDS = listOf("l-grr/str", "l-grr/eps-inf")
        val UNARY_IDS = listOf("l-osue/str", "l-oue/int", "l-sue/non-ascii")

        // Python's canonical specs (ldp.specs.longitudinal), as js/test/longitudinal.test.ts has them
        const val L_OUE =
            """{"domain":["a","b","c","d","e"],"epsilon":1.0,"epsilon_inf":4.0,"format":1,"mechanism":"l-oue","p1":"1/2","p2":"1/2","q1":"165893506013354227/9223372036854775808","q2":"2611755612806323709/18446744073709551616"}"""
        const val L_GRR =
            """{"domain":["a","b","c","d","e"],"epsilon":0.2,"epsilon_inf":3.0,"format":1,"mechanism":"l-grr","p1":"15383205298130006975/18446744073709551616","p2":"4479040366852076251/18446744073709551616","q1":"3063538775579544641/73786976294838206464","q2":"13967703706857475365/73786976294838206464"}"""
        const val L_OSUE =
            """{"domain":["a","b","c"],"epsilon":1.0,"epsilon_inf":2.0,"format":1,"mechanism":"l-osue","p1":"1/2","p2":"7409947029683332555/9223372036854775808","q1":"549726448845090125/4611686018427387904","q2":"1813425007171443253/9223372036854775808"}"""
    }

    private fun spec(id: String): Spec = Vectors.specs.getValue(id)

    private fun encoder(spec: Spec, client: ClientState? = null, source: PooledSource = PooledSource()): LongitudinalEncoder =
        Registry.makeEncoder(spec, EncoderOptions(source = source, client = client)) as LongitudinalEncoder

    private fun edited(text: String, change: (MutableMap<String, Any?>) -> Unit): String {
        val fields = LinkedHashMap(Json.parseObject(text))
        change(fields)
        return Json.dump(fields)
    }

    private fun refused(text: String, vararg words: String) {
        val e = assertFailsWith<SpecException> { Spec.load(text) }
        for (w in words) assertTrue(w in e.message!!, e.message)
        assertTrue('\n' !in e.message!!, "one line: ${e.message}")
    }

    @Test
    fun theFactsAreTheChainsRatiosMemoizedOverTheDomain() {
        for (id in GRR_IDS + UNARY_IDS) {
            val spec = spec(id)
            val (p1, q1, p2, q2) = listOf("p1", "q1", "p2", "q2").map { spec.fraction(it) }
            val a = p1 * p2 + (Fraction.ONE - p1) * q2
            val b = q1 * p2 + (Fraction.ONE - q1) * q2
            val ue = { x: Fraction, y: Fraction -> x * (Fraction.ONE - y) / ((Fraction.ONE - x) * y) }
            val facts = PrivacyRegistry.mechanismPrivacy(spec.fields)!!
            assertTrue(facts.memoized && facts.memoLinear, id)
            assertEquals(if (id.startsWith("l-grr")) a / b else ue(a, b), facts.ratio, id)
            assertEquals(if (id.startsWith("l-grr")) p1 / q1 else ue(p1, q1), facts.permanentRatio, id)
            assertEquals(BigInteger.valueOf(spec.domain().size.toLong()), facts.memoValues, id)
        }
    }

    @Test
    fun theLedgersPerReportEpsilonIsPythonsMemoReportEpsilon() {
        // Python: memo_report_epsilon of the three specs above (js/test/longitudinal.test.ts checks the same)
        for ((text, expected) in listOf(L_OUE to 1.0544541288467977, L_GRR to 0.20424570878003262, L_OSUE to 1.0)) {
            val facts = PrivacyRegistry.mechanismPrivacy(Spec.load(text).fields)!!
            val got = facts.memoReportEpsilon!!
            assertTrue(Math.abs(got - expected) <= 1e-9 * expected, "$got vs $expected")
        }
    }

    @Test
    fun pastTheRoundLimitTheFreshRoundsBoundIsCharged() {
        // ε∞/ε₁ above 400 (L-GRR): ε′ = max(ε₁, the bound of p2/q2), no round-by-round search
        val p2 = Fraction.of(3, 4)
        val q2 = Fraction.of(1, 12)
        val got = ChainMath.memoReportEpsilon(true, Fraction.of(9, 10), Fraction.of(1, 30), p2, q2, 4, 0.001, 1.0)
        assertEquals(dev.ldp.client.Exact.epsilonBoundOfRatio(p2 / q2), got)
    }

    @Test
    fun anEditedClaimOrAChainOutOfFormIsRefused() {
        refused(edited(L_OSUE) { it["q2"] = "1/3" }, "l-osue: the SUE round needs q2 = 1 - p2 and p2 > 1/2")
        refused(edited(L_OSUE) { it["epsilon_inf"] = 1.5 }, "epsilon_inf")
        refused(edited(L_GRR) { it["epsilon"] = 0.1 }, "claims epsilon=", "load the server's spec")
        refused(edited(L_GRR) { it["epsilon"] = 0.21 }, "must match them")
        refused(edited(L_GRR) { it["epsilon_inf"] = 3.5 }, "epsilon_inf", "must match them")
        refused(edited(L_OUE) { it["q1"] = "0" }, "q1 must be in (0, 1), got 0")
        refused(edited(L_GRR) { it["domain"] = listOf("a") }, "at least 2 values")
    }

    @Test
    fun oneClientsMemoIsTheSameForEveryReportAndAnothersDiffers() {
        for (text in listOf(L_GRR, L_OSUE)) {
            val spec = Spec.load(text)
            val values = spec.domain()
            fun memo(e: LongitudinalEncoder, v: Any): String =
                if (spec.mechanism == "l-grr") e.memoIndex(v).toString() else e.memoWords(v).joinToString(",")
            val a = encoder(spec)
            assertEquals(values.map { memo(a, it) }, values.map { memo(a, it) })
            val again = LongitudinalEncoder(spec, ClientState(a.client.secret, 0))
            assertEquals(values.map { memo(a, it) }, values.map { memo(again, it) })
            // 40 independent clients whose memos of every value are all equal: the likeliest memo tuple
            // has probability at most p1^k (L-GRR: 0.834^5 = 0.40; L-OSUE: below 1/2): below 0.41^39 < 1e-15
            val tuples = (0 until 40).map { encoder(spec) }.map { e -> values.map { memo(e, it) } }.toSet()
            assertTrue(tuples.size > 1, "every client drew the same memo")
            assertContentEquals("1".toByteArray(), a.memoKey("b"))
        }
    }

    @Test
    fun askingAChainForTheOtherKindOfMemoIsAClearError() {
        val e = assertFailsWith<dev.ldp.client.LdpException> { encoder(spec("l-oue/int")).memoIndex(7) }
        assertTrue("use memoWords" in e.message!!, e.message)
        val f = assertFailsWith<dev.ldp.client.LdpException> { encoder(spec("l-grr/str")).memoWords("red") }
        assertTrue("use memoIndex" in f.message!!, f.message)
        assertFailsWith<dev.ldp.client.ValueException> { encoder(spec("l-grr/str")).encode("purple") }
    }

    @Test
    fun twoSpellingsOfAValueShareTheMemoKey() {
        val e = encoder(spec("l-oue/int"))
        assertContentEquals(e.memoKey(1000), e.memoKey("1000"))
        assertContentEquals(e.memoKey(1000), e.memoKey(1000.0))
    }

    private fun assertFits(what: String, observed: LongArray, expected: DoubleArray, df: Int) {
        assertTrue(expected.all { it >= 1000.0 }, "$what: an expected count below 1,000")
        val x = ChiSquare.statistic(observed, expected)
        val critical = ChiSquare.critical(ALPHA, df)
        assertTrue(x < critical, "$what: chi-square $x >= $critical (df $df, alpha $ALPHA); observed ${observed.toList()}")
    }

    private fun probabilities(spec: Spec): List<Double> = listOf("p1", "q1", "p2", "q2").map { spec.fraction(it).toDouble() }

    /**
     * L-GRR over clients: each report from a fresh client (a CSPRNG secret) reports the true value with
     * A = p₁p₂ + (1 − p₁)q₂ and each other with B = q₁p₂ + (1 − q₁)q₂ (df = d − 1). On `l-grr/str`
     * (d = 4, B ≈ 0.175) only: a client's two randomized responses over 128-bit
     * denominators make it the costliest encoder to build.
     */
    @Test
    fun grrOverClientsChiSquare() {
        val id = "l-grr/str"
        val spec = spec(id)
        val domain = spec.domain()
        val d = domain.size
        val x = d / 2
        val (p1, q1, p2, q2) = probabilities(spec)
        val source = PooledSource()
        val counts = LongArray(d)
        repeat(CLIENTS) { counts[domain.indexOf(encoder(spec, source = source).encode(domain[x]).value)]++ }
        val a = p1 * p2 + (1 - p1) * q2
        val b = q1 * p2 + (1 - q1) * q2
        assertFits("$id over clients", counts, DoubleArray(d) { CLIENTS * (if (it == x) a else b) }, d - 1)
    }

    /** L-GRR, one client's reports of a value: its memo with p₂, each other value with q₂ (df = d − 1). */
    @TestFactory
    fun grrOneClientChiSquare(): List<DynamicTest> = GRR_IDS.map { id ->
        DynamicTest.dynamicTest(id) {
            val spec = spec(id)
            val domain = spec.domain()
            val d = domain.size
            val x = d / 2
            val (_, _, p2, q2) = probabilities(spec)
            val one = encoder(spec)
            val memo = one.memoIndex(domain[x])
            val counts = LongArray(d)
            repeat(REPORTS) { counts[domain.indexOf(one.encode(domain[x]).value)]++ }
            assertFits("$id one client (memo $memo)", counts, DoubleArray(d) { REPORTS * (if (it == memo) p2 else q2) }, d - 1)
        }
    }

    private fun bit(bits: ByteArray, i: Int) = (bits[i ushr 3].toInt() ushr (7 - (i and 7))) and 1

    /** Σ over the d independent bits of (ones − Nπ)²/(Nπ(1 − π)): χ² with df = d. */
    private fun assertBitsFit(what: String, ones: LongArray, prob: DoubleArray, n: Int) {
        val d = ones.size
        assertTrue(prob.all { n * minOf(it, 1 - it) >= 1000.0 }, "$what: an expected count below 1,000")
        val statistic = (0 until d).sumOf { i ->
            ChiSquare.statistic(longArrayOf(ones[i], n - ones[i]), doubleArrayOf(n * prob[i], n * (1 - prob[i])))
        }
        val critical = ChiSquare.critical(ALPHA, d)
        assertTrue(statistic < critical, "$what: per-bit chi-square $statistic >= $critical (df $d); ones ${ones.toList()}")
    }

    /**
     * The unary chains over fresh clients: each bit's count of ones, the true bit 1 with A and every other
     * with B; the bits are independent (memo and fresh coins per bit), so the per-bit sum is χ² with df = d.
     */
    @TestFactory
    fun unaryOverClientsChiSquare(): List<DynamicTest> = UNARY_IDS.map { id ->
        DynamicTest.dynamicTest(id) {
            val spec = spec(id)
            val domain = spec.domain()
            val d = domain.size
            val x = 1
            val (p1, q1, p2, q2) = probabilities(spec)
            val source = PooledSource()
            val ones = LongArray(d)
            repeat(CLIENTS) {
                val bits = encoder(spec, source = source).encode(domain[x]).bits!!
                for (i in 0 until d) ones[i] += bit(bits, i).toLong()
            }
            val a = p1 * p2 + (1 - p1) * q2
            val b = q1 * p2 + (1 - q1) * q2
            assertBitsFit("$id over clients", ones, DoubleArray(d) { if (it == x) a else b }, CLIENTS)
        }
    }

    /** The unary chains, one client: a bit is 1 with p₂ where its memo is 1, else q₂, independently (df = d). */
    @TestFactory
    fun unaryOneClientChiSquare(): List<DynamicTest> = UNARY_IDS.map { id ->
        DynamicTest.dynamicTest(id) {
            val spec = spec(id)
            val domain = spec.domain()
            val d = domain.size
            val x = 1
            val (_, _, p2, q2) = probabilities(spec)
            val one = encoder(spec)
            val memo = one.memoWords(domain[x])
            val ones = LongArray(d)
            repeat(REPORTS) {
                val bits = one.encode(domain[x]).bits!!
                for (i in 0 until d) ones[i] += bit(bits, i).toLong()
            }
            assertBitsFit("$id one client", ones, DoubleArray(d) { if ((memo[it ushr 6] ushr (it and 63)) and 1L == 1L) p2 else q2 }, REPORTS)
        }
    }
}
