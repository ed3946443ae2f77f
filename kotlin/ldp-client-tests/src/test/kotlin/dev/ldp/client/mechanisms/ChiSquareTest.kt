package dev.ldp.client.mechanisms

import dev.ldp.client.ChiSquare
import dev.ldp.client.EncoderOptions
import dev.ldp.client.PooledSource
import dev.ldp.client.Registry
import dev.ldp.client.Spec
import dev.ldp.client.Vectors
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/**
 * Chi-square tests of real `SecureRandom` output (a fresh [PooledSource], the default source's kind,
 * unseeded) against each spec's exact probabilities, through [Registry.makeEncoder].
 *
 * Each test is one Pearson test at α = 1e-6 (a run is never seeded, so a correct encoder fails a
 * given test once in a million runs); its degrees of freedom are stated with it and its critical value
 * derived from the χ² distribution ([ChiSquare.critical]; e.g. df = 7: 40.52, df = 20: 67.0). Every
 * expected cell count is at least 1,000, so the χ² approximation of the statistic holds.
 */
class ChiSquareTest {
    private companion object {
        const val ALPHA = 1e-6
        const val REPORTS = 200_000
    }

    private fun spec(id: String): Spec = Vectors.specs.getValue(id)

    private fun assertFits(what: String, observed: LongArray, expected: DoubleArray, df: Int) {
        assertTrue(expected.all { it >= 1000.0 }, "$what: an expected count below 1,000")
        val x = ChiSquare.statistic(observed, expected)
        val critical = ChiSquare.critical(ALPHA, df)
        assertTrue(x < critical, "$what: chi-square $x >= $critical (df $df, alpha $ALPHA); observed ${observed.toList()}")
    }

    @Test
    fun theCriticalValuesAreTheChiSquareDistributions() {
        // scipy.stats.chi2.isf(1e-6, df) for df = 1, 7, 31
        assertEquals(23.928126976934827, ChiSquare.critical(ALPHA, 1), 1e-6)
        assertEquals(40.521831234179864, ChiSquare.critical(ALPHA, 7), 1e-6)
        assertEquals(83.64251584700447, ChiSquare.critical(ALPHA, 31), 1e-6)
    }

    /** GRR: the reported value's distribution, p on the true value and q = (1 − p)/(d − 1) on each other; df = d − 1. */
    @TestFactory
    fun grr(): List<DynamicTest> = listOf("grr/int", "grr/str", "grr/explicit-p", "binary-rr/default").map { id ->
        DynamicTest.dynamicTest(id) {
            val spec = spec(id)
            val domain = spec.domain()
            val d = domain.size
            val trueIndex = d / 2
            val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))
            val counts = LongArray(d)
            repeat(REPORTS) { counts[domain.indexOf(encoder.encode(domain[trueIndex]).value)]++ }
            val p = spec.fraction("p").toDouble()
            val q = (1 - p) / (d - 1)
            val expected = DoubleArray(d) { REPORTS * (if (it == trueIndex) p else q) }
            assertFits(id, counts, expected, d - 1)
        }
    }

    /**
     * OUE and SUE: each bit's count of ones, Bin(N, p) for the true bit and Bin(N, q) for the others.
     * The d bits are independent, so Σ over bits of (ones − Np)²/(Np(1 − p)) is χ² with df = d; the joint
     * distribution of the true bit and the next one (4 cells, df = 3) tests their independence.
     */
    @TestFactory
    fun unary(): List<DynamicTest> = listOf("oue/str", "oue/int", "sue/int").map { id ->
        DynamicTest.dynamicTest(id) {
            val spec = spec(id)
            val domain = spec.domain()
            val d = domain.size
            val trueIndex = 1
            val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))
            val ones = LongArray(d)
            val pairs = LongArray(4)
            repeat(REPORTS) {
                val bits = encoder.encode(domain[trueIndex]).bits!!
                fun bit(i: Int) = (bits[i ushr 3].toInt() ushr (7 - (i and 7))) and 1
                for (i in 0 until d) ones[i] += bit(i).toLong()
                pairs[2 * bit(trueIndex) + bit(trueIndex + 1)]++
            }
            val p = spec.fraction("p").toDouble()
            val q = spec.fraction("q").toDouble()
            val prob = DoubleArray(d) { if (it == trueIndex) p else q }
            // per bit: the two cells (ones, zeros) of Bin(N, prob) give (ones − N·prob)²/(N·prob·(1 − prob))
            val statistic = (0 until d).sumOf { i ->
                ChiSquare.statistic(longArrayOf(ones[i], REPORTS - ones[i]), doubleArrayOf(REPORTS * prob[i], REPORTS * (1 - prob[i])))
            }
            val critical = ChiSquare.critical(ALPHA, d)
            assertTrue(statistic < critical, "$id: per-bit chi-square $statistic >= $critical (df $d)")
            val joint = doubleArrayOf((1 - p) * (1 - q), (1 - p) * q, p * (1 - q), p * q).map { it * REPORTS }.toDoubleArray()
            assertFits("$id true bit and bit ${trueIndex + 1}", pairs, joint, 3)
        }
    }

    /**
     * The GRR test has power: the same reports of `grr/int` (ε = 1, 8 values, p ≈ 0.280) against
     * probabilities 0.02 off (p + 0.02 on the true value, the rest spread evenly) give a noncentrality
     * λ ≈ N·(0.02²/p + 0.02²/(7q)) ≈ 400, far above the critical value 40.5 (the statistic's mean ≈ 407, sd
     * ≈ 40: it falls below 40.5 with probability < 1e-15).
     */
    @Test
    fun theGrrTestRejectsProbabilitiesTwoPointsOff() {
        val spec = spec("grr/int")
        val domain = spec.domain()
        val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))
        val counts = LongArray(domain.size)
        repeat(REPORTS) { counts[domain.indexOf(encoder.encode(domain[0]).value)]++ }
        val p = spec.fraction("p").toDouble() + 0.02
        val q = (1 - p) / (domain.size - 1)
        val expected = DoubleArray(domain.size) { REPORTS * (if (it == 0) p else q) }
        assertTrue(ChiSquare.statistic(counts, expected) > ChiSquare.critical(ALPHA, domain.size - 1))
    }
}
