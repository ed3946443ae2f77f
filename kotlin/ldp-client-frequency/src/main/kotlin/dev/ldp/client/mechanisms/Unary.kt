package dev.ldp.client.mechanisms

import dev.ldp.client.ReportBits
import dev.ldp.client.BitReader
import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.DomainIndex
import dev.ldp.client.Encoder
import dev.ldp.client.Fraction
import dev.ldp.client.RunSampler
import dev.ldp.client.Lanes
import dev.ldp.client.Packing
import dev.ldp.client.Report
import dev.ldp.client.Spec
import dev.ldp.client.SpecException

/**
 * SUE and OUE (the port of `js/src/unary.ts`): the one-hot vector of the value, the true bit 1 with p,
 * every other bit 1 with q, all drawn as runs on the source's bits ([RunSampler], built once).
 *
 * @mechanisms sue oue
 */
public class UnaryEncoder @JvmOverloads constructor(
    override val spec: Spec,
    private val source: ByteSource = ByteSources.secure,
) : Encoder {
    private val index = DomainIndex(spec.domain())
    private val p = spec.fraction("p")
    private val q = spec.fraction("q")
    private val full: LongArray
    private val sampler: RunSampler
    private val bits = ReportBits.reader(source)

    init {
        if (p <= q || q.num.signum() == 0 || p >= Fraction.ONE) throw SpecException("${spec.mechanism} needs 0 < q < p < 1")
        full = Lanes.fullWords(index.size)
        sampler = RunSampler(index.size, listOf(p, q))
    }

    override fun encode(value: Any): Report {
        val width = index.size
        val i = index.indexOf(value)
        val oneHot = Lanes.oneLane(i, width)
        val others = full.copyOf()
        others[i ushr 6] = others[i ushr 6] xor oneHot[i ushr 6]
        val lanes = sampler.sample(arrayOf(oneHot, others), bits)
        return Report(spec.fingerprint, bits = Packing.wordsToPacked(lanes, width))
    }
}
