package dev.ldp.client.mechanisms

import dev.ldp.client.ReportBits
import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.Bytes
import dev.ldp.client.BouncyCastleShake256
import dev.ldp.client.ClientState
import dev.ldp.client.Encoder
import dev.ldp.client.EncoderOptions
import dev.ldp.client.Fraction
import dev.ldp.client.PrfStream
import dev.ldp.client.Report
import dev.ldp.client.Samplers
import dev.ldp.client.Shake256
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.Text
import dev.ldp.client.BitReader
import dev.ldp.client.ValueException
import dev.ldp.client.Values
import dev.ldp.client.WordLaneGroup
import java.math.BigInteger
import java.util.concurrent.ConcurrentHashMap

/**
 * 1BitMean (the port of `js/src/onebitmean.ts`; Ding, Kulkarni, Yekhanin, NeurIPS 2017): plain, a fresh
 * bit per report (the value's position u ∈ [0, 1] rounded to a side with probability u, kept with p);
 * or, with `rounding = "alpha"`, the memoized bit of the client's α-rounded grid point (a keyed PRF of
 * the client's secret, never re-drawn), flipped with probability γ from the CSPRNG in every report. Fresh
 * coins are exact walks on the source's bits ([dev.ldp.client.ReportBits]). The same coins, bytes and PRF
 * reads as the Python client. The report's `value` is 1.0 or 0.0.
 *
 * @mechanisms onebitmean
 */
public class OneBitMeanEncoder @JvmOverloads constructor(
    override val spec: Spec,
    /** The client's state (its secret keys the α and the memoized bits): required with `rounding = "alpha"`. */
    public val client: ClientState? = null,
    private val source: ByteSource = ByteSources.secure,
    private val shake: Shake256 = BouncyCastleShake256,
) : Encoder {
    private val low = spec.float("low")
    private val span = spec.float("high") - low
    private val p = spec.fraction("p")
    private val gamma = spec.fraction("gamma")
    private val keep = ReportBits.coinTable(p)
    private val flip = ReportBits.coinTable(gamma)
    private val randomBits = ReportBits.reader(source)

    /** True with `rounding = "alpha"`: one memoized bit per grid point. */
    public val memoized: Boolean = spec.fields["rounding"] == "alpha"
    private val grid: Int
    private val alpha: Long
    private val bits = ConcurrentHashMap<Int, Int>()

    init {
        if (spec.mechanism != "onebitmean") throw SpecException("${spec.mechanism} is not onebitmean")
        if (memoized) {
            if (client == null) throw SpecException("onebitmean with rounding 'alpha' needs its client's state (secret)")
            grid = spec.intValue("grid")
            val bytes = PrfStream(listOf(ALPHA_LABEL, client.secret, Bytes.utf8(spec.fingerprint)), shake).read(4)
            alpha = Bytes.toBigIntegerBE(bytes).toLong() // big-endian uint32
        } else {
            grid = 0
            alpha = 0
        }
    }

    private fun unit(value: Any): Double = ((toDouble(value) - low) / span).coerceIn(0.0, 1.0)

    /** The α-rounded grid point (0..grid) of `value` for this client. */
    public fun gridPoint(value: Any): Int {
        if (!memoized) throw SpecException("onebitmean without rounding 'alpha' has no grid points")
        return alphaPoint(unit(value), grid, alpha)
    }

    /** The memo key of `value` (rounding "alpha"): its grid point in ASCII decimal; null for plain 1BitMean (fresh per report). */
    override fun memoKey(value: Any): ByteArray? = if (memoized) Bytes.utf8(gridPoint(value).toString()) else null

    /** P[memoized bit = 1] of grid point g: (1 − p) + (g/grid)(2p − 1). */
    public fun memoProbability(point: Int): Fraction =
        (Fraction.ONE - p) + Fraction.of(BigInteger.valueOf(point.toLong()), BigInteger.valueOf(grid.toLong())) * (p + p - Fraction.ONE)

    /** The memoized bit of grid point `point`: a keyed PRF of (secret, spec, point), never re-drawn. */
    public fun memoBit(point: Int): Int = bits.getOrPut(point) {
        val stream = PrfStream(listOf(MEMO_LABEL, client!!.secret, Bytes.utf8(spec.fingerprint), Bytes.utf8(point.toString())), shake)
        (Samplers.sampleLaneWords(1, listOf(WordLaneGroup(longArrayOf(1L), memoProbability(point))), stream)[0] and 1L).toInt()
    }

    /** The reported bit for `value`. */
    public fun sampleBit(value: Any): Int {
        val u = unit(value)
        if (!memoized) {
            val side = NumericEncoder.randomRound(u, randomBits)
            return if (keep.flip(randomBits)) side else 1 - side
        }
        var bit = memoBit(alphaPoint(u, grid, alpha))
        if (gamma.num.signum() != 0 && flip.flip(randomBits)) bit = bit xor 1
        return bit
    }

    override fun encode(value: Any): Report = Report(spec.fingerprint, value = if (sampleBit(value) == 1) 1.0 else 0.0)

    public companion object {
        private val ALPHA_LABEL = Bytes.utf8("ldp-1bitmean-alpha-v1")
        private val MEMO_LABEL = Bytes.utf8("ldp-1bitmean-memo-v1")

        /** α = jΔ/2^32, j uniform on [0, 2^32) (Python's `ALPHA_BITS`). */
        private const val ALPHA_SPAN = 1L shl 32

        /**
         * The encoder [dev.ldp.client.Registry.makeEncoder] gives: a memoized spec uses the options' client
         * (a fresh one when missing: a CSPRNG secret, cohort 0, as the spec has no cohorts).
         */
        @JvmStatic
        public fun create(spec: Spec, source: ByteSource, options: EncoderOptions): Encoder {
            val memoized = spec.fields["rounding"] == "alpha"
            val client = if (memoized) options.client ?: newClient(source) else null
            return OneBitMeanEncoder(spec, client, source, options.shake)
        }

        /** A fresh client of a memoized spec: 32 CSPRNG secret bytes, cohort 0 (the spec has no cohorts). */
        @JvmStatic
        @JvmOverloads
        public fun newClient(source: ByteSource = ByteSources.secure): ClientState = ClientState(source.read(32), 0)

        /**
         * The grid point (0..grid) a client with α index `alpha` reports for the position u ∈ [0, 1]: cell
         * L = ⌊u·grid⌋ (grid − 1 at u = 1), rounded up iff ⌊frac·2^32⌋ + α ≥ 2^32 (Python's `alpha_point`).
         */
        @JvmStatic
        public fun alphaPoint(u: Double, grid: Int, alpha: Long): Int {
            val pos = u * grid
            val cell = minOf(Math.floor(pos), (grid - 1).toDouble()).toInt()
            val fine = Math.floor((pos - cell) * ALPHA_SPAN).toLong()
            return cell + if (fine + alpha >= ALPHA_SPAN) 1 else 0
        }

        /** A user's number: a finite number or an integer (as Python's `check_numeric_value`: no text, no booleans). */
        @JvmStatic
        public fun toDouble(value: Any): Double {
            val x = when (val v = Values.normalize(value)) {
                is Double -> v
                is BigInteger -> v.toDouble()
                else -> throw ValueException("numeric value must be a number, got ${Text.clip(Values.text(v), 80, true)}")
            }
            if (x.isNaN() || x.isInfinite()) throw ValueException("numeric value must be finite, got ${Text.clip(Values.text(value), 80, true)}")
            return x
        }
    }
}
