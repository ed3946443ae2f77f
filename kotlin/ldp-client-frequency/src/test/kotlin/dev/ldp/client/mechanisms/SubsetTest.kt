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

/** Subset selection: Floyd's sampler, the claim, errors, and the distribution of the reported subsets (the vectors check the bytes). */
class SubsetTest {
    private companion object {
        val SPECS = listOf("ss/str", "ss/omega", "ss/omega-1")
        const val REPORTS = 200_000

        fun choose(n: Int, k: Int): BigInteger =
            (0 until k).fold(BigInteger.ONE) { acc, i -> acc * BigInteger.valueOf((n - i).toLong()) / BigInteger.valueOf(i + 1L) }

        /** P[S | x] of an ω-subset: p/C(d − 1, ω − 1) when S holds x, (1 − p)/C(d − 1, ω) when not. */
        fun subsetProbabilities(spec: Spec): Pair<Fraction, Fraction> {
            val d = spec.domain().size
            val omega = spec.intValue("omega")
            val p = spec.fraction("p")
            return Pair(p.divInt(choose(d - 1, omega - 1)), (Fraction.ONE - p).divInt(choose(d - 1, omega)))
        }

        /** Every ω-subset of [0, d) as a bit mask, in increasing order of the mask. */
        fun subsets(d: Int, omega: Int): List<Long> = (0L until (1L shl d)).filter { java.lang.Long.bitCount(it) == omega }

        /** The reported subset as a bit mask (bit i = value i). */
        fun mask(bits: ByteArray, d: Int): Long =
            (0 until d).fold(0L) { m, i -> if ((bits[i ushr 3].toInt() ushr (7 - (i and 7))) and 1 == 1) m or (1L shl i) else m }

        /** The hypergeometric P[|S ∩ A| = k] of a uniform `draws`-subset of `population` values, `a` of them in A. */
        fun hypergeometric(population: Int, a: Int, draws: Int, k: Int): Fraction =
            Fraction.of(choose(a, k) * choose(population - a, draws - k), choose(population, draws))
    }

    @Test
    fun floydDrawsEachSubsetOnceWithItsCoins() {
        // randbelow(j + 1) for j = 2, 3, 4 (one byte each, its top 2, 3, 3 bits): t = 1, then 1 again (taken: j = 3 joins), then 0
        val source = FixedSource(byteArrayOf(0x40, 0x20, 0x00))
        assertEquals(listOf(1, 3, 0), Floyd.sample(5, 3, source))
        assertEquals(listOf(1, 1, 1), source.reads)
        assertEquals(emptyList(), Floyd.sample(5, 0, FixedSource(ByteArray(0))))
    }

    @Test
    fun floydAsABitSetDrawsTheSameSubsetWithTheSameReads() {
        val random = java.security.SecureRandom()
        for ((population, size) in listOf(5 to 3, 64 to 63, 65 to 1, 1023 to 275, 200 to 200, 10 to 0)) {
            val floyd = Floyd(population, size)
            repeat(20) {
                val bytes = ByteArray(64 * size + 64).also { random.nextBytes(it) }
                val a = FixedSource(bytes)
                val b = FixedSource(bytes)
                val members = floyd.sample(a)
                val words = floyd.sampleWords(b)
                assertEquals(members.sorted(), (0 until population).filter { (words[it ushr 6] ushr (it and 63)) and 1L != 0L })
                assertEquals(a.reads, b.reads)
            }
        }
    }

    @TestFactory
    fun theStatedEpsilonIsCheckedAgainstTheExactSubsetProbabilities(): List<DynamicTest> = SPECS.map { id ->
        DynamicTest.dynamicTest(id) {
            val spec = spec(id)
            val d = spec.domain().size
            val omega = spec.intValue("omega")
            val (holding, notHolding) = subsetProbabilities(spec)
            val ratio = if (d <= 16) {
                // every subset, every value: rows sum to 1
                val all = subsets(d, omega)
                val rows = (0 until d).map { x -> all.map { s -> if (s and (1L shl x) != 0L) holding else notHolding } }
                for (row in rows) assertEquals(Fraction.ONE, row.fold(Fraction.ZERO) { a, f -> a + f }, "$id: a distribution")
                FamilyChecks.worstRatio(rows)
            } else {
                // too many subsets to list: a subset holding x but not x′ has the two probabilities (1 ≤ ω ≤ d − 1)
                holding / notHolding
            }
            FamilyChecks.claimIsChecked(spec, ratio)
        }
    }

    @Test
    fun badSpecsAreRefusedWithOneLine() {
        val spec = spec("ss/str")
        refused("""{"mechanism":"ss","domain":[1,2,3],"epsilon":1}""", "calibrated from epsilon")
        refused(edited(spec) { it["omega"] = 10 }, "omega must be in [1, 9], got 10")
        refused(edited(spec) { it["omega"] = 0 }, "omega must be in [1, 9], got 0")
        refused(edited(spec) { it["p"] = "3/10" }, "ss: p must exceed omega/d = 3/10, got 3/10")
        refused(edited(spec) { it["domain"] = listOf("a") }, "ss needs a domain of at least 2 values, got 1")
    }

    @Test
    fun aValueOutsideTheDomainIsRefused() {
        val encoder = Registry.makeEncoder(spec("ss/str"), EncoderOptions(source = FixedSource(ByteArray(0))))
        val e = assertFailsWith<ValueException> { encoder.encode("s10") }
        assertTrue("not in the domain" in e.message!!, e.message)
    }

    @Test
    fun theEncoderIsMadeByTheRegistryAndHasOmegaMembers() {
        val spec = spec("ss/omega")
        assertTrue(Registry.makeEncoder(spec) is SubsetEncoder)
        val encoder = SubsetEncoder(spec)
        repeat(100) { assertEquals(20, encoder.encode(it % 70).bits!!.sumOf { b -> Integer.bitCount(b.toInt() and 0xff) }) }
        assertFailsWith<SpecException> { SubsetEncoder(spec("grr/str")) }
    }

    /**
     * Small specs: the reported subset's distribution over all C(d, ω) subsets, df = C(d, ω) − 1, at
     * α = 1e-6, from real `SecureRandom` output (ss/str: 120 subsets, 200,000 reports, the smallest expected
     * count ≈ 1,100; ss/omega-1: 3 subsets, 50,000 reports, ≈ 5,300).
     */
    @TestFactory
    fun smallSpecsSubsetsFollowTheExactProbabilities(): List<DynamicTest> = listOf("ss/str" to REPORTS, "ss/omega-1" to 50_000).map { (id, reports) ->
        DynamicTest.dynamicTest(id) {
            val spec = spec(id)
            val d = spec.domain().size
            val omega = spec.intValue("omega")
            val x = d / 2
            val all = subsets(d, omega)
            val cell = all.withIndex().associate { (i, s) -> s to i }
            val (holding, notHolding) = subsetProbabilities(spec)
            val probs = all.map { s -> (if (s and (1L shl x) != 0L) holding else notHolding).toDouble() }.toDoubleArray()
            val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))
            val counts = LongArray(all.size)
            val value = spec.domain()[x]
            repeat(reports) { counts[cell.getValue(mask(encoder.encode(value).bits!!, d))]++ }
            FamilyChecks.assertFits(id, counts, probs, reports)
        }
    }

    /**
     * ss/omega (d = 70, ω = 20: too many subsets to list): the cells (S holds x, |S ∩ A|) for a fixed set A of
     * 4 other values. Given S holds x, its other members are a uniform (ω − 1)-subset of the d − 1 others, so
     * |S ∩ A| is hypergeometric (69, 4, 19), else (69, 4, 20); the cells k ≥ 3 are merged (expected counts
     * below 1,000 otherwise), leaving 2·4 cells, df = 7, at α = 1e-6; 50,000 reports (the smallest expected
     * count ≈ 1,200).
     */
    @Test
    fun aLargeSpecsSubsetsFollowTheExactMembershipProbabilities() {
        val reports = 50_000
        val spec = spec("ss/omega")
        val d = spec.domain().size
        val omega = spec.intValue("omega")
        val p = spec.fraction("p")
        val x = 7
        val a = listOf(0, 30, 50, 69)
        val top = 3 // k ≥ 3 in one cell
        val probs = DoubleArray(2 * (top + 1))
        for ((h, share) in listOf(0 to Fraction.ONE - p, 1 to p)) {
            val draws = omega - h
            for (k in 0..a.size) probs[h * (top + 1) + minOf(k, top)] += (share * hypergeometric(d - 1, a.size, draws, k)).toDouble()
        }
        val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))
        val counts = LongArray(probs.size)
        repeat(reports) {
            val bits = encoder.encode(x).bits!!
            fun bit(i: Int) = (bits[i ushr 3].toInt() ushr (7 - (i and 7))) and 1
            assertEquals(omega, (0 until d).sumOf { bit(it) })
            counts[bit(x) * (top + 1) + minOf(a.sumOf { bit(it) }, top)]++
        }
        FamilyChecks.assertFits("ss/omega", counts, probs, reports)
    }
}
