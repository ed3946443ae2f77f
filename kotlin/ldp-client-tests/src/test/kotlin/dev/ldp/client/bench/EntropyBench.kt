package dev.ldp.client.bench

import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.ClientState
import dev.ldp.client.DomainIndex
import dev.ldp.client.LaneSampler
import dev.ldp.client.Lanes
import dev.ldp.client.PooledSource
import dev.ldp.client.RandomizedResponse
import dev.ldp.client.ReportBits
import dev.ldp.client.RunSampler
import dev.ldp.client.Spec
import dev.ldp.client.UniformBelow
import dev.ldp.client.mechanisms.Floyd
import dev.ldp.client.mechanisms.RapporEncoder
import dev.ldp.client.mechanisms.SubsetUnranking
import java.io.File
import java.math.BigInteger

/**
 * CSPRNG bytes per report against the entropy a report needs (issue 28: at most 2×), with the speed
 * of the draws (run by `benchmarks/bench_kotlin_entropy.py`, which builds the specs and computes each
 * report's entropy). Each row, all in this run:
 *
 * - bytes per report before the per-report bit samplers (the encoder's fresh draws made with the byte
 *   samplers it used until then, which the keyed streams still use: randbelow, the bit-sliced lanes,
 *   Floyd's sampling) and after (counted on the encoder's source by [EncodeBench.measure]), each over
 *   [REPORTS] reports of one value; the entropy of one report given the input, in bytes; their ratios;
 * - the draws alone per CPU-second, before and after, from the pooled `SecureRandom` (the same draws
 *   as the encoder's, without the report around them), and their ratio;
 * - the whole encoder's reports per CPU-second with the pooled `SecureRandom`.
 *
 * Arguments: `SECONDS` then `NAME=SPEC.json=VALUE=ENTROPY_BITS` per spec. Prints the table.
 */
object EntropyBench {
    private const val REPORTS = 10_000

    @JvmStatic
    fun main(args: Array<String>) {
        val seconds = args[0].toDouble()
        val header = String.format(
            "%-7s %12s %11s %8s %9s %8s %14s %14s %7s %12s",
            "spec", "B/rep before", "B/rep after", "H B/rep", "before÷H", "after÷H", "draws/s before", "draws/s after", "after÷", "reports/s",
        )
        println(header)
        println("-".repeat(header.length))
        for (item in args.drop(1)) {
            val (name, path, value, entropyBits) = item.split("=", limit = 4)
            val spec = Spec.load(File(path).readText())
            var drawn = 0L
            val inner = PooledSource()
            val counting = ByteSource { n -> drawn += n; inner.read(n) }
            val countedBefore = draws(spec, value, counting, before = true)
            repeat(REPORTS) { countedBefore() }
            val before = drawn.toDouble() / REPORTS
            val (rateBefore, rateAfter) = EncodeBench.rates(
                seconds,
                1000,
                draws(spec, value, ByteSources.secure, before = true),
                draws(spec, value, ByteSources.secure, before = false),
            )
            val row = EncodeBench.measure(name, spec, value, seconds)
            val after = row["bytes_per_report"] as Double
            val entropy = entropyBits.toDouble() / 8
            println(
                String.format(
                    "%-7s %12.1f %11.2f %8.2f %9.2f %8.2f %,14.0f %,14.0f %7.2f %,12.0f",
                    name, before, after, entropy, before / entropy, after / entropy,
                    rateBefore, rateAfter, rateAfter / rateBefore, row["reports_per_s"] as Double,
                ),
            )
        }
    }

    /** One report's fresh draws for `value`: with the byte samplers (`before`) or the per-report bit samplers. */
    private fun draws(spec: Spec, value: String, source: ByteSource, before: Boolean): () -> Unit {
        val bits = ReportBits.reader(source)
        return when (spec.mechanism) {
            "grr", "binary-rr" -> {
                val index = DomainIndex(spec.domain())
                val rr = RandomizedResponse(spec.fraction("p"), BigInteger.valueOf(index.size.toLong()))
                val x = index.indexOf(value)
                if (before) ({ rr.respond(x, source) }) else ({ rr.respond(x, bits) })
            }
            "oue", "sue" -> {
                val index = DomainIndex(spec.domain())
                val x = index.indexOf(value)
                val probabilities = listOf(spec.fraction("p"), spec.fraction("q"))
                val oneHot = Lanes.oneLane(x, index.size)
                val others = Lanes.fullWords(index.size).also { it[x ushr 6] = it[x ushr 6] xor oneHot[x ushr 6] }
                if (before) {
                    val sampler = LaneSampler(index.size, probabilities)
                    ({ sampler.sample(arrayOf(oneHot, others), source) })
                } else {
                    val sampler = RunSampler(index.size, probabilities)
                    ({ sampler.sample(arrayOf(oneHot, others), bits) })
                }
            }
            "ss" -> {
                val d = DomainIndex(spec.domain()).size
                val omega = spec.intValue("omega")
                val p = spec.fraction("p")
                if (before) {
                    val coin = UniformBelow(p.den)
                    val with = Floyd(d - 1, omega - 1)
                    val without = Floyd(d - 1, omega)
                    ({ (if (coin.draw(source) < p.num) with else without).sampleWords(source) })
                } else {
                    val coin = ReportBits.coinTable(p)
                    ({ SubsetUnranking.uniformSubset(d - 1, if (coin.flip(bits)) omega - 1 else omega, bits) })
                }
            }
            "rappor" -> {
                val width = spec.intValue("num_bits")
                val prr = RapporEncoder(spec, ClientState.create(spec)).permanentWords(value)
                val off = Lanes.fullWords(width).also { for (w in it.indices) it[w] = it[w] xor prr[w] }
                val probabilities = listOf(spec.fraction("q"), spec.fraction("p"))
                if (before) {
                    val sampler = LaneSampler(width, probabilities)
                    ({ sampler.sample(arrayOf(prr, off), source) })
                } else {
                    val sampler = RunSampler(width, probabilities)
                    ({ sampler.sample(arrayOf(prr, off), bits) })
                }
            }
            else -> error("no draws written for ${spec.mechanism}")
        }
    }
}
