package dev.ldp.client.mechanisms

import dev.ldp.client.ChiSquare
import dev.ldp.client.EncoderOptions
import dev.ldp.client.Json
import dev.ldp.client.PooledSource
import dev.ldp.client.Registry
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.Vectors
import dev.ldp.client.str
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory
import kotlin.test.assertTrue

/**
 * The range mechanisms beyond their vectors (their `encodings` and `specs` cases run in `VectorsTest`):
 * the claim check, and chi-square tests of real `SecureRandom` output against the exact distribution
 * of a report (α = 1e-6 per test; degrees of freedom stated with each, critical values from the χ²
 * distribution; every expected count at least 100).
 */
class RangesTest {
    private companion object {
        const val ALPHA = 1e-6
        const val REPORTS = 20_000
    }

    private fun spec(id: String): Spec = Vectors.specs.getValue(id)

    private fun assertFits(what: String, observed: LongArray, expected: DoubleArray, df: Int) {
        assertTrue(expected.all { it >= 100.0 }, "$what: an expected count below 100: ${expected.min()}")
        val x = ChiSquare.statistic(observed, expected)
        val critical = ChiSquare.critical(ALPHA, df)
        assertTrue(x < critical, "$what: chi-square $x >= $critical (df $df, alpha $ALPHA); observed ${observed.toList()}")
    }

    @TestFactory
    fun aClaimBelowWhatTheProbabilitiesGiveIsRefused(): List<DynamicTest> = listOf("range-hierarchy/b2", "range-haar/int").map { id ->
        DynamicTest.dynamicTest(id) {
            val c = Vectors.list(Vectors.section("specs"), "cases").first { it.str("id") == id }
            val fields = LinkedHashMap(Json.parseObject(c.str("canonical_json")))
            fields["epsilon"] = (fields["epsilon"] as Double) / 2
            val e = kotlin.test.assertFailsWith<SpecException> { Spec.load(fields) }
            assertTrue(Regex("${c.str("mechanism")} claims epsilon=\\S+ but its exact probabilities give").containsMatchIn(e.message!!), e.message)
        }
    }

    /**
     * range-hierarchy: the level l is uniform on h levels and the value's node bit at it is 1 with p:
     * 2h cells (l, node bit), df = 2h − 1. Every other bit of level l is 1 with q (independent bits: the
     * ones among them are binomial; 2 cells, df = 1), and the bits beyond B^l are 0.
     */
    @TestFactory
    fun hierarchyChiSquare(): List<DynamicTest> = listOf("range-hierarchy/b2" to 5, "range-hierarchy/str" to 3).map { (id, x) ->
        DynamicTest.dynamicTest(id) {
            val spec = spec(id)
            val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource())) as RangeHierarchyEncoder
            val h = encoder.levels
            val branching = spec.intValue("branching")
            val value = spec.domain()[x]
            val cells = LongArray(2 * h)
            var others = 0L
            var otherOnes = 0L
            repeat(REPORTS) {
                val report = encoder.encode(value)
                val l = (report.extra.single { it.first == "level" }.second as Long).toInt() + 1
                val bits = report.bits!!
                fun bit(i: Int) = (bits[i ushr 3].toInt() ushr (7 - (i and 7))) and 1
                var width = 1
                repeat(l) { width *= branching }
                var below = 1
                repeat(h - l) { below *= branching }
                val node = x / below
                cells[2 * (l - 1) + bit(node)]++
                for (i in 0 until encoder.leaves) {
                    if (i >= width) assertTrue(bit(i) == 0, "bit $i beyond level $l's $width bits")
                    else if (i != node) { others++; otherOnes += bit(i) }
                }
            }
            val p = spec.fraction("p").toDouble()
            val q = spec.fraction("q").toDouble()
            assertFits("$id (level, node bit)", cells, DoubleArray(2 * h) { REPORTS.toDouble() / h * (if (it % 2 == 1) p else 1 - p) }, 2 * h - 1)
            assertFits("$id other bits", longArrayOf(otherOnes, others - otherOnes), doubleArrayOf(others * q, others * (1 - q)), 1)
        }
    }

    /**
     * range-haar: (level l, index j, bit) is fully categorical: P = (1/h)·2^−l·(p if bit is the true sign
     * H[j, node]·s, else 1 − p); 2·(2^h − 1) cells, df = 2^(h+1) − 3.
     */
    @TestFactory
    fun haarChiSquare(): List<DynamicTest> = listOf("range-haar/int" to 6, "range-haar/str" to 1).map { (id, x) ->
        DynamicTest.dynamicTest(id) {
            val spec = spec(id)
            val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource())) as RangeHaarEncoder
            val h = encoder.levels
            val offset = IntArray(h) { (1 shl it) - 1 } // the first (l, j) cell of level l
            val size = (1 shl h) - 1
            val counts = LongArray(2 * size)
            repeat(REPORTS) {
                val extra = encoder.encode(spec.domain()[x]).extra.toMap()
                val l = (extra.getValue("level") as Long).toInt()
                val j = (extra.getValue("index") as Long).toInt()
                counts[2 * (offset[l] + j) + (extra.getValue("bit") as Long).toInt()]++
            }
            val p = spec.fraction("p").toDouble()
            val expected = DoubleArray(2 * size)
            for (l in 0 until h) {
                val span = encoder.leaves shr l
                val node = x / span
                for (j in 0 until (1 shl l)) {
                    val positive = (x % span < span / 2) == (Integer.bitCount(j and node) % 2 == 0)
                    val cell = REPORTS.toDouble() / h / (1 shl l)
                    expected[2 * (offset[l] + j) + 1] = cell * (if (positive) p else 1 - p)
                    expected[2 * (offset[l] + j)] = cell * (if (positive) 1 - p else p)
                }
            }
            assertFits("$id (level, index, bit)", counts, expected, 2 * size - 1)
        }
    }
}
