package dev.ldp.client.mechanisms

import dev.ldp.client.ChiSquare
import dev.ldp.client.EncoderOptions
import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.PooledSource
import dev.ldp.client.Registry
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.ValueException
import dev.ldp.client.Vectors
import dev.ldp.client.str
import java.math.BigInteger
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/**
 * The numeric mechanisms: the `numeric` vectors (two-point outputs from the spec, grid tables checked
 * against their digests; their `encodings` run in `VectorsTest`), the tables' ε claims, and chi-square
 * tests of real `SecureRandom` output against each table's exact distribution.
 */
class NumericTest {
    private fun spec(id: String): Spec = Vectors.specs.getValue(id)

    private fun table(id: String): NumericTable = NumericTable.fromJson(Vectors.numericTable(id)!!)

    /** A vector table as mutable JSON (to tamper with). */
    private fun tableJson(id: String): MutableMap<String, Any?> = LinkedHashMap(Vectors.numericTable(id)!!)

    @TestFactory
    fun numericSection(): List<DynamicTest> = Vectors.cases("numeric").map { n ->
        DynamicTest.dynamicTest("${n.str("spec")} (${n.str("kind")})") {
            val id = n.str("spec")
            val spec = spec(id)
            val json = Vectors.numericTable(id)!!
            assertEquals(n["low"], spec.fields["low"])
            assertEquals(n["high"], spec.fields["high"])
            val table = NumericTable.fromJson(json)
            if (n.str("kind") == "two-point") {
                assertEquals(n.str("p"), spec.fields["p"])
                // C′ = 1/(2p − 1) rounded from the exact fraction
                assertEquals((n["outputs"] as List<*>).map { it as Double }, NumericTable.twoPoint(spec).outputs.toList())
                assertEquals(table.outputs.toList(), NumericTable.twoPoint(spec).outputs.toList())
                return@dynamicTest
            }
            if (n["full_table"] != null) {
                assertEquals(spec.fingerprint, json.str("fingerprint"))
                assertEquals(n.str("digest"), json.str("digest"))
            }
            assertEquals(n.str("digest"), table.computeDigest())
            assertEquals(BigInteger(n["num_outputs"].toString()), BigInteger.valueOf(table.outputs.size.toLong()))
            NumericEncoder(spec, table) // the server's table honours the spec's ε
        }
    }

    @Test
    fun aGridSpecWithoutItsTableIsRefusedWithAClearError() {
        val e = assertFailsWith<SpecException> { Registry.makeEncoder(spec("piecewise/grid8")) }
        assertTrue("needs the server's sampling table" in e.message!!, e.message)
        // a two-point spec needs none
        assertTrue(Registry.makeEncoder(spec("duchi/default")) is NumericEncoder)
    }

    @Test
    fun aTableThatDoesNotMatchItsDigestIsRefused() {
        val json = tableJson("laplace/grid8")
        @Suppress("UNCHECKED_CAST")
        val outputs = (json["outputs"] as List<Double>).toMutableList()
        outputs[0] = outputs[0] - 1.0
        json["outputs"] = outputs
        val e = assertFailsWith<SpecException> { Registry.makeEncoder(spec("laplace/grid8"), EncoderOptions(table = json)) }
        assertTrue("does not match its digest" in e.message!!, e.message)
    }

    @Test
    fun piecewiseABandWeightRaisedFourfoldIsRefused() {
        val json = tableJson("piecewise/grid8")
        @Suppress("UNCHECKED_CAST")
        val band = LinkedHashMap(json["band"] as JsonObject)
        val a = BigInteger(band["a"].toString()) * BigInteger.valueOf(4)
        band["a"] = a.toString()
        json["band"] = band
        json["total"] = (BigInteger(json["total"].toString()) + a.divide(BigInteger.valueOf(4)) * BigInteger.valueOf(3) * BigInteger(band["m"].toString())).toString()
        json.remove("digest")
        val e = assertFailsWith<SpecException> { NumericEncoder(spec("piecewise/grid8"), NumericTable.fromJson(json)) }
        assertTrue(Regex("piecewise claims epsilon=\\S+ but its exact probabilities give").containsMatchIn(e.message!!), e.message)
    }

    @Test
    fun laplaceANoiseWeightRaisedIsRefused() {
        val json = tableJson("laplace/grid8")
        val w = (json["weights"] as List<*>).map { BigInteger(it.toString()) }.toMutableList()
        w[w.size / 2] = w[w.size / 2] * BigInteger.valueOf(16)
        json["weights"] = w
        json["total"] = w.fold(BigInteger.ZERO) { s, x -> s + x }
        json.remove("digest")
        val e = assertFailsWith<SpecException> { NumericEncoder(spec("laplace/grid8"), NumericTable.fromJson(json)) }
        assertTrue(Regex("laplace claims epsilon=\\S+ but its exact probabilities give").containsMatchIn(e.message!!), e.message)
    }

    @Test
    fun hybridADuchiPartWithALargerPIsRefused() {
        val json = tableJson("hybrid/grid8")
        val p = Fraction.parse(json.str("duchi_p"))
        json["duchi_p"] = Fraction.of(BigInteger.valueOf(7) * p.den + p.num, BigInteger.valueOf(8) * p.den).toString()
        val e = assertFailsWith<SpecException> { NumericEncoder(spec("hybrid/grid8"), NumericTable.fromJson(json)) }
        assertTrue(Regex("hybrid claims epsilon=\\S+ but its exact probabilities give").containsMatchIn(e.message!!), e.message)
    }

    @Test
    fun aTwoPointTableOtherThanTheSpecsOrATableOfAnotherGridOrKindIsRefused() {
        val duchi = spec("duchi/default")
        val other = NumericTable("two-point", doubleArrayOf(-1.02, 1.02), p = Fraction.of(99, 100))
        assertTrue("the table is not the spec's" in assertFailsWith<SpecException> { NumericEncoder(duchi, other) }.message!!)
        val json = tableJson("piecewise/grid8")
        json["K"] = BigInteger.valueOf(16)
        json.remove("digest")
        val e = assertFailsWith<SpecException> { NumericTable.fromJson(json) } // 13 outputs do not fit grid 16 and m = 5
        assertTrue("outputs" in e.message!!, e.message)
        val shift = table("laplace/grid8")
        val kind = assertFailsWith<SpecException> { NumericEncoder(spec("piecewise/grid8"), shift) }
        assertTrue("needs a rows table, got shift" in kind.message!!, kind.message)
        val grid = assertFailsWith<SpecException> { NumericEncoder(spec("laplace/default"), shift) }
        assertTrue("the table's grid 8 is not the spec's 256" in grid.message!!, grid.message)
    }

    @Test
    fun valuesAreNumbersOrDecimalTextAndFinite() {
        val encoder = NumericEncoder(spec("duchi/default"))
        for (v in listOf<Any>(0.5, 1, BigInteger.TEN, " 0.25 ", "-1e-3")) encoder.encode(v)
        for (v in listOf<Any>(true, "fast", "", Double.NaN, Double.POSITIVE_INFINITY, "inf", "nan", "0x10")) {
            assertFailsWith<ValueException>(v.toString()) { encoder.encode(v) }
        }
    }

    // --- chi-square: the real SecureRandom output against each table's exact distribution ---

    private companion object {
        /** Significance level of each test (unseeded runs: a correct encoder fails a given test once in a million runs). */
        const val ALPHA = 1e-6
        const val REPORTS = 20_000

        /** Cells with an expected count below this are pooled (Cochran's rule), so the χ² approximation holds. */
        const val MIN_EXPECTED = 5.0

        /** (spec id, dyadic inputs): the rounding probability frac(u·K) is then exact in doubles. */
        val CASES = listOf(
            "duchi/default" to listOf(-1.0, 0.25, 3.0),
            "stochastic-rounding/default" to listOf(0.0, 0.375, 1.0),
            "piecewise/grid8" to listOf(-1.0, 0.125, 1.0),
            "hybrid/grid8" to listOf(-2.0, 0.125, 1.0),
            "hybrid/alpha0" to listOf(0.125),
            "laplace/grid8" to listOf(-1.0, 0.125, 1.0),
            "gaussian/grid8" to listOf(-1.0, 0.125, 1.0),
        )
    }

    /**
     * The exact output distribution for input x: output index → probability (hybrid's Duchi outputs at
     * −1 and −2), from the table by the sampling rule of tests/vectors/README.md (`encodings`, numeric).
     */
    private fun distribution(spec: Spec, table: NumericTable, x: Double): Map<Int, Double> {
        val low = spec.float("low")
        val u = ((x - low) / (spec.float("high") - low)).coerceIn(0.0, 1.0)
        val out = HashMap<Int, Double>()
        fun add(k: Int, p: Double) { out[k] = (out[k] ?: 0.0) + p }
        val k = table.grid?.toInt() ?: 1
        val pos = u * k
        val lo = Math.floor(pos)
        assertEquals(pos * 1048576.0, Math.floor(pos * 1048576.0), "inputs are dyadic")
        val grid = if (pos == lo) listOf(lo.toInt() to 1.0) else listOf(lo.toInt() to 1 - (pos - lo), lo.toInt() + 1 to pos - lo)
        for ((i, pi) in grid) {
            if (table.kind == "two-point") {
                val p = table.p!!.toDouble()
                add(i, pi * p)
                add(1 - i, pi * (1 - p))
                continue
            }
            val alpha = table.alpha?.toDouble() ?: 1.0
            if (alpha < 1) {
                val dp = table.duchiP!!.toDouble()
                val side1 = i.toDouble() / k
                add(-2, pi * (1 - alpha) * (side1 * dp + (1 - side1) * (1 - dp))) // duchi_outputs[1]
                add(-1, pi * (1 - alpha) * ((1 - side1) * dp + side1 * (1 - dp))) // duchi_outputs[0]
            }
            val total = table.total!!
            if (table.kind == "rows") {
                val band = table.band!!
                val m = band.m.toInt()
                for (j in 0 until table.outputs.size) {
                    add(j, pi * alpha * Fraction.of(if (j >= i && j < i + m) band.a else band.b, total).toDouble())
                }
            } else {
                val last = table.outputs.size - 1
                table.weights!!.forEachIndexed { z, w -> add((i + z - k).coerceIn(0, last), pi * Fraction.of(w, total).toDouble()) }
            }
        }
        return out
    }

    @TestFactory
    fun chiSquare(): List<DynamicTest> = CASES.flatMap { (id, inputs) ->
        inputs.map { x ->
            DynamicTest.dynamicTest("$id x=$x") {
                val spec = spec(id)
                val table = table(id)
                val dist = distribution(spec, table, x)
                assertEquals(1.0, dist.values.sum(), 1e-12, "the probabilities sum to 1")
                val index = HashMap<Long, Int>()
                table.outputs.forEachIndexed { j, v -> index[v.toRawBits()] = j }
                table.duchiOutputs?.forEachIndexed { j, v ->
                    assertTrue(v.toRawBits() !in index, "hybrid's Duchi outputs differ from the piecewise ones")
                    index[v.toRawBits()] = -1 - j
                }
                val encoder = Registry.makeEncoder(spec, EncoderOptions(source = PooledSource(), table = Vectors.numericTable(id)))
                val observed = HashMap<Int, Long>()
                repeat(REPORTS) {
                    val j = index[(encoder.encode(x).value as Double).toRawBits()] ?: error("an output outside the table")
                    observed[j] = (observed[j] ?: 0L) + 1
                }
                for (j in observed.keys) assertTrue((dist[j] ?: 0.0) > 0, "output $j has probability 0")
                // cells with expected count < 5 pooled; a pool still below 5 joins the smallest cell
                val cells = ArrayList<DoubleArray>() // (observed, expected)
                val pool = doubleArrayOf(0.0, 0.0)
                for ((j, p) in dist) {
                    val cell = doubleArrayOf((observed[j] ?: 0L).toDouble(), REPORTS * p)
                    if (cell[1] >= MIN_EXPECTED) cells.add(cell) else { pool[0] += cell[0]; pool[1] += cell[1] }
                }
                if (pool[1] >= MIN_EXPECTED) cells.add(pool)
                else if (pool[1] > 0) cells.minByOrNull { it[1] }!!.let { it[0] += pool[0]; it[1] += pool[1] }
                val df = cells.size - 1
                val statistic = ChiSquare.statistic(LongArray(cells.size) { cells[it][0].toLong() }, DoubleArray(cells.size) { cells[it][1] })
                val critical = ChiSquare.critical(ALPHA, df)
                assertTrue(statistic < critical, "$id x=$x: chi-square $statistic >= $critical (df $df, alpha $ALPHA)")
            }
        }
    }
}
