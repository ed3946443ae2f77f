package dev.ldp.client.mechanisms

import dev.ldp.client.ReportBits
import dev.ldp.client.EncoderOptions
import dev.ldp.client.FixedSource
import dev.ldp.client.Fraction
import dev.ldp.client.PooledSource
import dev.ldp.client.Registry
import dev.ldp.client.Report
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.ValueException
import dev.ldp.client.hashing.LH_PRIME
import dev.ldp.client.hashing.LH_SEED_SPACE
import dev.ldp.client.hashing.lhBucket
import dev.ldp.client.mechanisms.FamilyChecks.edited
import dev.ldp.client.mechanisms.LocalHashChecks.assertHashedReportsFit
import dev.ldp.client.mechanisms.FamilyChecks.refused
import dev.ldp.client.mechanisms.FamilyChecks.spec
import java.math.BigInteger
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/**
 * OLH and BLH: the claim, errors, and the distribution of the reports (the `encodings` and `specs`
 * vectors check the bytes through the registry; the `olh` section's hash family is checked by
 * `HashingVectorsTest` and `LhCollisionTest`).
 */
class LocalHashTest {
    companion object {
        val SPECS = listOf("olh/default-g", "olh/large-eps", "olh/explicit-g", "blh/str")
        const val REPORTS = 200_000
    }

    /**
     * P[seed, y | x] = (p when y = h_seed(x), else q)/((P − 1)P). Listed for three seeds that put some
     * values in different buckets (and all g outputs of each): the worst ratio is reached there; elsewhere
     * every probability is one of the same two.
     */
    @TestFactory
    fun theStatedEpsilonIsCheckedAgainstTheExactReportProbabilities(): List<DynamicTest> = SPECS.map { id ->
        DynamicTest.dynamicTest(id) {
            val spec = spec(id)
            val d = spec.domain().size.toLong()
            val g = spec.int("g").toLong()
            val p = spec.fraction("p")
            val q = (Fraction.ONE - p).divInt(BigInteger.valueOf(g - 1))
            val seeds = (1L until 200L).map { it * (LH_SEED_SPACE / 200) + 12_345 } // a ≈ i·P/200: values spread over buckets
                .filter { s -> (0 until d).map { lhBucket(s, it, g) }.distinct().size > 1 }.take(3)
            assertTrue(seeds.isNotEmpty())
            val perSeed = Fraction.of(BigInteger.ONE, BigInteger.valueOf(LH_SEED_SPACE))
            val rows = (0 until d).map { x ->
                seeds.flatMap { s -> (0 until g).map { y -> perSeed * (if (y == lhBucket(s, x, g).toLong()) p else q) } }
            }
            FamilyChecks.claimIsChecked(spec, FamilyChecks.worstRatio(rows))
        }
    }

    @Test
    fun badSpecsAreRefusedWithOneLine() {
        val olh = spec("olh/explicit-g")
        refused("""{"mechanism":"olh","domain":[1,2],"epsilon":1,"p":"1/2"}""", "olh: g is calibrated from epsilon by the server")
        refused("""{"mechanism":"olh","epsilon":1}""", "olh: domain is required")
        refused(edited(olh) { it["g"] = 1 }, "g must be in [2, 2147483646], got 1")
        refused(edited(olh) { it["g"] = LH_PRIME }, "g must be in [2, 2147483646], got 2147483647")
        refused(edited(olh) { it["p"] = "1/7" }, "olh: p must exceed 1/g = 1/7, got 1/7")
        refused(edited(olh) { it["domain"] = listOf(1) }, "olh needs a domain of at least 2 values")
        refused(edited(spec("blh/str")) { it["g"] = 3 }, "blh has g = 2 by definition, got g=3; use olh for other g")
        refused(edited(olh) { it["epsilon"] = 22.0 }, "above 21", "largest epsilon olh supports", "hash prime")
        assertEquals(21.0, dev.ldp.client.Claim.privacyFacts(olh.fields).maxEpsilon)
    }

    @Test
    fun theSeedIsDrawnFirstThenOneRandomizedResponse() {
        val spec = spec("blh/str")
        // the seed: uniform((P − 1)P) on the source's bits; 2^61 < (P − 1)P < 2^62, so the walk's first leaves
        // are at depth 62: zero bits give seed 0 (a = 1, b = 0) after 62 bits, one byte a read. Then the
        // response, one walk over (p, 1 − p) with p > 1/2: its first bit, 0, keeps the bucket (the 63rd bit).
        val source = FixedSource(ByteArray(8))
        val report = LocalHashingEncoder(spec, source).encode("z")
        assertEquals(List(8) { 1 }, source.reads)
        assertEquals(63L, dev.ldp.client.ReportBits.reader(source).bitsRead)
        assertEquals(BigInteger.ZERO, report.seed)
        assertEquals(BigInteger.valueOf(lhBucket(0, 2, 2).toLong()), report.value) // kept
        assertTrue(Registry.makeEncoder(spec) is LocalHashingEncoder)
        assertFailsWith<ValueException> { LocalHashingEncoder(spec).encode("w") }
        assertFailsWith<SpecException> { LocalHashingEncoder(spec("grr/str")) }
    }

    /** The reports of each spec against their exact probabilities ([assertHashedReportsFit]), from real `SecureRandom` output. */
    @TestFactory
    fun reportsFollowTheExactProbabilities(): List<DynamicTest> = SPECS.map { id ->
        DynamicTest.dynamicTest(id) {
            val spec: Spec = spec(id)
            val x = spec.domain().size / 2
            val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))
            val value = spec.domain()[x]
            val reports = List(REPORTS) { encoder.encode(value).let { r: Report -> Triple(r.seed!!.toLong(), (r.value as BigInteger).toLong(), x.toLong()) } }
            assertHashedReportsFit(id, spec.int("g").toLong(), spec.fraction("p"), reports)
        }
    }

    /**
     * Power: the same test, told the true value is the next one, rejects (olh/default-g, 50,000 reports): the
     * offset from the wrong value's bucket is 0 with about p/g + (1 − 1/g)q ≈ 0.25 instead of p ≈ 0.47, a
     * noncentrality in the thousands against the critical value at df 15 (≈ 56.5).
     */
    @Test
    fun theTestRejectsReportsOfAnotherValue() {
        val spec = spec("olh/default-g")
        val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))
        val reports = List(50_000) { encoder.encode(spec.domain()[3]).let { r -> Triple(r.seed!!.toLong(), (r.value as BigInteger).toLong(), 4L) } }
        val e = assertFailsWith<AssertionError> { assertHashedReportsFit("olh/default-g told 4", 4, spec.fraction("p"), reports) }
        assertTrue("(true bucket, offset): chi-square" in e.message!!, e.message)
    }
}
