package dev.ldp.client.mechanisms

import dev.ldp.client.ReportBits
import dev.ldp.client.BouncyCastleShake256
import dev.ldp.client.BitReader
import dev.ldp.client.ByteSource
import dev.ldp.client.RunSampler
import dev.ldp.client.ByteSources
import dev.ldp.client.Bytes
import dev.ldp.client.ClientState
import dev.ldp.client.DomainIndex
import dev.ldp.client.Encoder
import dev.ldp.client.EncoderOptions
import dev.ldp.client.Fraction
import dev.ldp.client.Lanes
import dev.ldp.client.Packing
import dev.ldp.client.PrfStream
import dev.ldp.client.Report
import dev.ldp.client.Samplers
import dev.ldp.client.Shake256
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.WordLaneGroup
import java.math.BigInteger

/**
 * dBitFlip (the port of `js/src/dbitflip.ts`; Ding, Kulkarni, Yekhanin, NeurIPS 2017): each client
 * samples d of the b buckets once (Floyd's algorithm on its keyed PRF) and memoizes, per memo key (which
 * sampled bucket holds the value, if any), d bits: 1 with p where the value's bucket is, with q = 1 − p
 * elsewhere (the same PRF, never re-drawn); every report sends them, each flipped with γ afresh from
 * the CSPRNG. The report's `bits` are b + d bits: the sampled buckets, then the sent bits. Every byte
 * is read in the Python client's order.
 *
 * @mechanisms dbitflip
 */
public class DBitFlipEncoder @JvmOverloads constructor(
    override val spec: Spec,
    /** The client's state: its secret keys the sampled buckets and the memoized bits. */
    public val client: ClientState,
    private val source: ByteSource = ByteSources.secure,
    private val shake: Shake256 = BouncyCastleShake256,
) : Encoder {
    private val index = DomainIndex(spec.domain())
    private val b = index.size
    private val d = spec.intValue("d")
    private val p = spec.fraction("p")
    private val q = Fraction.ONE - p
    private val gamma = spec.fraction("gamma")
    private val bits = ReportBits.reader(source)
    private val full: LongArray
    private val position = HashMap<Int, Int>()
    private val flipper by lazy { RunSampler(d, listOf(gamma)) } // fresh flips, γ each

    /** The client's sampled buckets, ascending. */
    public val buckets: List<Int>

    init {
        val half = Fraction.of(1L, 2L)
        if (p <= half || p >= Fraction.ONE) throw SpecException("dbitflip needs 1/2 < p < 1")
        if (gamma >= half) throw SpecException("dbitflip needs 0 <= gamma < 1/2")
        if (d < 1 || d > b) throw SpecException("dbitflip: d must be in [1, $b], got $d")
        full = Lanes.fullWords(d)
        buckets = sampledBuckets(spec, client.secret, shake)
        buckets.forEachIndexed { i, bucket -> position[bucket] = i }
    }

    /** The position among the sampled buckets of the bucket holding `value`, or −1 when it is not sampled. */
    private fun patternPosition(value: Any): Int = position[index.indexOf(value)] ?: -1

    private fun key(i: Int): ByteArray = Packing.lanesToPacked(if (i < 0) BigInteger.ZERO else BigInteger.ONE.shiftLeft(i), d)

    /** The memo key of `value`: the d-bit pattern of which sampled bucket holds it, packed (the ledger's stream). */
    override fun memoKey(value: Any): ByteArray = key(patternPosition(value))

    /** The memoized bits of the value's memo key, as 64-bit words: 1 with p where the pattern is set, q elsewhere. */
    public fun permanentWords(value: Any): LongArray {
        val i = patternPosition(value)
        val pattern = LongArray(full.size)
        if (i >= 0) pattern[i ushr 6] = 1L shl (i and 63)
        val rest = LongArray(full.size) { full[it] xor pattern[it] }
        val stream = PrfStream(listOf(MEMO_LABEL, client.secret, Bytes.utf8(spec.fingerprint), key(i)), shake)
        return Samplers.sampleLaneWords(d, listOf(WordLaneGroup(pattern, p), WordLaneGroup(rest, q)), stream)
    }

    override fun encode(value: Any): Report {
        val sent = permanentWords(value)
        if (gamma.num.signum() != 0) {
            // output perturbation: each memoized bit flipped with probability γ, fresh (runs on the CSPRNG's bits)
            val flips = flipper.sample(arrayOf(full), bits)
            for (w in sent.indices) sent[w] = sent[w] xor flips[w]
        }
        val positions = ArrayList<Int>(buckets)
        for (k in 0 until d) if ((sent[k ushr 6] ushr (k and 63)) and 1L == 1L) positions.add(b + k)
        return Report(spec.fingerprint, bits = Packing.positionsToPacked(positions, b + d))
    }

    public companion object {
        private val BUCKETS_LABEL = Bytes.utf8("ldp-dbitflip-buckets-v1")
        private val MEMO_LABEL = Bytes.utf8("ldp-dbitflip-memo-v1")

        /** The encoder [dev.ldp.client.Registry.makeEncoder] gives: the options' client (a fresh one when missing) and SHAKE-256. */
        @JvmStatic
        public fun create(spec: Spec, source: ByteSource, options: EncoderOptions): Encoder =
            DBitFlipEncoder(spec, options.client ?: ClientState.create(spec, source), source, options.shake)

        /**
         * The d buckets a client samples, ascending: Floyd's algorithm over [0, b) on the stream
         * PRF("ldp-dbitflip-buckets-v1", secret, fingerprint).
         */
        @JvmStatic
        @JvmOverloads
        public fun sampledBuckets(spec: Spec, secret: ByteArray, shake: Shake256 = BouncyCastleShake256): List<Int> {
            val stream = PrfStream(listOf(BUCKETS_LABEL, secret, Bytes.utf8(spec.fingerprint)), shake)
            val b = spec.domain().size
            val d = spec.intValue("d")
            val chosen = LinkedHashSet<Int>()
            for (j in b - d until b) {
                val t = Samplers.randbelow(BigInteger.valueOf(j + 1L), stream).toInt()
                chosen.add(if (t in chosen) j else t)
            }
            return chosen.sorted()
        }
    }
}
