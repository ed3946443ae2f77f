package dev.ldp.client

import java.math.BigInteger

/**
 * What every encoder offers (the port of `js/src/encoder.ts`). Each mechanism family's encoder lives in
 * its own file of `dev.ldp.client.mechanisms`, tagged `@mechanisms NAME...` in its KDoc; the generated
 * [Registry.makeEncoder] maps mechanism names to them.
 *
 * An encoder is built either by a constructor `(spec: Spec, source: ByteSource)` or, when it needs
 * [EncoderOptions] (a memoized mechanism's client state, tables), by a companion
 * `@JvmStatic fun create(spec: Spec, source: ByteSource, options: EncoderOptions): Encoder`.
 */
public interface Encoder {
    /** The spec this encoder reports under. */
    public val spec: Spec

    /**
     * Randomize `value` into a report. Values are in Python's types ([Values]): a [String], an integer
     * ([BigInteger], [Int], [Long]), a [Double] or a [Boolean]; a [ValueException] for a value the
     * spec cannot encode.
     */
    public fun encode(value: Any): Report

    /**
     * A memoized mechanism's encoder: the identity of `value` for memoization (the key of its permanent
     * response, and of its ledger stream); null for a mechanism with fresh randomness per report.
     */
    public fun memoKey(value: Any): ByteArray? = null
}

/**
 * A client's persistent state for a memoized mechanism (RAPPOR, ...): keep it, so each value's
 * permanent response stays the same (Python's `ClientState`; the TS client's `RapporClient`).
 *
 * @property secret 32 secret bytes: the PRF key of the permanent response
 * @property cohort the client's cohort, below the spec's `num_cohorts` (an unsigned 32-bit integer)
 */
public class ClientState(secret: ByteArray, public val cohort: Long) {
    private val key = secret.copyOf()

    /** A copy of the 32 secret bytes. */
    public val secret: ByteArray get() = key.copyOf()

    init {
        if (secret.size != 32) fail("a client secret is 32 bytes, got ${secret.size}")
        if (cohort < 0 || cohort > 0xffffffffL) fail("a cohort is an unsigned 32-bit integer, got $cohort")
    }

    public companion object {
        /** How many cohorts a spec's clients are spread over: its `num_cohorts`, else 1. */
        @JvmStatic
        public fun cohortsOf(spec: Spec): BigInteger = spec.fields["num_cohorts"] as? BigInteger ?: BigInteger.ONE

        /** A fresh client state: a CSPRNG secret (32 bytes), then a uniform cohort (Python's `ClientState.new`). */
        @JvmStatic
        @JvmOverloads
        public fun create(spec: Spec, source: ByteSource = ByteSources.secure): ClientState {
            val secret = source.read(32)
            val cohort = Samplers.randbelow(cohortsOf(spec), source).toLong()
            return ClientState(secret, cohort)
        }
    }
}

/**
 * What [Registry.makeEncoder] passes on to an encoder's `create`.
 *
 * @property source the byte source (default: [ByteSources.secure]; tests pass a [FixedSource])
 * @property client a memoized mechanism's persistent state (a fresh one when null)
 * @property shake the SHAKE-256 of keyed streams (default: [BouncyCastleShake256])
 * @property tables the server's sampling tables of a multi-attribute spec's numeric grid attributes, by
 *   attribute name, each a parsed JSON object ([Json]) as `GET /v1/tasks/{task}/tables` serves it
 *   under `attributes`
 * @property table the server's sampling table of a numeric grid spec (piecewise, hybrid, Laplace,
 *   Gaussian), a parsed JSON object ([Json]) as `GET /v1/tasks/{task}/tables` serves it (checked
 *   against its digest and the spec's ε); Duchi's and stochastic rounding's follow from the spec
 */
public class EncoderOptions @JvmOverloads constructor(
    public val source: ByteSource = ByteSources.secure,
    public val client: ClientState? = null,
    public val shake: Shake256 = BouncyCastleShake256,
    public val tables: Map<String, JsonObject> = emptyMap(),
    public val table: JsonObject? = null,
)

/**
 * Randomized response over [0, n): keep the index with probability p, else report each other index
 * with q = (1 − p)/(n − 1) (GRR, the hashing oracles, the longitudinal chains). A fresh response
 * ([respond] on a [BitReader]) is one Knuth–Yao walk over [(1, p), (n − 1, q)] on the CSPRNG's bits; a
 * memoized one ([respond] on a keyed stream) one randbelow(den): below keep·den keeps the index, the
 * rest splits into slices of other·den, one per other index.
 */
public class RandomizedResponse(p: Fraction, n: BigInteger) {
    private val walk = KnuthYao(listOf(1L, n.toLong() - 1), listOf(p, (Fraction.ONE - p).divInt(n - BigInteger.ONE)))

    /** The reported index for the true `index`, fresh: one walk over [(1, p), (n − 1, q)] on `reader`. */
    public fun respond(index: Int, reader: BitReader): Int {
        val member = LongArray(1)
        val group = synchronized(reader) { walk.walk(reader, member) }
        if (group == 0) return index
        val o = member[0].toInt()
        return if (o >= index) o + 1 else o
    }

    private val uniform: UniformBelow
    private val keep: BigInteger
    private val other: BigInteger
    private val small: Boolean // den < 2^62: Long arithmetic
    private val keepLong: Long
    private val otherLong: Long

    /** [uniform] is wide: bounds[2j], bounds[2j + 1] = keep + j·other (j = 0 … n − 2), high and low words. */
    private val bounds: LongArray

    init {
        if (n < BigInteger.valueOf(2) || p <= Fraction.of(BigInteger.ONE, n) || p >= Fraction.ONE) {
            fail("randomized response needs 1/$n < p < 1, got $p")
        }
        val q = (Fraction.ONE - p).divInt(n - BigInteger.ONE) // each other value
        val den = Fraction.lcm(p.den, q.den)
        keep = p.num * (den / p.den)
        other = q.num * (den / q.den)
        uniform = UniformBelow(den)
        small = den.bitLength() <= 62
        keepLong = if (small) keep.toLong() else 0L
        otherLong = if (small) other.toLong() else 0L
        if (uniform.isWide) {
            // the slice boundaries keep + j·other (j = 1 … n − 2) as unsigned 128-bit integers
            val m = n.toInt() - 2
            bounds = LongArray(2 * (m + 1))
            bounds[0] = keep.shiftRight(64).toLong()
            bounds[1] = keep.toLong()
            var t = keep
            for (j in 1..m) {
                t += other
                bounds[2 * j] = t.shiftRight(64).toLong()
                bounds[2 * j + 1] = t.toLong()
            }
        } else {
            bounds = LongArray(0)
        }
    }

    /** The number of boundaries keep + j·other (1 ≤ j ≤ n − 2) at most (hi, lo): the slice of (hi, lo) ≥ keep. */
    private fun slice(hi: Long, lo: Long): Int {
        var a = 1 // the first j not known to be ≤ r
        var b = bounds.size / 2 // one past the last j
        while (a < b) {
            val mid = (a + b) ushr 1
            if (compare128(bounds[2 * mid], bounds[2 * mid + 1], hi, lo) <= 0) a = mid + 1 else b = mid
        }
        return a - 1
    }

    /** The reported index for the true `index`, from a keyed stream (one randbelow(den) from `source`). */
    public fun respond(index: Int, source: ByteSource): Int {
        val o: Int
        if (bounds.isNotEmpty()) {
            val r = LongArray(2)
            uniform.drawWide(source, r)
            if (compare128(r[0], r[1], bounds[0], bounds[1]) < 0) return index
            o = slice(r[0], r[1])
        } else if (small) {
            val r = uniform.drawLong(source)
            if (r < keepLong) return index
            o = ((r - keepLong) / otherLong).toInt()
        } else {
            val r = uniform.draw(source)
            if (r < keep) return index
            o = ((r - keep) / other).toInt()
        }
        return if (o >= index) o + 1 else o
    }
}

/** Word helpers of the lane sampler ([Samplers.sampleLaneWords]). */
public object Lanes {
    /** Every lane of `width` set, as 64-bit words. */
    @JvmStatic
    public fun fullWords(width: Int): LongArray {
        val out = LongArray((width + 63) ushr 6) { -1L }
        if (width % 64 != 0) out[out.size - 1] = (1L shl (width % 64)) - 1
        return out
    }

    /** Only lane `i` set, in words of `width` lanes. */
    @JvmStatic
    public fun oneLane(i: Int, width: Int): LongArray {
        val out = LongArray((width + 63) ushr 6)
        out[i ushr 6] = 1L shl (i and 63)
        return out
    }
}
