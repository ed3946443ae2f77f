package dev.ldp.client.mechanisms

import dev.ldp.client.ReportBits
import dev.ldp.client.BouncyCastleShake256
import dev.ldp.client.BitReader
import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.Bytes
import dev.ldp.client.ClientState
import dev.ldp.client.DomainIndex
import dev.ldp.client.Encoder
import dev.ldp.client.EncoderOptions
import dev.ldp.client.RandomizedResponse
import dev.ldp.client.Report
import dev.ldp.client.Shake256
import dev.ldp.client.Spec
import dev.ldp.client.UniformBelow
import dev.ldp.client.hashing.LH_SEED_SPACE
import dev.ldp.client.hashing.lhBucket
import dev.ldp.client.prfInput
import java.math.BigInteger

/**
 * LOLOHA (the port of `js/src/loloha.ts`): a hash function from the spec's public pool, a memo per hash
 * bucket, fresh noise per report. The client's pool index and memos come from keyed SHAKE-256 streams
 * of its secret (so they survive restarts: keep the [ClientState]), round 2 from `source`.
 *
 * @mechanisms loloha
 */
public class LolohaEncoder @JvmOverloads constructor(
    override val spec: Spec,
    /** The client's state: its secret keys the pool index and the memos. */
    public val client: ClientState,
    private val source: ByteSource = ByteSources.secure,
    private val shake: Shake256 = BouncyCastleShake256,
) : Encoder {
    private val index = DomainIndex(spec.domain())
    private val g: Long = spec.int("g").toLong()
    private val roundOne = RandomizedResponse(spec.fraction("p1"), BigInteger.valueOf(g))
    private val roundTwo = RandomizedResponse(spec.fraction("p2"), BigInteger.valueOf(g))
    private val secret = client.secret
    private val fingerprint = Bytes.utf8(spec.fingerprint)
    private val bits = ReportBits.reader(source)

    /** The client's index in the public pool of hash functions (sent with every report). */
    public val seedIndex: Int =
        UniformBelow(spec.int("pool_size")).drawLong(shake.stream(prfInput(SEED_LABEL, secret, fingerprint))).toInt()

    /** The client's hash seed: the pool's entry [seedIndex]. */
    public val hashSeed: Long = poolSeed(spec.fingerprint, seedIndex, shake)

    /** The bucket of `value` under the client's hash function. */
    public fun bucket(value: Any): Int = lhBucket(hashSeed, index.indexOf(value).toLong(), g)

    /** The memo (and ledger stream) key of `value`: its bucket in decimal ASCII. */
    override fun memoKey(value: Any): ByteArray = Bytes.utf8(bucket(value).toString())

    /** Round 1: the memoized response of the value's bucket (from the PRF, never re-drawn). */
    public fun permanentBucket(value: Any): Int {
        val bucket = bucket(value)
        val stream = shake.stream(prfInput(MEMO_LABEL, secret, fingerprint, Bytes.utf8(bucket.toString())))
        return roundOne.respond(bucket, stream)
    }

    override fun encode(value: Any): Report {
        val reported = roundTwo.respond(permanentBucket(value), bits) // fresh: one walk on the source's bits
        return Report(spec.fingerprint, seed = BigInteger.valueOf(seedIndex.toLong()), value = BigInteger.valueOf(reported.toLong()))
    }

    public companion object {
        private val SEED_LABEL = Bytes.utf8("ldp-loloha-seed-v1")
        private val MEMO_LABEL = Bytes.utf8("ldp-loloha-memo-v1")
        private val POOL_LABEL = Bytes.utf8("ldp-loloha-pool-v1")

        /** The encoder [dev.ldp.client.Registry.makeEncoder] gives: the options' client (a fresh one when null, [ClientState.create]) and SHAKE-256. */
        @JvmStatic
        public fun create(spec: Spec, source: ByteSource, options: EncoderOptions): Encoder =
            LolohaEncoder(spec, options.client ?: ClientState.create(spec, source), source, options.shake)

        /**
         * Seed `index` of the spec's public pool: the (index + 1)-th accepted draw of randbelow((P − 1)·P)
         * from SHAKE-256 of (`ldp-loloha-pool-v1`, fingerprint), as Python's `ldp.specs.loloha.hash_pool`.
         */
        @JvmStatic
        @JvmOverloads
        public fun poolSeed(fingerprint: String, index: Int, shake: Shake256 = BouncyCastleShake256): Long {
            val stream = bufferedSource(shake.stream(prfInput(POOL_LABEL, Bytes.utf8(fingerprint))), 8 * (index + 1) + 64)
            val draws = UniformBelow(BigInteger.valueOf(LH_SEED_SPACE))
            var seed = 0L
            for (i in 0..index) seed = draws.drawLong(stream)
            return seed
        }

        /** `source` read ahead in blocks of at least `block` bytes (the same bytes, in order, fewer calls). */
        private fun bufferedSource(source: ByteSource, block: Int): ByteSource {
            var buffer = ByteArray(0)
            var pos = 0
            return ByteSource { n ->
                if (pos + n > buffer.size) {
                    buffer = Bytes.concat(buffer.copyOfRange(pos, buffer.size), source.read(maxOf(n, block)))
                    pos = 0
                }
                pos += n
                buffer.copyOfRange(pos - n, pos)
            }
        }
    }
}
