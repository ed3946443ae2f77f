package dev.ldp.client.mechanisms

import dev.ldp.client.Bytes
import dev.ldp.client.ChiSquare
import dev.ldp.client.EncoderOptions
import dev.ldp.client.Fraction
import dev.ldp.client.Json
import dev.ldp.client.PooledSource
import dev.ldp.client.PrivacyRegistry
import dev.ldp.client.Registry
import dev.ldp.client.Report
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.ValueException
import dev.ldp.client.Vectors
import java.math.BigInteger
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/**
 * The key-value mechanisms pckv-ue, pckv-grr, privkvm (their `encodings` and `specs` vectors run in
 * [dev.ldp.client.VectorsTest]): privacy facts and claims, the input's checks, and chi-square tests of
 * real `SecureRandom` output against the exact output distribution of one user's pairs, each one
 * Pearson test at α = 1e-6 (unseeded) with its critical value derived from the χ² distribution
 * ([ChiSquare.critical]) and every expected count ≥ 1,000.
 *
 * The test inputs' values are 0.5, 0, −1 and 1, whose discretized P[v* = +1] = ⌊(1 + v)·2^63⌋/2^64 is
 * exactly (1 + v)/2.
 */
class KeyValueTest {
    private companion object {
        const val ALPHA = 1e-6
        const val REPORTS = 30_000
    }

    private fun spec(id: String): Spec = Vectors.specs.getValue(id)

    private fun encoder(spec: Spec) = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))

    private fun refused(spec: Spec, change: (MutableMap<String, Any?>) -> Unit, vararg words: String) {
        val fields = LinkedHashMap(Json.parseObject(spec.canonicalJson))
        change(fields)
        val e = assertFailsWith<SpecException> { Spec.load(Json.dump(fields)) }
        for (w in words) assertTrue(w in e.message!!, e.message)
        assertTrue('\n' !in e.message!!, "one line: ${e.message}")
    }

    private fun field(report: Report, name: String): Any = report.extra.first { it.first == name }.second

    @Test
    fun theRatiosAreTheFamilysFormulas() {
        val two = Fraction.of(2, 1)
        for (id in listOf("pckv-ue/ell2", "pckv-ue/default")) {
            val s = spec(id)
            val (a, b, p) = listOf("a", "b", "p").map { s.fraction(it) }
            val zero = (Fraction.ONE - a) / (Fraction.ONE - b)
            val hi = listOf(two * a * p / b, zero).max()
            val lo = listOf(two * a * (Fraction.ONE - p) / b, zero).min()
            assertEquals(hi / lo, PrivacyRegistry.mechanismPrivacy(s.fields)!!.ratio, id)
        }
        val g = spec("pckv-grr/ell2")
        val (a, b, p) = listOf("a", "b", "p").map { g.fraction(it) }
        val ell = g.int("ell")
        val q = b / two
        val shared = Fraction.of(ell - BigInteger.ONE) * q
        val grr = (shared + listOf(a * p, q).max()) / (shared + listOf(a * (Fraction.ONE - p), q).min())
        assertEquals(grr, PrivacyRegistry.mechanismPrivacy(g.fields)!!.ratio)
        val k = spec("privkvm/default")
        val (p1, p2) = listOf("p1", "p2").map { k.fraction(it) }
        val signs = listOf(p1 * p2, p1 * (Fraction.ONE - p2), (Fraction.ONE - p1) / two)
        val kvm = listOf(signs.max() / signs.min(), p1 / (Fraction.ONE - p1)).max()
        val facts = PrivacyRegistry.mechanismPrivacy(k.fields)!!
        assertEquals(kvm, facts.ratio)
        assertTrue(!facts.memoized && !facts.claimMatches) // privkvm's stated ε may exceed its ratio (Python's loose claim)
    }

    @Test
    fun anEditedClaimOrParametersOutOfRangeAreRefused() {
        refused(spec("pckv-ue/ell2"), { it["epsilon"] = 0.5 }, "claims epsilon=", "load the server's spec")
        refused(spec("pckv-ue/ell2"), { it["epsilon"] = 1.01 }, "must match them")
        refused(spec("pckv-ue/ell2"), { it["p"] = "1/2" }, "needs a > b and p > 1/2")
        refused(spec("pckv-ue/ell2"), { it["a"] = "1" }, "a must be in (0, 1)")
        refused(spec("pckv-ue/ell2"), { it["ell"] = 0 }, "ell must be in [1, 65536]")
        refused(spec("pckv-grr/ell2"), { it["b"] = "1/10" }, "b must be (1 - a)/(d + ell - 1)")
        refused(spec("pckv-grr/ell2"), { it["domain"] = listOf("a") }, "between 2 and 65536 keys")
        refused(spec("privkvm/default"), { it["ell"] = 2 }, "ell must be 1")
        refused(spec("privkvm/default"), { it["epsilon"] = 0.5 }, "claims epsilon=")
        refused(spec("privkvm/default"), { it["p2"] = "1/2" }, "needs p1 > 1/2 and p2 > 1/2")
    }

    @Test
    fun theInputFormsGiveTheSameReports() {
        val spec = spec("pckv-grr/ell2")
        // the vector case of {"b": -1, "d": 0.25}: every form of the same pairs gives its report
        val case = Vectors.cases("encodings").first { it["spec"] == "pckv-grr/ell2" && (it["value"] as? Map<*, *>)?.keys == setOf("b", "d") }
        val bytes = Bytes.fromHex(case["bytes"] as String)
        val forms = listOf<Any>(
            mapOf("b" to -1.0, "d" to 0.25),
            listOf(listOf("b", -1), listOf("d", "0.25")),
            arrayOf(arrayOf<Any>("b", BigInteger.valueOf(-1)), "d" to 0.25),
            """{"b": -1, "d": 0.25}""",
            """[["b", -1.0], ["d", 0.25]]""",
        )
        val reports = forms.map { Registry.makeEncoder(spec, EncoderOptions(source = dev.ldp.client.FixedSource(bytes))).encode(it).toJson() }
        assertEquals(List(forms.size) { case["report_json"] }, reports)
    }

    @Test
    fun aBadInputIsOneClearValueError() {
        val e = encoder(spec("pckv-ue/ell2"))
        fun bad(input: Any, vararg words: String) {
            val error = assertFailsWith<ValueException> { e.encode(input) }
            for (w in words) assertTrue(w in error.message!!, error.message)
            assertTrue('\n' !in error.message!!, "one line: ${error.message}")
        }
        bad("""{"a": 0.5""", "must be a JSON object such as")
        bad(42, "must be a JSON object or a list of [key, value] pairs")
        bad(listOf(listOf("a")), "a key-value pair must be [key, value]")
        bad(listOf(arrayOf<Any>("a", 0.5, 1)), "a key-value pair must be [key, value]", "[a, 0.5, 1]")
        bad(listOf(listOf("a", Any())), "the value of key \"a\" must be a number")
        bad(mapOf("zz" to 0.5), "not in the domain")
        bad(listOf(listOf("a", 0.5), listOf("a", 0.1)), "appears twice")
        bad(mapOf("a" to 1.5), "must be in [-1, 1]")
        bad(mapOf("a" to "lots"), "must be a number")
        bad(mapOf("a" to true), "must be a number")
        bad(mapOf("a" to Double.NaN), "must be a number")
    }

    private fun assertFits(what: String, observed: LongArray, expected: DoubleArray, df: Int) {
        assertTrue(expected.all { it >= 1000.0 }, "$what: an expected count below 1,000; expected ${expected.toList()}")
        val x = ChiSquare.statistic(observed, expected)
        val critical = ChiSquare.critical(ALPHA, df)
        assertTrue(x < critical, "$what: chi-square $x >= $critical (df $df, alpha $ALPHA); observed ${observed.toList()}")
    }

    /**
     * PCKV-GRR on pairs {a: 0.5, b: −1} (η = max(2, ℓ) = 2 slots, each 1/2): the (key, sign) output over
     * the d + ℓ = 6 keys × 2 signs. Slot i (key kᵢ, P[v* = +1] = tᵢ) gives kᵢ with a, its sign +1 with
     * tᵢp + (1 − tᵢ)(1 − p); with 1 − a each other key uniformly and a uniform sign. df = 11.
     */
    @Test
    fun pckvGrrChiSquare() {
        val spec = spec("pckv-grr/ell2")
        val d = spec.domain().size
        val padded = d + spec.intValue("ell")
        val a = spec.fraction("a").toDouble()
        val p = spec.fraction("p").toDouble()
        val slots = listOf(0 to 0.75, 1 to 0.0) // (key index, P[v* = +1])
        val expected = DoubleArray(2 * padded)
        for ((k, t) in slots) {
            for (j in 0 until padded) {
                val plus = if (j == k) a * (t * p + (1 - t) * (1 - p)) else (1 - a) / (padded - 1) / 2
                val minus = if (j == k) a * (1 - (t * p + (1 - t) * (1 - p))) else (1 - a) / (padded - 1) / 2
                expected[2 * j + 1] += REPORTS * plus / slots.size
                expected[2 * j] += REPORTS * minus / slots.size
            }
        }
        val encoder = encoder(spec)
        val input = mapOf("a" to 0.5, "b" to -1.0)
        val counts = LongArray(2 * padded)
        repeat(REPORTS) {
            val report = encoder.encode(input)
            counts[2 * (field(report, "key") as Long).toInt() + (field(report, "sign") as Long).toInt()]++
        }
        assertFits("pckv-grr/ell2", counts, expected, 2 * padded - 1)
    }

    /**
     * PrivKVM on pairs {a: 0.5} over d = 3 keys: the (key, response) output, 9 cells. The key is uniform;
     * the held key a (t = 3/4) is reported present with p₁, then +1 (response 2) with tp₂ + (1 − t)(1 − p₂);
     * a key not held (v = 0, t = 1/2) is reported present with 1 − p₁, then ±1 with 1/2 each; absent is
     * response 1. df = 8.
     */
    @Test
    fun privkvmChiSquare() {
        val spec = spec("privkvm/default")
        val d = spec.domain().size
        val p1 = spec.fraction("p1").toDouble()
        val p2 = spec.fraction("p2").toDouble()
        val expected = DoubleArray(3 * d)
        for (j in 0 until d) {
            val (present, t) = if (j == 0) p1 to 0.75 else (1 - p1) to 0.5
            val plus = t * p2 + (1 - t) * (1 - p2)
            expected[3 * j + 2] = REPORTS * present * plus / d
            expected[3 * j + 0] = REPORTS * present * (1 - plus) / d
            expected[3 * j + 1] = REPORTS * (1 - present) / d
        }
        val encoder = encoder(spec)
        val input = mapOf("a" to 0.5)
        val counts = LongArray(3 * d)
        repeat(REPORTS) {
            val report = encoder.encode(input)
            counts[3 * (field(report, "key") as Long).toInt() + (field(report, "response") as Long).toInt()]++
        }
        assertFits("privkvm/default", counts, expected, 3 * d - 1)
    }

    /**
     * PCKV-UE on pairs {a: 0.5, b: −1} (η = 2 slots): the joint state (plus, minus, neither) of the
     * coordinates of keys a and b, 9 cells (40,000 reports). Given slot i (key kᵢ, tᵢ), coordinates are independent: kᵢ's
     * is plus with a(tᵢp + (1 − tᵢ)(1 − p)), minus with a(1 − that), neither with 1 − a; any other's plus
     * and minus with b/2 each. The joint is the average over the slots of the products. df = 8.
     */
    @Test
    fun pckvUeChiSquare() {
        val spec = spec("pckv-ue/ell2")
        val ueReports = 40_000 // the smallest cell, (minus, minus), has probability ≈ 0.0286
        val a = spec.fraction("a").toDouble()
        val b = spec.fraction("b").toDouble()
        val p = spec.fraction("p").toDouble()
        val slots = listOf(0 to 0.75, 1 to 0.0)
        fun states(c: Int, k: Int, t: Double): DoubleArray = if (c == k) {
            val plus = t * p + (1 - t) * (1 - p)
            doubleArrayOf(a * plus, a * (1 - plus), 1 - a)
        } else {
            doubleArrayOf(b / 2, b / 2, 1 - b)
        }
        val expected = DoubleArray(9)
        for ((k, t) in slots) {
            val s0 = states(0, k, t)
            val s1 = states(1, k, t)
            for (x in 0 until 3) for (y in 0 until 3) expected[3 * x + y] += ueReports * s0[x] * s1[y] / slots.size
        }
        val encoder = encoder(spec)
        val input = mapOf("a" to 0.5, "b" to -1.0)
        val counts = LongArray(9)
        fun bit(bits: ByteArray, i: Int) = (bits[i ushr 3].toInt() ushr (7 - (i and 7))) and 1
        fun state(report: Report, i: Int): Int {
            val plus = bit(field(report, "plus") as ByteArray, i)
            val minus = bit(field(report, "minus") as ByteArray, i)
            assertTrue(plus + minus <= 1, "a key both plus and minus")
            return if (plus == 1) 0 else if (minus == 1) 1 else 2
        }
        repeat(ueReports) {
            val report = encoder.encode(input)
            counts[3 * state(report, 0) + state(report, 1)]++
        }
        assertFits("pckv-ue/ell2 keys a and b", counts, expected, 8)
    }
}
