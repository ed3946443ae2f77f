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
import dev.ldp.client.hashing.LH_SEED_SPACE
import dev.ldp.client.hashing.lhBucket
import java.math.BigInteger

/**
 * Optimized and binary local hashing (the port of `js/src/localhash.ts`): a uniform hash seed in
 * [0, (P − 1)·P) drawn first, then randomized response over the seed's g buckets
 * ([RandomizedResponse], one walk), the true bucket [lhBucket] of the value's domain index.
 * The report carries the seed and the bucket.
 *
 * @mechanisms olh blh
 */
public class LocalHashingEncoder @JvmOverloads constructor(
    override val spec: Spec,
    private val source: ByteSource = ByteSources.secure,
) : Encoder {
    private val index = DomainIndex(spec.domain())
    private val g = spec.int("g")
    private val buckets = g.toLong()
    private val bits = ReportBits.reader(source)
    private val rr = RandomizedResponse(spec.fraction("p"), g)

    override fun encode(value: Any): Report {
        val x = index.indexOf(value)
        val seed = SEEDS.draw(bits)
        val bucket = lhBucket(seed, x.toLong(), buckets)
        return Report(spec.fingerprint, seed = BigInteger.valueOf(seed), value = BigInteger.valueOf(rr.respond(bucket, bits).toLong()))
    }

    private companion object {
        /** The seeds of the hash family: uniform below (P − 1)·P < 2^62, on the CSPRNG's bits. */
        val SEEDS = ReportBits.uniformTable(LH_SEED_SPACE)
    }
}
