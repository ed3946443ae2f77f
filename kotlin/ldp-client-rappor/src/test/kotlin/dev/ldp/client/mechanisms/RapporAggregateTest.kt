package dev.ldp.client.mechanisms

import dev.ldp.client.ChiSquare
import dev.ldp.client.ClientState
import dev.ldp.client.Spec
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.io.TempDir
import java.io.File
import java.nio.file.Files
import java.nio.file.Path
import java.util.concurrent.TimeUnit
import kotlin.math.abs
import kotlin.math.sqrt
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/**
 * Cross-language: basic-RAPPOR reports of 20,000 Kotlin clients (each its own secret and cohort, real
 * `SecureRandom`), aggregated by the Python `ldp aggregate` (from PATH; skipped with a message
 * otherwise): every value's estimated count is within z·SE of the truth, SE the aggregator's own.
 * Family-wise α = 1e-6 over the d values (Bonferroni, two-sided): z² is the χ²₁ critical value at
 * α/d (P[|Z| > z] = P[χ²₁ > z²]), z ≈ 5.2 for d = 4.
 */
class RapporAggregateTest {
    @TempDir
    lateinit var temp: Path

    private fun ldp(): File? = System.getenv("PATH").orEmpty().split(File.pathSeparator)
        .map { File(it, "ldp") }.firstOrNull { it.isFile && it.canExecute() }

    @Test
    fun kotlinReportsAggregatedByPythonAreWithinZStandardErrorsOfTheTruth() {
        val ldp = ldp()
        assumeTrue(ldp != null, "ldp is not on PATH: skipping the aggregation of Kotlin reports by ldp aggregate")
        val text = """{"mechanism":"rappor","encoding":"basic","domain":["a","b","c","d"],"num_cohorts":8,"f":"1/4","p":"1/4","q":"3/4"}"""
        val spec = Spec.load(text)
        val truth = mapOf("a" to 8_000, "b" to 6_000, "c" to 4_000, "d" to 2_000)
        val values = truth.flatMap { (v, n) -> List(n) { v } }
        val lines = values.map { v -> RapporEncoder(spec, ClientState.create(spec)).encode(v).toJson() }
        Files.write(temp.resolve("spec.json"), text.toByteArray())
        Files.write(temp.resolve("reports.jsonl"), lines)
        val log = temp.resolve("log.txt").toFile()
        val process = ProcessBuilder(ldp!!.path, "aggregate", "--spec", "spec.json", "reports.jsonl", "-o", "estimates.csv")
            .directory(temp.toFile()).redirectErrorStream(true).redirectOutput(log).start()
        assertTrue(process.waitFor(120, TimeUnit.SECONDS), "ldp aggregate did not finish")
        assertEquals(0, process.exitValue(), log.readText())
        val rows = Files.readAllLines(temp.resolve("estimates.csv")).filter { it.isNotBlank() }
        val header = rows.first().split(",")
        val z = sqrt(ChiSquare.critical(1e-6 / truth.size, 1))
        assertTrue(z in 5.0..5.5, "z = $z")
        val seen = HashSet<String>()
        for (row in rows.drop(1)) {
            val cells = header.zip(row.split(",")).toMap()
            val value = cells.getValue("value")
            val estimate = cells.getValue("estimate").toDouble()
            val se = cells.getValue("std_error").toDouble()
            val expected = truth.getValue(value)
            assertTrue(abs(estimate - expected) <= z * se, "$value: estimate $estimate, truth $expected, SE $se, z $z")
            seen.add(value)
        }
        assertEquals(truth.keys, seen)
    }
}
