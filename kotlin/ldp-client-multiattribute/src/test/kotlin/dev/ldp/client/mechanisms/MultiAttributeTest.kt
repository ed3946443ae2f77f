package dev.ldp.client.mechanisms

import dev.ldp.client.ChiSquare
import dev.ldp.client.EncoderOptions
import dev.ldp.client.Fraction
import dev.ldp.client.Json
import dev.ldp.client.JsonObject
import dev.ldp.client.LdpException
import dev.ldp.client.PooledSource
import dev.ldp.client.Registry
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.ValueException
import dev.ldp.client.privacy.maxRatioOfSums
import dev.ldp.client.Vectors
import dev.ldp.client.str
import java.math.BigInteger
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/**
 * Multi-attribute records beyond their vectors (the `encodings` cases whose attributes' mechanisms are
 * ported run in `VectorsTest`): the record's claim, its errors, the server's tables of its grid
 * attributes, and chi-square tests of real `SecureRandom` output (α = 1e-6 per test; degrees of
 * freedom stated with each, critical values from the χ² distribution).
 */
class MultiAttributeTest {
    private companion object {
        const val ALPHA = 1e-6
    }

    private fun canonical(id: String): String = Vectors.list(Vectors.section("specs"), "cases").first { it.str("id") == id }.str("canonical_json")

    private fun edited(id: String, edit: (MutableMap<String, Any?>) -> Unit): JsonObject {
        val fields = LinkedHashMap(Json.parseObject(canonical(id)))
        @Suppress("UNCHECKED_CAST")
        fields["attributes"] = (fields["attributes"] as List<JsonObject>).map { LinkedHashMap(it) }.toMutableList()
        edit(fields)
        return fields
    }

    @Suppress("UNCHECKED_CAST")
    private fun attribute(fields: MutableMap<String, Any?>, j: Int): MutableMap<String, Any?> = (fields["attributes"] as List<MutableMap<String, Any?>>)[j]

    /** The vectors' tables of `multi-attribute/numeric`'s grid attributes, as the collector serves them. */
    @Suppress("UNCHECKED_CAST")
    private val tables: Map<String, JsonObject> by lazy {
        Vectors.cases("encodings").first { it.str("spec") == "multi-attribute/numeric" }["tables"] as Map<String, JsonObject>
    }

    private fun assertFits(what: String, observed: LongArray, expected: DoubleArray, df: Int) {
        assertTrue(expected.all { it >= 100.0 }, "$what: an expected count below 100")
        val x = ChiSquare.statistic(observed, expected)
        val critical = ChiSquare.critical(ALPHA, df)
        assertTrue(x < critical, "$what: chi-square $x >= $critical (df $df, alpha $ALPHA); observed ${observed.toList()}")
    }

    @Test
    fun aRecordClaimBelowWhatItsAttributesGiveIsRefused() {
        fun refused(fields: JsonObject, pattern: String) {
            val e = assertFailsWith<SpecException> { Spec.load(fields) }
            assertTrue(Regex(pattern).containsMatchIn(e.message!!), e.message)
        }
        refused(edited("multi-attribute/smp") { it["epsilon"] = 0.5 }, "attributes' epsilon add up to 1\\.0")
        refused(edited("multi-attribute/smp") { it["sample"] = BigInteger.valueOf(3) }, "attributes' epsilon add up to 3\\.0")
        refused(edited("multi-attribute/rsfd") { it["epsilon"] = 1.0 }, "multi-attribute claims epsilon=1\\.0 but its exact probabilities give")
        refused(edited("multi-attribute/smp") { attribute(it, 0)["epsilon"] = 0.5 }, "grr claims epsilon=0\\.5")
        refused(edited("multi-attribute/smp") { attribute(it, 1).remove("name") }, "attributes\\[1\\] needs a non-empty 'name'")
        refused(edited("multi-attribute/rsfd") { it["method"] = "spl" }, "spl reports every attribute")
        refused(edited("multi-attribute/smp") { it["method"] = "rsfd-grr" }, "rsfd-grr")
        // RS+FD over SUE/OUE: the exact ratio of sums (Dinkelbach), -r fake data included: 1e-6 below Python's is refused
        for (id in listOf("multi-attribute/rsfd-sue-z", "multi-attribute/rsfd-oue-r")) {
            assertEquals("multi-attribute", Spec.load(Json.parseObject(canonical(id))).mechanism)
            refused(edited(id) { it["epsilon"] = (it["epsilon"] as Double) - 1e-6 }, "exact probabilities give epsilon=1\\.4")
        }
        refused(edited("multi-attribute/rsfd-sue-z") { it["method"] = "rsfd-oue-z" }, "rsfd-oue-z takes OUE attributes; 'os' is sue")
        // an (ε, δ) attribute (Gaussian) or a memoized one (1BitMean with alpha rounding) does not compose as a pure ε
        for (id in listOf("gaussian/grid8", "onebitmean/alpha")) {
            refused(
                edited("multi-attribute/smp") { f ->
                    val part = LinkedHashMap(Json.parseObject(canonical(id)))
                    part.remove("format")
                    part["name"] = "ms"
                    @Suppress("UNCHECKED_CAST")
                    (f["attributes"] as MutableList<Any?>)[2] = part
                },
                "attribute 'ms' \\(${id.substringBefore('/')}\\) must be a pure epsilon-LDP mechanism with fresh randomness per report",
            )
        }
    }

    @Test
    fun maxRatioOfSumsIsTheMaximumOverEveryChoice() {
        var seed = 7L
        fun next(): Fraction { seed = (seed * 1103515245 + 12345) % 2147483648; return Fraction.of(1 + seed % 19, 1) }
        for (trial in 0 until 40) {
            val parts = (0 until 1 + trial % 3).map { j -> (0 until 1 + (trial + j) % 3).map { next() to next() } }
            var best = Fraction.ZERO
            fun walk(j: Int, u: Fraction, w: Fraction) {
                if (j == parts.size) { if (u / w > best) best = u / w; return }
                for ((a, b) in parts[j]) walk(j + 1, u + a, w + b)
            }
            walk(0, Fraction.ZERO, Fraction.ZERO)
            assertEquals(best, maxRatioOfSums(parts))
        }
    }

    @Test
    fun recordsAreCheckedValueByValue() {
        val encoder = Registry.makeEncoder(Vectors.specs.getValue("multi-attribute/rsfd"))
        repeat(20) {
            val report = encoder.encode(mapOf("g0" to "a", "g1" to "b", "g2" to "c"))
            assertEquals(listOf("a0_value", "a1_value", "a2_value"), report.extra.map { it.first })
        }
        assertTrue("attribute \"g2\"" in assertFailsWith<ValueException> { encoder.encode(mapOf("g0" to "a", "g1" to "b", "g2" to "zz")) }.message!!)
        assertTrue("record has 2 values, the spec 3 attributes" in assertFailsWith<ValueException> { encoder.encode(listOf("a", "b")) }.message!!)
        assertTrue("record has no \"g1\"" in assertFailsWith<ValueException> { encoder.encode(mapOf("g0" to "a")) }.message!!)
        assertFailsWith<ValueException> { encoder.encode("a") }
    }

    @Test
    fun gridAttributesTakeTheServersTablesDigestChecked() {
        val smp = Vectors.specs.getValue("multi-attribute/smp")
        val missing = assertFailsWith<SpecException> { Registry.makeEncoder(smp) }
        assertTrue("attribute \"ms\" (piecewise) needs the server's sampling table" in missing.message!!, missing.message)
        val spec = Vectors.specs.getValue("multi-attribute/numeric")
        val encoder = Registry.makeEncoder(spec, EncoderOptions(tables = tables))
        val report = encoder.encode(mapOf("os" to "mac", "ms" to 20, "kb" to 0.5, "load" to BigInteger.ONE))
        assertEquals(listOf("a0_value", "a1_value", "a2_value", "a3_value"), report.extra.map { it.first })
        assertTrue(Regex("\"a3_value\":-?\\d+\\.\\d+").containsMatchIn(report.toJson()), report.toJson()) // floats as Python writes them
        val text = assertFailsWith<ValueException> { encoder.encode(mapOf("os" to "mac", "ms" to "20", "kb" to 0.5, "load" to 1)) }
        assertTrue("attribute \"ms\": numeric value must be a number" in text.message!!, text.message)
        assertTrue("attribute \"ms\"" in assertFailsWith<ValueException> { encoder.encode(mapOf("os" to "mac", "ms" to Double.NaN, "kb" to 0.5, "load" to 1)) }.message!!)
        fun refused(given: Map<String, JsonObject>, text: String) {
            val e = assertFailsWith<LdpException> { Registry.makeEncoder(spec, EncoderOptions(tables = given)) }
            assertTrue(text in e.message!!, e.message)
        }
        refused(mapOf("ms" to tables.getValue("ms")), "attribute \"kb\" (hybrid) needs the server's sampling table")
        refused(tables + ("os" to tables.getValue("ms")), "a table is given for \"os\"")
        val forged = LinkedHashMap(tables.getValue("ms"))
        @Suppress("UNCHECKED_CAST")
        forged["outputs"] = (forged["outputs"] as List<Double>).mapIndexed { i, y -> if (i == 0) y - 1 else y }
        refused(tables + ("ms" to forged), "attribute \"ms\": piecewise table does not match its digest")
        refused(tables + ("kb" to tables.getValue("kb").filterKeys { it != "digest" }), "attribute \"kb\": its table has no digest")
    }

    /**
     * A record of part types the vectors' records leave out (SUE, stochastic rounding, plain 1BitMean
     * through the registry, Laplace with the server's table), reported by spl: its fields are the parts'
     * own reports, in attribute order, from the same bytes read in the same order.
     */
    @Test
    fun anSplRecordIsItsPartsReportsInOrder() {
        val ids = listOf("sue/int", "stochastic-rounding/range", "onebitmean/plain", "laplace/grid8")
        val parts = ids.mapIndexed { j, id ->
            LinkedHashMap(Json.parseObject(canonical(id))).also { it.remove("format"); it["name"] = "x$j" }
        }
        val epsilon = parts.sumOf { it["epsilon"] as Double }
        val spec = Spec.load(mapOf("mechanism" to "multi-attribute", "method" to "spl", "sample" to BigInteger.valueOf(4), "epsilon" to epsilon, "attributes" to parts))
        val table = Vectors.numericTable("laplace/grid8")!!
        val values = listOf<Any>(BigInteger.valueOf(3), 1.5, 1234.5, 0.3)
        val bytes = dev.ldp.client.BouncyCastleShake256.stream("multi-attribute parts".toByteArray()).read(4096)
        val recordSource = dev.ldp.client.FixedSource(bytes)
        val record = Registry.makeEncoder(spec, EncoderOptions(source = recordSource, tables = mapOf("x3" to table))).encode(values)
        val partSource = dev.ldp.client.FixedSource(bytes)
        val expected = ids.indices.flatMap { j ->
            val options = EncoderOptions(source = partSource, table = if (j == 3) table else null)
            val report = Registry.makeEncoder(Vectors.specs.getValue(ids[j]), options).encode(values[j])
            listOfNotNull(
                report.value?.let { "a${j}_value" to Json.dump(it) },
                report.bits?.let { "a${j}_bits" to dev.ldp.client.Bytes.toHex(it) },
            )
        }
        val got = record.extra.map { (name, field) ->
            name to when (field) {
                is ByteArray -> dev.ldp.client.Bytes.toHex(field)
                is dev.ldp.client.FloatField -> Json.dump(field.value)
                else -> Json.dump(field)
            }
        }
        assertEquals(expected, got)
        assertEquals(partSource.reads, recordSource.reads)
    }

    /**
     * rsfd-grr (`multi-attribute/rsfd`, 3 GRR attributes of 3 values): the reported triple is fully
     * categorical. The attribute j is uniform; it is GRR's report of its true value (p on it, q = (1 − p)/2
     * on each other), every other attribute uniform: P[y] = (1/3)·Σ_j GRR(y_j | x_j)·(1/3)². 27 cells, df = 26.
     */
    @Test
    fun rsfdChiSquare() {
        val spec = Vectors.specs.getValue("multi-attribute/rsfd")
        val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))
        val domain = listOf("a", "b", "c")
        val x = listOf("a", "b", "c")
        @Suppress("UNCHECKED_CAST")
        val p = dev.ldp.client.Fraction.parse((spec.fields["attributes"] as List<JsonObject>)[0]["p"] as String).toDouble()
        val q = (1 - p) / 2
        val n = 20_000
        val counts = LongArray(27)
        repeat(n) {
            val extra = encoder.encode(x).extra.toMap()
            counts[(0 until 3).fold(0) { cell, j -> 3 * cell + domain.indexOf(extra.getValue("a${j}_value")) }]++
        }
        val expected = DoubleArray(27) { cell ->
            val y = listOf(cell / 9, cell / 3 % 3, cell % 3)
            n * (0 until 3).sumOf { j -> (if (domain[y[j]] == x[j]) p else q) / 9 } / 3
        }
        assertFits("rsfd-grr (a0, a1, a2)", counts, expected, 26)
    }

    /**
     * smp with k = 2 of 3 attributes (GRR, OUE, Duchi): the sampled attributes are a uniform 2-subset of
     * the 3 (their bits `sampled`, and their reports only): 3 cells, df = 2.
     */
    @Test
    fun smpSamplesAUniformSubsetChiSquare() {
        val parts = listOf("multi-attribute/smp" to 0, "multi-attribute/smp" to 1, "multi-attribute/numeric" to 3).map { (id, j) ->
            @Suppress("UNCHECKED_CAST")
            (Json.parseObject(canonical(id))["attributes"] as List<JsonObject>)[j]
        }
        val spec = Spec.load(mapOf("mechanism" to "multi-attribute", "method" to "smp", "sample" to BigInteger.TWO, "epsilon" to 2.0, "attributes" to parts))
        val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource()))
        val record = mapOf("os" to "mac", "browser" to "ff", "load" to 0.25)
        val n = 15_000
        val counts = LongArray(3) // the attribute left out
        repeat(n) {
            val report = encoder.encode(record)
            val sampled = (report.extra.first { it.first == "sampled" }.second as ByteArray)[0].toInt() and 0xff
            val out = (0 until 3).single { sampled and (0x80 ushr it) == 0 }
            val reported = report.extra.map { it.first.substringBefore('_') }.filter { it != "sampled" }.toSet()
            assertEquals((0 until 3).filter { it != out }.map { "a$it" }.toSet(), reported)
            counts[out]++
        }
        assertFits("smp left-out attribute", counts, DoubleArray(3) { n / 3.0 }, 2)
    }
}
