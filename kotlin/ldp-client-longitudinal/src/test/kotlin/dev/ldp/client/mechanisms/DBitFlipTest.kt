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
import dev.ldp.client.Vectors
import dev.ldp.client.str
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/**
 * dBitFlip beyond its vectors (its `encodings` and `specs` cases run in `VectorsTest`): memo keys, the
 * claim check, and chi-square tests of real `SecureRandom` output (α = 1e-6 per test; degrees of
 * freedom stated with each, critical values from the χ² distribution).
 */
class DBitFlipTest {
    private companion object {
        const val ALPHA = 1e-6
    }

    private fun spec(id: String): Spec = Vectors.specs.getValue(id)

    private fun bit(bits: ByteArray, i: Int): Int = (bits[i ushr 3].toInt() ushr (7 - (i and 7))) and 1

    private fun assertFits(what: String, observed: LongArray, expected: DoubleArray, df: Int) {
        assertTrue(expected.all { it >= 50.0 }, "$what: an expected count below 50")
        val x = ChiSquare.statistic(observed, expected)
        val critical = ChiSquare.critical(ALPHA, df)
        assertTrue(x < critical, "$what: chi-square $x >= $critical (df $df, alpha $ALPHA)")
    }

    @Test
    fun valuesOfOneMemoKeyShareTheMemoizedBits() {
        val spec = spec("dbitflip/d1") // d = 1, gamma = 0: the report is fixed per memo key
        val encoder = DBitFlipEncoder(spec, ClientState(ByteArray(32) { 1 }, 0))
        val held = spec.domain()[encoder.buckets[0]]
        val others = spec.domain().filter { it != held }
        assertContentEquals(byteArrayOf(0x80.toByte()), encoder.memoKey(held))
        for (v in others) {
            assertContentEquals(byteArrayOf(0), encoder.memoKey(v))
            assertEquals(encoder.encode(others[0]), encoder.encode(v))
        }
    }

    @Test
    fun aClaimBelowWhatTheProbabilitiesGiveIsRefused() {
        val c = Vectors.list(Vectors.section("specs"), "cases").first { it.str("id") == "dbitflip/gamma" }
        val fields = LinkedHashMap(Json.parseObject(c.str("canonical_json")))
        fields["epsilon"] = (fields["epsilon"] as Double) / 2
        val e = assertFailsWith<SpecException> { Spec.load(fields) }
        assertTrue(Regex("dbitflip claims epsilon=\\S+ but its exact probabilities give").containsMatchIn(e.message!!), e.message)
    }

    /**
     * Over fresh clients (each a new SecureRandom secret) reporting the value 3 of `dbitflip/gamma`
     * (b = 10, d = 3): the sampled buckets are a uniform 3-subset (C(10, 3) = 120 cells, df = 119); where
     * the value's bucket is sampled its sent bit is 1 with p′ = γ + (1 − 2γ)p, every other sent bit with
     * q′ = 1 − p′ (independent bits: the ones among them are binomial; 2 cells each, df = 1).
     */
    @Test
    fun freshClientsChiSquare() {
        val spec = spec("dbitflip/gamma")
        val b = spec.domain().size
        val d = spec.intValue("d")
        val source = PooledSource()
        val n = 6_000
        val subsets = HashMap<List<Int>, Long>()
        var held = 0L
        var heldOnes = 0L
        var other = 0L
        var otherOnes = 0L
        val x = spec.domain().indexOf(java.math.BigInteger.valueOf(3))
        repeat(n) {
            val bits = Registry.makeEncoder(spec, EncoderOptions(source = source)).encode(3).bits!!
            val sampled = (0 until b).filter { bit(bits, it) == 1 }
            assertEquals(d, sampled.size)
            subsets[sampled] = (subsets[sampled] ?: 0L) + 1
            sampled.forEachIndexed { k, bucket ->
                val sent = bit(bits, b + k).toLong()
                if (bucket == x) { held++; heldOnes += sent } else { other++; otherOnes += sent }
            }
        }
        var cells = 1L
        for (k in 0 until d) cells = cells * (b - k) / (k + 1)
        assertEquals(120L, cells)
        val observed = LongArray(cells.toInt())
        subsets.values.forEachIndexed { i, count -> observed[i] = count }
        assertFits("sampled subsets", observed, DoubleArray(cells.toInt()) { n.toDouble() / cells }, cells.toInt() - 1)
        val p = spec.fraction("p")
        val gamma = spec.fraction("gamma")
        val sent = (gamma + (Fraction.ONE - gamma - gamma) * p).toDouble()
        assertFits("the value's sent bit", longArrayOf(heldOnes, held - heldOnes), doubleArrayOf(held * sent, held * (1 - sent)), 1)
        assertFits("the other sent bits", longArrayOf(otherOnes, other - otherOnes), doubleArrayOf(other * (1 - sent), other * sent), 1)
    }

    /** One client: each sent bit is its memoized bit flipped with γ afresh (d = 9 independent bits: per-bit χ², df = 9). */
    @Test
    fun outputPerturbationChiSquare() {
        val spec = spec("dbitflip/wide")
        val encoder = DBitFlipEncoder(spec, ClientState(ByteArray(32) { 9 }, 0), PooledSource())
        val b = spec.domain().size
        val d = spec.intValue("d")
        val memo = encoder.permanentWords(25)
        val n = 20_000
        val flipped = LongArray(d)
        repeat(n) {
            val bits = encoder.encode(25).bits!!
            for (k in 0 until d) if (bit(bits, b + k).toLong() != (memo[0] ushr k) and 1L) flipped[k]++
        }
        val gamma = spec.fraction("gamma").toDouble()
        val statistic = (0 until d).sumOf { k ->
            ChiSquare.statistic(longArrayOf(flipped[k], n - flipped[k]), doubleArrayOf(n * gamma, n * (1 - gamma)))
        }
        val critical = ChiSquare.critical(ALPHA, d)
        assertTrue(statistic < critical, "per-bit chi-square $statistic >= $critical (df $d)")
    }
}
