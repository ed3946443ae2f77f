package dev.ldp.client.bench

import dev.ldp.client.ByteSource
import dev.ldp.client.ClientState
import dev.ldp.client.DomainIndex
import dev.ldp.client.LaneSampler
import dev.ldp.client.Lanes
import dev.ldp.client.PooledSource
import dev.ldp.client.RandomizedResponse
import dev.ldp.client.Spec
import dev.ldp.client.UniformBelow
import dev.ldp.client.mechanisms.Floyd
import dev.ldp.client.mechanisms.RapporEncoder
import java.io.File
import java.math.BigInteger

/**
 * CSPRNG bytes per report against the entropy a report needs (issue 28: at most 2×), with the encoding
 * rate (run by `benchmarks/bench_kotlin_entropy.py`, which builds the specs and computes each report's
 * entropy). Each row: bytes per report before the per-report bit samplers (the same draws made with
 * the byte samplers the encoders used until then, which the keyed streams still use: randbelow, the
 * bit-sliced lanes, Floyd's sampling), after (counted on the encoder's source by [EncodeBench.measure]),
 * both over [REPORTS] reports of one value in this run; the entropy of one report given the input, in
 * bytes; their ratios; and reports per CPU-second with the pooled `SecureRandom` beside the same run's
 * reference (`SecureRandom.nextBytes` into 16 KiB blocks: the rate drawing each report's bytes alone
 * would allow).
 *
 * Arguments: `SECONDS` then `NAME=SPEC.json=VALUE=ENTROPY_BITS` per spec. Prints the table.
 */
object EntropyBench {
    private const val REPORTS = 10_000

    @JvmStatic
    fun main(args: Array<String>) {
        val seconds = args[0].toDouble()
        val header = String.format(
            "%-8s %13s %12s %9s %9s %8s %12s %14s %7s",
            "spec", "B/rep before", "B/rep after", "H B/rep", "before÷H", "after÷H", "reports/s", "nextBytes r/s", "ratio",
        )
        println(header)
        println("-".repeat(header.length))
        for (item in args.drop(1)) {
            val (name, path, value, entropyBits) = item.split("=", limit = 4)
            val spec = Spec.load(File(path).readText())
            val before = bytesBefore(spec, value)
            val row = EncodeBench.measure(name, spec, value, seconds)
            val after = row["bytes_per_report"] as Double
            val entropy = entropyBits.toDouble() / 8
            val rate = row["reports_per_s"] as Double
            val reference = row["reference_reports_per_s"] as Double
            println(
                String.format(
                    "%-8s %13.1f %12.2f %9.2f %9.2f %8.2f %,12.0f %,14.0f %7.3f",
                    name, before, after, entropy, before / entropy, after / entropy, rate, reference, rate / reference,
                ),
            )
        }
    }

    /** Bytes per report of the encoder's fresh draws made with the byte samplers (its coins before the bit samplers). */
    private fun bytesBefore(spec: Spec, value: String): Double {
        var drawn = 0L
        val inner = PooledSource()
        val source = ByteSource { n -> drawn += n; inner.read(n) }
        val draw: () -> Unit = when (spec.mechanism) {
            "grr", "binary-rr" -> {
                val index = DomainIndex(spec.domain())
                val rr = RandomizedResponse(spec.fraction("p"), BigInteger.valueOf(index.size.toLong()))
                val x = index.indexOf(value);
                { rr.respond(x, source) }
            }
            "oue", "sue" -> {
                val index = DomainIndex(spec.domain())
                val x = index.indexOf(value)
                val sampler = LaneSampler(index.size, listOf(spec.fraction("p"), spec.fraction("q")))
                val oneHot = Lanes.oneLane(x, index.size)
                val others = Lanes.fullWords(index.size).also { it[x ushr 6] = it[x ushr 6] xor oneHot[x ushr 6] };
                { sampler.sample(arrayOf(oneHot, others), source) }
            }
            "ss" -> {
                val d = DomainIndex(spec.domain()).size
                val omega = spec.intValue("omega")
                val p = spec.fraction("p")
                val coin = UniformBelow(p.den)
                val with = Floyd(d - 1, omega - 1)
                val without = Floyd(d - 1, omega);
                { (if (coin.draw(source) < p.num) with else without).sampleWords(source) }
            }
            "rappor" -> {
                val encoder = RapporEncoder(spec, ClientState.create(spec))
                val width = spec.intValue("num_bits")
                val prr = encoder.permanentWords(value)
                val off = Lanes.fullWords(width).also { for (w in it.indices) it[w] = it[w] xor prr[w] }
                val sampler = LaneSampler(width, listOf(spec.fraction("q"), spec.fraction("p")));
                { sampler.sample(arrayOf(prr, off), source) }
            }
            else -> return Double.NaN
        }
        repeat(REPORTS) { draw() }
        return drawn.toDouble() / REPORTS
    }
}
