package dev.ldp.client.bench

import dev.ldp.client.BouncyCastleShake256
import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.ClientState
import dev.ldp.client.Fraction
import dev.ldp.client.PooledSource
import dev.ldp.client.Samplers
import dev.ldp.client.Spec
import dev.ldp.client.WordLaneGroup
import dev.ldp.client.hashing.BloomHash
import dev.ldp.client.hashing.bloomPositions
import dev.ldp.client.mechanisms.RapporEncoder
import org.junit.jupiter.api.Assumptions.assumeTrue
import java.security.SecureRandom
import kotlin.test.Test

/**
 * A plain timed harness (not a unit test: it runs only with `-Dldp.bench=true`):
 * `cd kotlin && mvn -B -q -o verify -Dtest=RapporBenchmark -Dldp.bench=true`.
 *
 * RAPPOR reports per second on one thread, against a reference measured in the same run: the rate
 * at which `SecureRandom.nextBytes` (through the same pooled source) delivers the bytes one report
 * draws. The ratio says how much of the time the CSPRNG alone would take.
 */
class RapporBenchmark {
    private class Counting(val inner: ByteSource) : ByteSource {
        var bytes = 0L

        override fun read(n: Int): ByteArray {
            bytes += n
            return inner.read(n)
        }
    }

    private fun spec(text: String): Spec = Spec.load(text)

    /** Calls per second of [body] over [seconds] after a warm-up, and the number of calls made in all. */
    private fun timed(seconds: Double, body: () -> Unit): Pair<Double, Long> {
        repeat(WARM_UP) { body() }
        var n = 0L
        val start = System.nanoTime()
        val end = start + (seconds * 1e9).toLong()
        while (System.nanoTime() < end) {
            repeat(1000) { body() }
            n += 1000
        }
        return Pair(n / ((System.nanoTime() - start) / 1e9), n + WARM_UP)
    }

    @Test
    fun rapporThroughput() {
        assumeTrue(System.getProperty("ldp.bench") != null, "benchmark: run with -Dldp.bench=true")
        val specs = listOf(
            "bloom k=128 h=2 mmh3" to """{"mechanism":"rappor","num_bits":128,"num_hashes":2,"num_cohorts":64,"f":"1/2","p":"1/2","q":"3/4"}""",
            "bloom k=32 h=2 md5" to """{"mechanism":"rappor","num_bits":32,"num_hashes":2,"num_cohorts":64,"hash":"md5","f":"1/2","p":"1/2","q":"3/4"}""",
            "bloom k=16 h=2 mmh3" to """{"mechanism":"rappor","num_bits":16,"num_hashes":2,"num_cohorts":4,"f":"1/2","p":"1/4","q":"3/4"}""",
        )
        val values = Array(1024) { "value-$it" }
        println("| spec | reports/s | CSPRNG bytes/report | nextBytes reference, reports/s | ratio |")
        println("|---|---:|---:|---:|---:|")
        for ((name, text) in specs) {
            val s = spec(text)
            val counting = Counting(ByteSources.secure)
            val encoder = RapporEncoder(s, ClientState.create(s), counting)
            var i = 0
            val (rate, calls) = timed(2.0) { encoder.encode(values[i++ and 1023]) }
            val perReport = counting.bytes.toDouble() / calls
            val bytesEach = Math.max(1, Math.round(perReport).toInt())
            val random = SecureRandom()
            val pooled = PooledSource(16384) { random.nextBytes(it) }
            val (reference, _) = timed(2.0) { pooled.read(bytesEach) }
            println("| $name | %,.0f | %.1f | %,.0f | %.2f |".format(rate, perReport, reference, rate / reference))
        }
    }

    /** Where a 128-bit report's time goes: the Bloom hash, the PRF stream, B′, one lane sampling, a whole report (per second). */
    @Test
    fun rapporComponents() {
        assumeTrue(System.getProperty("ldp.bench") != null, "benchmark: run with -Dldp.bench=true")
        val s = spec("""{"mechanism":"rappor","num_bits":128,"num_hashes":2,"num_cohorts":64,"f":"1/2","p":"1/2","q":"3/4"}""")
        val encoder = RapporEncoder(s, ClientState.create(s), ByteSources.secure)
        val values = Array(1024) { "value-$it" }
        var i = 0
        val bytes = values.map { it.toByteArray() }
        println("bloom: %,.0f/s".format(timed(1.0) { bloomPositions(bytes[i++ and 1023], 5, 2, 128, BloomHash.MMH3) }.first))
        println("shake 192 B: %,.0f/s".format(timed(1.0) { BouncyCastleShake256.stream(bytes[i++ and 1023]).read(192) }.first))
        println("prr: %,.0f/s".format(timed(1.0) { encoder.permanentWords(values[i++ and 1023]) }.first))
        val groups = listOf(
            WordLaneGroup(longArrayOf(0x0f0f0f0f0f0f0f0fL, 0x0f0f0f0f0f0f0f0fL), Fraction.of(3, 4)),
            WordLaneGroup(longArrayOf(0x0f0f0f0f0f0f0f0fL.inv(), 0x0f0f0f0f0f0f0f0fL.inv()), Fraction.of(1, 2)),
        )
        println("lanes 128: %,.0f/s".format(timed(1.0) { Samplers.sampleLaneWords(128, groups, ByteSources.secure) }.first))
        println("encode: %,.0f/s".format(timed(1.0) { encoder.encode(values[i++ and 1023]) }.first))
    }

    private companion object {
        const val WARM_UP = 20_000
    }
}
