package dev.ldp.client.mechanisms

import dev.ldp.client.ReportBits
import dev.ldp.client.BitReader
import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.DomainIndex
import dev.ldp.client.Encoder
import dev.ldp.client.RandomizedResponse
import dev.ldp.client.Report
import dev.ldp.client.Spec
import java.math.BigInteger

/**
 * GRR and binary RR (the port of `js/src/grr.ts`): report a domain value, the true one with p, each
 * other with (1 − p)/(d − 1), from one Knuth–Yao walk on the source's bits ([RandomizedResponse]).
 *
 * @mechanisms grr binary-rr
 */
public class GrrEncoder @JvmOverloads constructor(
    override val spec: Spec,
    private val source: ByteSource = ByteSources.secure,
) : Encoder {
    private val index = DomainIndex(spec.domain())
    private val bits = ReportBits.reader(source)
    private val rr = RandomizedResponse(spec.fraction("p"), BigInteger.valueOf(index.size.toLong()))

    override fun encode(value: Any): Report {
        val reported = rr.respond(index.indexOf(value), bits)
        return Report(spec.fingerprint, value = index.domain[reported])
    }
}
