package dev.ldp.client.bench

import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.Claim
import dev.ldp.client.ClientState
import dev.ldp.client.EncoderOptions
import dev.ldp.client.Json
import dev.ldp.client.PooledSource
import dev.ldp.client.Registry
import dev.ldp.client.Spec
import java.io.File
import java.lang.management.ManagementFactory
import java.security.SecureRandom

/**
 * A plain timed harness of the encoders (run by `benchmarks/bench_kotlin.py`, which prints the table):
 * one thread, the pooled `SecureRandom` source every app uses ([ByteSources.secure]), and in the same
 * run the reference: `SecureRandom.nextBytes` throughput into blocks of the pool's size, i.e. how many
 * reports per second drawing their bytes alone would allow. Rates are per second of the thread's CPU
 * time (`ThreadMXBean`): one core's throughput, on a shared machine too.
 *
 * Arguments: `SECONDS` then `NAME=SPEC.json=VALUE` per spec. Prints one JSON object per spec:
 * `name`, `reports_per_s` (encode), `json_reports_per_s` (encode and the report's JSON line),
 * `bytes_per_report`, `reference_bytes_per_s` and `reference_reports_per_s`.
 */
object EncodeBench {
    private const val BATCH = 10_000
    private const val ROUNDS = 5

    @JvmStatic
    fun main(args: Array<String>) {
        val seconds = args[0].toDouble()
        for (item in args.drop(1)) {
            val (name, path, value) = item.split("=", limit = 3)
            println(Json.dump(measure(name, Spec.load(File(path).readText()), value, seconds)))
        }
    }

    private fun options(spec: Spec, source: ByteSource): EncoderOptions {
        // a memoized mechanism reports as one persistent client (its memo derived once per value)
        val client = if (Claim.privacyFacts(spec.fields).memoized) ClientState.create(spec) else null
        return EncoderOptions(source = source, client = client)
    }

    /**
     * Calls per second of each of [works] (one call = one report, or one block), timed in batches of
     * [batch] calls: a warm-up of every work (the JIT compiles the loops), then [ROUNDS] rounds taking
     * the works in turn (so a busy moment of a shared machine hits them alike); the median round of each.
     */
    internal fun rates(seconds: Double, batch: Int, vararg works: () -> Unit): List<Double> {
        val cpu = ManagementFactory.getThreadMXBean()
        for (work in works) {
            val deadline = System.nanoTime() + (seconds * 1e9).toLong()
            while (System.nanoTime() < deadline) repeat(batch) { work() }
        }
        val rounds = works.map { ArrayList<Double>() }
        repeat(ROUNDS) {
            works.forEachIndexed { w, work ->
                val start = System.nanoTime()
                val startCpu = cpu.currentThreadCpuTime
                val end = start + (seconds * 1e9 / ROUNDS).toLong()
                var n = 0L
                var now = start
                while (now < end) {
                    repeat(batch) { work() }
                    n += batch
                    now = System.nanoTime()
                }
                // per second of this thread's CPU time: a core's rate, whatever else the machine runs
                rounds[w].add(n * 1e9 / (cpu.currentThreadCpuTime - startCpu))
            }
        }
        return rounds.map { it.sorted()[ROUNDS / 2] }
    }

    internal fun measure(name: String, spec: Spec, value: String, seconds: Double): Map<String, Any> {
        // the bytes a report draws, counted on a source of its own
        var drawn = 0L
        val inner = PooledSource()
        val counting = ByteSource { n -> drawn += n; inner.read(n) }
        val counted = Registry.makeEncoder(spec, options(spec, counting))
        repeat(BATCH) { counted.encode(value) }
        val bytesPerReport = drawn.toDouble() / BATCH

        val encoder = Registry.makeEncoder(spec, options(spec, ByteSources.secure))
        var sink = 0
        val (encodeRate, jsonRate) = rates(
            seconds,
            BATCH,
            { sink += encoder.encode(value).spec.length and 1 },
            { sink += encoder.encode(value).toJson().length and 1 },
        )

        val random = SecureRandom()
        val block = ByteArray(16384) // PooledSource's default block
        val blockRate = rates(seconds, 8, { random.nextBytes(block) })[0]
        val referenceBytes = blockRate * block.size
        return linkedMapOf(
            "name" to name,
            "mechanism" to spec.mechanism,
            "reports_per_s" to encodeRate,
            "json_reports_per_s" to jsonRate,
            "bytes_per_report" to bytesPerReport,
            "reference_bytes_per_s" to referenceBytes,
            "reference_reports_per_s" to if (bytesPerReport > 0) referenceBytes / bytesPerReport else -1.0,
            "secure_random" to random.algorithm,
            "sink" to sink.toLong(),
        )
    }
}
