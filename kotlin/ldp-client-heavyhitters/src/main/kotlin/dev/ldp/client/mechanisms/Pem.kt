package dev.ldp.client.mechanisms

import dev.ldp.client.ReportBits
import dev.ldp.client.BitReader
import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.Bytes
import dev.ldp.client.Encoder
import dev.ldp.client.RandomizedResponse
import dev.ldp.client.Report
import dev.ldp.client.Spec
import dev.ldp.client.Text
import dev.ldp.client.ValueException
import dev.ldp.client.Values
import dev.ldp.client.hashing.LH_PRIME
import dev.ldp.client.hashing.LH_SEED_SPACE
import dev.ldp.client.hashing.lhBucket
import java.math.BigInteger
import java.security.MessageDigest

/**
 * The prefixes of PEM and TreeHist (the helpers of `js/src/pem.ts`; `ldp/specs/heavy_hitters.py`,
 * docs/heavy-hitters.md): a value is m = 8·max_length bits, each round reports the local-hashing key of
 * one prefix of them.
 */
public object Prefixes {
    /** Domain separation of the prefix hash. */
    public const val PREFIX_HASH_LABEL: String = "ldp-pem-prefix-v1"

    /**
     * The local-hashing input of the `length`-bit prefix `prefix`: the first 8 bytes of
     * SHA-256(label ‖ length as 2 big-endian bytes ‖ the prefix left-aligned in ⌈length/8⌉ bytes), as a
     * big-endian unsigned integer, mod P.
     */
    @JvmStatic
    public fun prefixKey(prefix: BigInteger, length: Int): Long {
        require(length in 1..0xffff && prefix.signum() >= 0 && prefix.bitLength() <= length) { "a prefix of $length bits, got $prefix" }
        val size = (length + 7) / 8
        val aligned = Bytes.toBytesBE(prefix.shiftLeft(8 * size - length), size)
        val sha = SHA256.get()
        sha.reset()
        sha.update(LABEL)
        sha.update(Bytes.toBytesBE(length.toLong(), 2))
        val digest = sha.digest(aligned)
        return BigInteger(1, digest.copyOf(8)).mod(BigInteger.valueOf(LH_PRIME)).toLong()
    }

    private val LABEL = Bytes.utf8(PREFIX_HASH_LABEL)

    /** One SHA-256 per thread (a `MessageDigest` is not thread-safe; looking one up per report costs more than the hash). */
    private val SHA256: ThreadLocal<MessageDigest> = ThreadLocal.withInitial { MessageDigest.getInstance("SHA-256") }

    /** PEM's rounds: γ = ⌊log₂ k⌋ + 1 (at most m), ℓ_i = min(γ + iη, m) for i < 1 + ⌈(m − γ)/η⌉. */
    @JvmStatic
    public fun pemPrefixLengths(maxLength: Int, topK: Int, eta: Int): List<Int> {
        require(maxLength >= 1 && topK >= 1 && eta >= 1) { "pem needs max_length, top_k and eta of at least 1" }
        val m = 8 * maxLength
        val gamma = minOf(32 - Integer.numberOfLeadingZeros(topK), m)
        val rounds = 1 + (m - gamma + eta - 1) / eta
        return List(rounds) { minOf(gamma + it * eta, m) }
    }

    /** TreeHist's rounds: 1, 2, …, m (the levels), then m (the final estimation group). */
    @JvmStatic
    public fun treeHistPrefixLengths(maxLength: Int): List<Int> {
        require(maxLength >= 1) { "treehist needs max_length of at least 1" }
        val m = 8 * maxLength
        return List(m) { it + 1 } + m
    }

    /**
     * The m-bit encoding of a value: its UTF-8 bytes, zero-padded to `maxLength`, big-endian. A
     * [ValueException] for a value that is not a string, holds U+0000 (the padding byte) or a lone
     * surrogate, or is longer than `maxLength` bytes; `mechanism` names the mechanism in the message.
     */
    @JvmStatic
    @JvmOverloads
    public fun valueBits(value: Any, maxLength: Int, mechanism: String = "pem"): BigInteger {
        val v = Values.normalize(value)
        if (v !is String) {
            throw ValueException("$mechanism values are strings, got ${typeName(v)} ${Text.clip(Values.text(v), 40)}")
        }
        if ('\u0000' in v) throw ValueException("$mechanism values cannot contain U+0000 (the zero byte pads values to max_length)")
        if (!Text.isWellFormed(v)) throw ValueException("$mechanism: value ${Text.clip(v, 40, true)} is not encodable as UTF-8")
        val data = Bytes.utf8(v)
        if (data.size > maxLength) {
            throw ValueException("$mechanism: value ${Text.clip(v, 40, true)} is ${data.size} bytes of UTF-8, above max_length=$maxLength")
        }
        return BigInteger(1, data.copyOf(maxLength))
    }

    private fun typeName(v: Any): String = when (v) {
        is BigInteger -> "an integer"
        is Double -> "a float"
        is Boolean -> "a boolean"
        else -> "a ${v.javaClass.simpleName}"
    }
}

/**
 * PEM's and TreeHist's client (the port of `js/src/pem.ts`): one report ⟨round, seed, bucket⟩ per value,
 * in the Python client's order, on the source's bits: the round (group) i = uniform(number of rounds), then the hash seed,
 * then randomized response over the g buckets of the key ([Prefixes.prefixKey]) of the value's first ℓ_i
 * bits. The report carries the seed, the bucket as its value, and `round`.
 *
 * @mechanisms pem treehist
 */
public class PemEncoder @JvmOverloads constructor(
    override val spec: Spec,
    private val source: ByteSource = ByteSources.secure,
) : Encoder {
    private val maxLength = spec.intValue("max_length")
    private val lengths: List<Int> =
        if (spec.mechanism == "treehist") {
            Prefixes.treeHistPrefixLengths(maxLength)
        } else {
            Prefixes.pemPrefixLengths(maxLength, spec.intValue("top_k"), spec.intValue("eta"))
        }
    private val g = spec.int("g")
    private val buckets = g.toLong()
    private val rr = RandomizedResponse(spec.fraction("p"), g)
    private val rounds = ReportBits.uniformTable(lengths.size.toLong())
    private val randomBits = ReportBits.reader(source)

    override fun encode(value: Any): Report {
        val bits = Prefixes.valueBits(value, maxLength, spec.mechanism)
        val round = rounds.draw(randomBits).toInt()
        val length = lengths[round]
        val key = Prefixes.prefixKey(bits.shiftRight(8 * maxLength - length), length)
        val seed = SEEDS.draw(randomBits)
        val bucket = lhBucket(seed, key, buckets)
        return Report(
            spec.fingerprint,
            seed = BigInteger.valueOf(seed),
            value = BigInteger.valueOf(rr.respond(bucket, randomBits).toLong()),
            extra = listOf("round" to round.toLong()),
        )
    }

    private companion object {
        /** The seeds of the hash family: uniform below (P − 1)·P < 2^62. */
        val SEEDS = ReportBits.uniformTable(LH_SEED_SPACE)
    }
}
