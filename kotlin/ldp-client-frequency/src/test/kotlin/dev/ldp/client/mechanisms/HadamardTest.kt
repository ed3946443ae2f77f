package dev.ldp.client.mechanisms

import dev.ldp.client.EncoderOptions
import dev.ldp.client.FixedSource
import dev.ldp.client.Fraction
import dev.ldp.client.PooledSource
import dev.ldp.client.Registry
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.ValueException
import dev.ldp.client.mechanisms.FamilyChecks.edited
import dev.ldp.client.mechanisms.FamilyChecks.refused
import dev.ldp.client.mechanisms.FamilyChecks.spec
import java.math.BigInteger
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/** Hadamard response: the row positions, the block layout, the claim, errors, and the output distribution (the vectors check the bytes). */
class HadamardTest {
    private companion object {
        val SPECS = listOf("hr/high-privacy", "hr/blocks", "hr/one-per-block")
        const val REPORTS = 200_000

        /** Entry (r, c) of the Sylvester Hadamard matrix H_b, built by doubling (independent of rowPosition). */
        fun sylvester(b: Int): List<List<Int>> {
            var h = listOf(listOf(1))
            while (h.size < b) h = h.map { it + it } + h.map { row -> row + row.map { -it } }
            return h
        }

        /**
         * P[y | x] for every output y in [0, B·b), from the layout and the Sylvester matrix: 2p/b on the +1
         * positions of x's row inside x's block, (1 − p)/(Bb − b/2) on every other output.
         */
        fun probabilities(spec: Spec, x: Int): List<Fraction> {
            val blocks = spec.intValue("blocks")
            val b = HrLayout.blockSize(spec.domain().size, blocks)
            val h = sylvester(b)
            val p = spec.fraction("p")
            val inside = (p * Fraction.of(2, b.toLong()))
            val outside = (Fraction.ONE - p).divInt(BigInteger.valueOf(blocks.toLong() * b - b / 2))
            val block = x / (b - 1)
            val row = x % (b - 1) + 1
            return (0 until blocks * b).map { y -> if (y / b == block && h[row][y % b] == 1) inside else outside }
        }
    }

    @Test
    fun rowPositionListsEachRowsPlusAndMinusPositionsOnceInOrder() {
        for (b in listOf(2, 4, 8, 64)) {
            val h = sylvester(b)
            for (r in 1 until b) {
                for (plus in listOf(true, false)) {
                    val got = (0 until b / 2).map { HadamardRows.rowPosition(r, it, plus) }
                    val want = h[r].indices.filter { h[r][it] == (if (plus) 1 else -1) }
                    assertEquals(want, got, "b=$b row=$r plus=$plus")
                }
            }
        }
    }

    @Test
    fun blockSizeIsTheSmallestPowerOfTwoWithBTimesBMinusOneAtLeastD() {
        assertEquals(8, HrLayout.blockSize(5, 1))
        assertEquals(8, HrLayout.blockSize(40, 8))
        assertEquals(2, HrLayout.blockSize(5, 8))
        assertEquals(512, HrLayout.blockSize(1024, 4))
        assertEquals(4, HrLayout.blockSize(3, 1)) // 3 = 1·(4 − 1): exactly full
    }

    @TestFactory
    fun theStatedEpsilonIsCheckedAgainstTheExactOutputProbabilities(): List<DynamicTest> = SPECS.map { id ->
        DynamicTest.dynamicTest(id) {
            val spec = spec(id)
            val rows = spec.domain().indices.map { probabilities(spec, it) }
            for (row in rows) assertEquals(Fraction.ONE, row.fold(Fraction.ZERO) { a, f -> a + f }, "$id: a distribution")
            FamilyChecks.claimIsChecked(spec, FamilyChecks.worstRatio(rows))
        }
    }

    @Test
    fun badSpecsAreRefusedWithOneLine() {
        val spec = spec("hr/blocks")
        refused("""{"mechanism":"hr","domain":[1,2],"epsilon":1}""", "calibrated from epsilon")
        refused(edited(spec) { it["blocks"] = 3 }, "hr: blocks must be a power of two, got 3")
        refused(edited(spec) { it["blocks"] = 0 }, "blocks must be in [1, 4194304], got 0")
        refused(edited(spec) { it["blocks"] = 128 }, "hr: blocks must be at most 2d = 80, got 128")
        refused(edited(spec) { it["domain"] = listOf("a") }, "hr needs a domain of at least 2 values")
        refused(edited(spec) { it["p"] = "1/16" }, "hr: p must exceed 1/(2B) = 1/16, got 1/16")
    }

    @Test
    fun aValueOutsideTheDomainIsRefused() {
        val encoder = Registry.makeEncoder(spec("hr/blocks"), EncoderOptions(source = FixedSource(ByteArray(0))))
        val e = assertFailsWith<ValueException> { encoder.encode(40) }
        assertTrue("not in the domain" in e.message!!, e.message)
        assertFailsWith<ValueException> { encoder.encode(true) }
    }

    @Test
    fun theEncoderIsMadeByTheRegistryAndUsableFromJavasConstructor() {
        val spec = spec("hr/high-privacy")
        assertTrue(Registry.makeEncoder(spec) is HadamardEncoder)
        val y = (HadamardEncoder(spec).encode("a").value as BigInteger).toInt()
        assertTrue(y in 0 until 8)
        assertFailsWith<SpecException> { HadamardEncoder(spec("grr/str")) }
    }

    /**
     * The reported output's distribution for a true value in the middle of the domain: Pearson's test of
     * the B·b output counts against P[y | x] (df = B·b − 1; hr/blocks: 64 outputs, the smallest expected
     * count ≈ 1,800), at α = 1e-6, from real `SecureRandom` output.
     */
    @TestFactory
    fun outputsFollowTheExactProbabilities(): List<DynamicTest> = SPECS.map { id ->
        DynamicTest.dynamicTest(id) {
            val spec = spec(id)
            val x = spec.domain().size / 2
            val probs = probabilities(spec, x).map { it.toDouble() }.toDoubleArray()
            val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))
            val counts = LongArray(probs.size)
            val value = spec.domain()[x]
            repeat(REPORTS) { counts[(encoder.encode(value).value as BigInteger).toInt()]++ }
            FamilyChecks.assertFits(id, counts, probs, REPORTS)
        }
    }

    /**
     * Power: the same test rejects an encoder whose true value is off by one (its C_x is another row's):
     * for hr/high-privacy the cells of the two rows' differing positions move by 2p/b − q ≈ 0.06 each, a
     * noncentrality of thousands at 50,000 reports against a critical value of 40.5 (df 7).
     */
    @Test
    fun theTestRejectsTheNeighbouringValuesDistribution() {
        val reports = 50_000
        val spec = spec("hr/high-privacy")
        val probs = probabilities(spec, 1).map { it.toDouble() }.toDoubleArray()
        val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))
        val counts = LongArray(probs.size)
        repeat(reports) { counts[(encoder.encode(spec.domain()[2]).value as BigInteger).toInt()]++ }
        val expected = DoubleArray(probs.size) { probs[it] * reports }
        val x = dev.ldp.client.ChiSquare.statistic(counts, expected)
        assertTrue(x > dev.ldp.client.ChiSquare.critical(FamilyChecks.ALPHA, probs.size - 1), "statistic $x")
    }
}
