package dev.ldp.client.mechanisms

import dev.ldp.client.ReportBits
import dev.ldp.client.BouncyCastleShake256
import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.Bytes
import dev.ldp.client.ClientState
import dev.ldp.client.DomainIndex
import dev.ldp.client.Encoder
import dev.ldp.client.EncoderOptions
import dev.ldp.client.Fraction
import dev.ldp.client.LaneSampler
import dev.ldp.client.RunSampler
import dev.ldp.client.BitReader
import dev.ldp.client.Lanes
import dev.ldp.client.Packing
import dev.ldp.client.Report
import dev.ldp.client.Shake256
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.Text
import dev.ldp.client.ValueException
import dev.ldp.client.Values
import dev.ldp.client.hashing.BloomHash
import dev.ldp.client.hashing.bloomPositions
import dev.ldp.client.prfInput
import java.math.BigInteger

/**
 * RAPPOR (the port of `js/src/rappor.ts`): the true bits B (a Bloom filter of the value with mmh3 or
 * Google's MD5, a one-hot domain index for basic, one bit for boolean); the permanent randomized
 * response B′ memoized through a keyed PRF (SHAKE-256 of the client's secret, the spec fingerprint
 * and the value's memo key: bit 1 with 1 − f/2 where B = 1, f/2 where B = 0), so one value always
 * gives the same B′ without storing it; then the instantaneous response from the CSPRNG, drawn as runs on
 * its bits (bit 1 with q
 * where B′ = 1, p where B′ = 0). Reports carry the client's cohort.
 *
 * Keep the [client] (secret and cohort) across runs, e.g. with
 * [dev.ldp.client.state.ClientStates.open]: a new secret gives new permanent responses, and averaging
 * two of them reveals more than the spec's ε∞.
 *
 * @mechanisms rappor
 */
public class RapporEncoder @JvmOverloads constructor(
    override val spec: Spec,
    /** The client's persistent state: its secret keys the permanent response, its cohort the Bloom hash. */
    public val client: ClientState,
    private val source: ByteSource = ByteSources.secure,
    private val shake: Shake256 = BouncyCastleShake256,
) : Encoder {
    private val encoding = spec.string("encoding")
    private val width = spec.intValue("num_bits")
    private val index: DomainIndex? = if (encoding == "basic") DomainIndex(spec.domain()) else null
    private val f = spec.fraction("f")
    private val p = spec.fraction("p")
    private val q = spec.fraction("q")
    private val halfF: Fraction
    private val keepOne: Fraction
    private val full: LongArray = Lanes.fullWords(width)
    private val numHashes: Int
    private val hash: BloomHash?
    private val prfPrefix: ByteArray
    private val permanent: LaneSampler // B′: 1 − f/2 where B = 1, f/2 where B = 0
    private val instantaneous: RunSampler // the report, fresh coins as runs: q where B′ = 1, p where B′ = 0
    private val bits = ReportBits.reader(source)

    init {
        if (p >= q || f >= Fraction.ONE) throw SpecException("rappor needs p < q and f < 1")
        val cohorts = ClientState.cohortsOf(spec)
        if (BigInteger.valueOf(client.cohort) >= cohorts) throw SpecException("cohort must be in [0, $cohorts), got ${client.cohort}")
        halfF = f.divInt(BigInteger.valueOf(2))
        keepOne = Fraction.ONE - halfF
        numHashes = if (encoding == "bloom") spec.intValue("num_hashes") else 1
        hash = if (encoding == "bloom") BloomHash.of(spec.string("hash")) else null
        prfPrefix = prfInput(PRR_LABEL, client.secret, Bytes.utf8(spec.fingerprint))
        permanent = LaneSampler(width, listOf(keepOne, halfF))
        instantaneous = RunSampler(width, listOf(q, p))
    }

    /** The positions of the true bits B of [value] (a Bloom filter's may repeat). */
    public fun truePositions(value: Any): IntArray = when (encoding) {
        "basic" -> intArrayOf(index!!.indexOf(value))
        "boolean" -> if (parseBoolean(value)) intArrayOf(0) else IntArray(0)
        else -> bloom(Values.bytes(value))
    }

    private fun bloom(bytes: ByteArray): IntArray = bloomPositions(bytes, client.cohort, numHashes, width, hash!!)

    /**
     * The value's identity for memoization, the last part of its PRF input: two spellings of one
     * value share it (basic: the domain index in decimal; boolean: `"1"` or `"0"`; Bloom: the value's
     * bytes).
     */
    override fun memoKey(value: Any): ByteArray = when (encoding) {
        "basic" -> Bytes.utf8(index!!.indexOf(value).toString())
        "boolean" -> Bytes.utf8(if (parseBoolean(value)) "1" else "0")
        else -> Values.bytes(value)
    }

    /** The PRF parts of the value's permanent response: label, secret, fingerprint, memo key. */
    public fun prfParts(value: Any): List<ByteArray> = listOf(PRR_LABEL, client.secret, Bytes.utf8(spec.fingerprint), memoKey(value))

    /** [prfInput] of [prfParts] from the memo key, the first three parts encoded once. */
    private fun prfInputOf(memoKey: ByteArray): ByteArray =
        Bytes.concat(prfPrefix, Bytes.toBytesBE(memoKey.size.toLong(), 4), memoKey)

    /** B′, the permanent response, as 64-bit words of lanes (lane i is bit i % 64 of word ⌊i/64⌋). */
    public fun permanentWords(value: Any): LongArray {
        val key = memoKey(value) // a Bloom filter's memo key is the value's bytes: encoded once for both uses
        val positions = if (encoding == "bloom") bloom(key) else truePositions(value)
        val bits = LongArray(full.size)
        for (i in positions) bits[i ushr 6] = bits[i ushr 6] or (1L shl (i and 63))
        if (f.num.signum() == 0) return bits
        return permanent.sample(arrayOf(bits, xor(full, bits)), shake.stream(prfInputOf(key)))
    }

    /** B′ packed as a report's bits are. */
    public fun permanentBits(value: Any): ByteArray = Packing.wordsToPacked(permanentWords(value), width)

    override fun encode(value: Any): Report {
        val prr = permanentWords(value)
        val irr = instantaneous.sample(arrayOf(prr, xor(full, prr)), bits)
        return Report(spec.fingerprint, cohort = client.cohort, bits = Packing.wordsToPacked(irr, width))
    }

    public companion object {
        private val PRR_LABEL = Bytes.utf8("ldp-rappor-prr-v1")
        private val TRUE_WORDS = setOf("1", "true", "t", "yes", "y")
        private val FALSE_WORDS = setOf("0", "false", "f", "no", "n")

        /** The encoder [dev.ldp.client.Registry.makeEncoder] gives: the options' client (a fresh one when missing) and SHAKE-256. */
        @JvmStatic
        public fun create(spec: Spec, source: ByteSource, options: EncoderOptions): Encoder =
            RapporEncoder(spec, options.client ?: ClientState.create(spec, source), source, options.shake)

        /**
         * A boolean from true/false, 0/1, or the words Python accepts (`yes`, `n`, ...; any case,
         * surrounding spaces ignored).
         *
         * @throws ValueException for anything else.
         */
        @JvmStatic
        public fun parseBoolean(value: Any?): Boolean {
            when (val v = Values.normalize(value)) {
                is Boolean -> return v
                is BigInteger -> if (v == BigInteger.ZERO || v == BigInteger.ONE) return v == BigInteger.ONE
                is Double -> if (v == 0.0 || v == 1.0) return v == 1.0
                is String -> {
                    val word = v.trim().lowercase()
                    if (word in TRUE_WORDS) return true
                    if (word in FALSE_WORDS) return false
                }
            }
            throw ValueException("not a boolean: ${Text.clip(Values.text(value), 80, true)}")
        }

        private fun xor(a: LongArray, b: LongArray): LongArray = LongArray(a.size) { a[it] xor b[it] }
    }
}
