package dev.ldp.client.mechanisms

import dev.ldp.client.ReportBits
import dev.ldp.client.ChiSquare
import dev.ldp.client.EncoderOptions
import dev.ldp.client.FixedSource
import dev.ldp.client.Fraction
import dev.ldp.client.Json
import dev.ldp.client.PooledSource
import dev.ldp.client.Registry
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.ValueException
import dev.ldp.client.Vectors
import dev.ldp.client.int
import dev.ldp.client.ints
import dev.ldp.client.mechanisms.FamilyChecks.edited
import dev.ldp.client.mechanisms.FamilyChecks.refused
import dev.ldp.client.mechanisms.FamilyChecks.spec
import dev.ldp.client.str
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/** CMS and HCMS: the `sketch` vectors, the claim, errors, and the distribution of the reports (the vectors check the bytes). */
class SketchTest {
    private companion object {
        const val REPORTS = 200_000

        fun positions(spec: Spec, value: Any): List<Int> =
            (0 until spec.intValue("k")).map { SketchHash.position(value, it, spec.int("salt").toLong(), spec.intValue("m")) }

        fun extra(report: dev.ldp.client.Report, name: String): Int = (report.extra.first { it.first == name }.second as Long).toInt()
    }

    @TestFactory
    fun sketchVectors(): List<DynamicTest> = Vectors.cases("sketch").map { c ->
        DynamicTest.dynamicTest("${c.str("spec")} ${Json.dump(c["value"])}") {
            val got = (0 until c.ints("positions").size).map { j -> SketchHash.position(c["value"]!!, j, c.int("salt").toLong(), c.int("m")) }
            assertEquals(c.ints("positions"), got)
            val spec = spec(c.str("spec"))
            assertEquals(c.int("k"), spec.intValue("k"))
            assertEquals(c.int("m"), spec.intValue("m"))
            assertEquals(c.int("salt"), spec.intValue("salt"))
        }
    }

    /**
     * CMS: given the row j, the m bits are independent, the one at h_j(x) 1 with p and the others with q; the
     * bits at positions no domain value hashes to have the same distribution under every x, so the
     * output (j, the bits at the positions {h_j(x′)}) holds every ratio. Its table is exact.
     */
    @Test
    fun cmsClaimIsCheckedAgainstTheExactReportProbabilities() {
        val spec = spec("cms/str")
        val domain = spec.domain()
        val k = spec.intValue("k")
        val p = spec.fraction("p")
        val q = Fraction.ONE - p
        val hashes = domain.map { positions(spec, it) }
        val rows = domain.indices.map { x ->
            (0 until k).flatMap { j ->
                val watched = hashes.map { it[j] }.distinct()
                (0 until (1 shl watched.size)).map { pattern ->
                    watched.withIndex().fold(Fraction.of(1, k.toLong())) { acc, (b, position) ->
                        val one = (pattern ushr b) and 1 == 1
                        val pOne = if (position == hashes[x][j]) p else q
                        acc * (if (one) pOne else Fraction.ONE - pOne)
                    }
                }
            }
        }
        for (row in rows) assertEquals(Fraction.ONE, row.fold(Fraction.ZERO) { a, f -> a + f })
        FamilyChecks.claimIsChecked(spec, FamilyChecks.worstRatio(rows))
    }

    /** HCMS: P[j, l, bit | x] = (1/(km))·(p when the bit is 1 exactly when H_m[l, h_j(x)] = +1, else 1 − p), every output listed. */
    @Test
    fun hcmsClaimIsCheckedAgainstTheExactReportProbabilities() {
        val spec = spec("hcms/int")
        val k = spec.intValue("k")
        val m = spec.intValue("m")
        val p = spec.fraction("p")
        val cell = Fraction.of(1, k.toLong() * m)
        val rows = spec.domain().map { value ->
            val h = positions(spec, value)
            (0 until k).flatMap { j ->
                (0 until m).flatMap { l ->
                    val plus = Integer.bitCount(l and h[j]) % 2 == 0
                    listOf(0, 1).map { bit -> cell * (if ((bit == 1) == plus) p else Fraction.ONE - p) }
                }
            }
        }
        for (row in rows) assertEquals(Fraction.ONE, row.fold(Fraction.ZERO) { a, f -> a + f })
        FamilyChecks.claimIsChecked(spec, FamilyChecks.worstRatio(rows))
    }

    @Test
    fun badSpecsAreRefusedWithOneLine() {
        val cms = spec("cms/str")
        val hcms = spec("hcms/int")
        refused("""{"mechanism":"cms","domain":[1,2],"epsilon":1}""", "calibrated from epsilon")
        refused(edited(hcms) { it["m"] = 24 }, "hcms needs m a power of 2 (the Hadamard matrix H_m), got m=24")
        refused(edited(cms) { it["k"] = 0 }, "k must be in [1, 65536], got 0")
        refused(edited(cms) { it["m"] = 1 }, "m must be in [2, 1048576], got 1")
        refused(edited(cms) { it["k"] = 1 shl 16; it["m"] = 1 shl 9 }, "cms: a sketch of k=65536 x m=512 is above the limit of 16,777,216 counters")
        refused(edited(cms) { it["salt"] = 4294967296L - 15 }, "salt must be in [0, 4294967280], got 4294967281")
        refused(edited(cms) { it["p"] = "1/2" }, "cms: p must exceed 1/2, got 1/2")
        refused(edited(hcms) { it["domain"] = listOf(1) }, "hcms needs a domain of at least 2 values")
        // the largest salt: row k − 1 hashes with seed 2^32 − 1
        val edge = edited(cms) { it["salt"] = 4294967296L - 16 }
        assertEquals(4294967280L, Spec.load(edge).int("salt").toLong())
    }

    @Test
    fun anyValueCanBeEncodedButOnlyValuesOfPythonsTypes() {
        val spec = spec("cms/str")
        val encoder = CmsEncoder(spec)
        for (value in listOf("not-in-domain", 7, 2.5, true)) assertEquals(3, encoder.encode(value).bits!!.size)
        assertFailsWith<ValueException> { encoder.encode(listOf(1)) }
        assertFailsWith<ValueException> { HcmsEncoder(spec("hcms/int")).encode("\ud800") }
        assertTrue(Registry.makeEncoder(spec) is CmsEncoder)
        assertTrue(Registry.makeEncoder(spec("hcms/int")) is HcmsEncoder)
        assertFailsWith<SpecException> { CmsEncoder(spec("grr/str")) }
    }

    @Test
    fun theHcmsCoinsAreReadInOrderRowColumnKeep() {
        // on the source's bits, one byte a read: row = uniform(8), 3 bits: 001 → 1; column = uniform(32), 5 bits:
        // 00001 → 1; keep = coin(p) with p > 1/2: bit 0 reaches p's leaf at depth 1, kept
        val spec = spec("hcms/int")
        assertTrue(spec.fraction("p") > Fraction.of(1L, 2L))
        val source = FixedSource(byteArrayOf(0b0010_0001, 0))
        val report = HcmsEncoder(spec, source).encode(0)
        assertEquals(listOf(1, 1), source.reads)
        assertEquals(9L, dev.ldp.client.ReportBits.reader(source).bitsRead)
        val h = positions(spec, 0)[1]
        val plus = Integer.bitCount(1 and h) % 2 == 0
        assertEquals("""{"v":1,"spec":"${spec.fingerprint}","row":1,"column":1,"bit":${if (plus) 1 else 0}}""", report.toJson())
    }

    /**
     * CMS, from real `SecureRandom` output, two Pearson tests at α = 1e-6 each:
     * - the row: uniform over k = 16 (df 15);
     * - the bits given the row: for the n_j reports of row j, bit i is Bin(n_j, π) with π = p at i = h_j(x)
     *   and q elsewhere, independently, so Σ over (j, i) of (ones − n_jπ)²/(n_jπ(1 − π)) is χ² with
     *   df = k·m = 320 (n_j·min(π, 1 − π) ≈ 3,400);
     * - the true bit and the next one jointly (4 cells, df 3): their independence.
     */
    @Test
    fun cmsReportsFollowTheExactProbabilities() {
        val spec = spec("cms/str")
        val k = spec.intValue("k")
        val m = spec.intValue("m")
        val p = spec.fraction("p").toDouble()
        val q = 1 - p
        val value = spec.domain()[1]
        val h = positions(spec, value)
        val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))
        val rows = LongArray(k)
        val ones = Array(k) { LongArray(m) }
        val pairs = LongArray(4)
        repeat(REPORTS) {
            val report = encoder.encode(value)
            val j = extra(report, "row")
            val bits = report.bits!!
            fun bit(i: Int) = (bits[i ushr 3].toInt() ushr (7 - (i and 7))) and 1
            rows[j]++
            for (i in 0 until m) ones[j][i] += bit(i).toLong()
            pairs[2 * bit(h[j]) + bit((h[j] + 1) % m)]++
        }
        FamilyChecks.assertFits("cms/str rows", rows, DoubleArray(k) { 1.0 / k }, REPORTS)
        var statistic = 0.0
        for (j in 0 until k) {
            for (i in 0 until m) {
                val pi = if (i == h[j]) p else q
                val n = rows[j].toDouble()
                assertTrue(n * minOf(pi, 1 - pi) >= 1000.0)
                statistic += (ones[j][i] - n * pi).let { it * it } / (n * pi * (1 - pi))
            }
        }
        val critical = ChiSquare.critical(FamilyChecks.ALPHA, k * m)
        assertTrue(statistic < critical, "cms/str: per-bit chi-square $statistic >= $critical (df ${k * m})")
        FamilyChecks.assertFits("cms/str true bit and the next", pairs, doubleArrayOf(q * (1 - q), q * q, p * (1 - q), p * q), REPORTS)
    }

    /**
     * HCMS, from real `SecureRandom` output, two Pearson tests at α = 1e-6 each: (row j, column group
     * ⌊l/8⌋, agree) with agree = (bit = 1) ⇔ (H_m[l, h_j(x)] = +1), P = (1/32)·(p or 1 − p), 64 cells, df 63
     * (smallest expected count ≈ 1,700); and the column alone, uniform over m = 32 (df 31).
     */
    @Test
    fun hcmsReportsFollowTheExactProbabilities() {
        val spec = spec("hcms/int")
        val k = spec.intValue("k")
        val m = spec.intValue("m")
        val p = spec.fraction("p").toDouble()
        val value = spec.domain()[2]
        val h = positions(spec, value)
        val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))
        val groups = m / 8
        val joint = LongArray(k * groups * 2)
        val columns = LongArray(m)
        repeat(REPORTS) {
            val report = encoder.encode(value)
            val j = extra(report, "row")
            val l = extra(report, "column")
            val plus = Integer.bitCount(l and h[j]) % 2 == 0
            val agree = if ((extra(report, "bit") == 1) == plus) 1 else 0
            joint[(j * groups + l / 8) * 2 + agree]++
            columns[l]++
        }
        val probs = DoubleArray(joint.size) { c -> (if (c % 2 == 1) p else 1 - p) / (k * groups) }
        FamilyChecks.assertFits("hcms/int (row, column group, agree)", joint, probs, REPORTS)
        FamilyChecks.assertFits("hcms/int columns", columns, DoubleArray(m) { 1.0 / m }, REPORTS)
    }
}
