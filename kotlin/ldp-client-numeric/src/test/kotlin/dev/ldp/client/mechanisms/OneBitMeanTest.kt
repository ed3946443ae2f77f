package dev.ldp.client.mechanisms

import dev.ldp.client.ChiSquare
import dev.ldp.client.ClientState
import dev.ldp.client.EncoderOptions
import dev.ldp.client.Fraction
import dev.ldp.client.Json
import dev.ldp.client.PooledSource
import dev.ldp.client.Registry
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.ValueException
import dev.ldp.client.Vectors
import dev.ldp.client.str
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertNull
import kotlin.test.assertTrue

/**
 * 1BitMean beyond its vectors (its `encodings` and `specs` cases run in `VectorsTest`): memo keys, the
 * claim check, values, and chi-square tests of real `SecureRandom` output against the exact
 * probability of a 1 (each one Pearson test of 2 cells, df = 1, α = 1e-6: critical value 23.93).
 */
class OneBitMeanTest {
    private companion object {
        const val ALPHA = 1e-6
    }

    private fun spec(id: String): Spec = Vectors.specs.getValue(id)

    private fun assertBinomial(what: String, ones: Long, n: Int, p1: Double) {
        val expected = doubleArrayOf(n * p1, n * (1 - p1))
        assertTrue(expected.all { it >= 1000.0 }, "$what: an expected count below 1,000")
        val x = ChiSquare.statistic(longArrayOf(ones, n - ones), expected)
        val critical = ChiSquare.critical(ALPHA, 1)
        assertTrue(x < critical, "$what: chi-square $x >= $critical (df 1, alpha $ALPHA); ones $ones of $n, expected ${n * p1}")
    }

    @Test
    fun plainHasNoMemoKeyAlphaRoundingKeysByGridPoint() {
        assertNull(Registry.makeEncoder(spec("onebitmean/plain")).memoKey(10))
        val encoder = OneBitMeanEncoder(spec("onebitmean/alpha"), ClientState(ByteArray(32), 0))
        val point = encoder.gridPoint(50)
        assertContentEquals(point.toString().toByteArray(), encoder.memoKey(50))
        assertTrue(point == 4 || point == 5, "50 of [0, 100] on grid 8 is at 4 (4 or 5 after α-rounding), got $point")
        // one memoized bit per grid point: with γ = 0 every report of a point repeats it
        val first = encoder.encode(100).value
        repeat(20) { assertEquals(first, encoder.encode(100).value) }
    }

    @Test
    fun valuesAreNumbersNotTextNorBooleans() {
        val encoder = Registry.makeEncoder(spec("onebitmean/plain"))
        encoder.encode(12)
        encoder.encode(12.5)
        for (v in listOf<Any>("12", true, Double.NaN, Double.NEGATIVE_INFINITY)) assertFailsWith<ValueException>(v.toString()) { encoder.encode(v) }
    }

    @Test
    fun aClaimBelowWhatTheProbabilitiesGiveIsRefused() {
        val c = Vectors.list(Vectors.section("specs"), "cases").first { it.str("id") == "onebitmean/alpha-gamma" }
        val fields = LinkedHashMap(Json.parseObject(c.str("canonical_json")))
        fields["epsilon"] = (fields["epsilon"] as Double) / 2
        val e = assertFailsWith<SpecException> { Spec.load(fields) }
        assertTrue(Regex("onebitmean claims epsilon=\\S+ but its exact probabilities give").containsMatchIn(e.message!!), e.message)
        fields["epsilon"] = c.let { Json.parseObject(it.str("canonical_json"))["epsilon"] }
        fields["gamma"] = "1/2"
        assertTrue("gamma must be below 1/2" in assertFailsWith<SpecException> { Spec.load(fields) }.message!!)
    }

    /** Plain: at u = 1/4 (900 of [0, 3600]) a 1 has probability u·p + (1 − u)(1 − p). */
    @Test
    fun plainChiSquare() {
        val spec = spec("onebitmean/plain")
        val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))
        val n = 50_000
        var ones = 0L
        repeat(n) { if (encoder.encode(900).value == 1.0) ones++ }
        val p = spec.fraction("p").toDouble()
        assertBinomial("plain u=1/4", ones, n, 0.25 * p + 0.75 * (1 - p))
    }

    /**
     * Alpha rounding over fresh clients (a new SecureRandom secret each): x = 0.53125 is grid position
     * 8.5 of 16, so the point is 8 or 9 with probability 1/2 each (α uniform); the memoized bit is 1
     * with P₁ = (memoProbability(8) + memoProbability(9))/2, and the report with P₁(1 − γ) + (1 − P₁)γ.
     */
    @Test
    fun alphaRoundingChiSquareOverFreshClients() {
        val spec = spec("onebitmean/alpha-gamma")
        val source = PooledSource()
        val n = 12_000
        var ones = 0L
        var probe: OneBitMeanEncoder? = null
        repeat(n) {
            val encoder = Registry.makeEncoder(spec, EncoderOptions(source = source)) as OneBitMeanEncoder
            probe = encoder
            if (encoder.encode(0.53125).value == 1.0) ones++
        }
        val p1 = ((probe!!.memoProbability(8) + probe!!.memoProbability(9)) * Fraction.of(1L, 2L)).toDouble()
        val gamma = spec.fraction("gamma").toDouble()
        assertBinomial("alpha x=0.53125", ones, n, p1 * (1 - gamma) + (1 - p1) * gamma)
    }

    /** One client: every report of a point is its memoized bit, flipped with γ afresh. */
    @Test
    fun outputPerturbationChiSquare() {
        val spec = spec("onebitmean/alpha-gamma")
        val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource(), client = ClientState(ByteArray(32) { 7 }, 0))) as OneBitMeanEncoder
        val bit = encoder.memoBit(encoder.gridPoint(0.25))
        val n = 50_000
        var same = 0L
        repeat(n) { if (encoder.encode(0.25).value == bit.toDouble()) same++ }
        assertBinomial("gamma flips", same, n, 1 - spec.fraction("gamma").toDouble())
    }
}
