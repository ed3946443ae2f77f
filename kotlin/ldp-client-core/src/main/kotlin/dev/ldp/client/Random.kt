package dev.ldp.client

import java.math.BigInteger
import java.security.SecureRandom
import org.bouncycastle.crypto.digests.SHAKEDigest

/**
 * A source of random bytes: every coin of the client comes from one (the port of `js/src/random.ts`).
 * In use it is [PooledSource] over `java.security.SecureRandom` ([ByteSources.secure]); tests pass a
 * [FixedSource]; RAPPOR's permanent response reads a keyed SHAKE-256 stream ([PrfStream]). Bytes are
 * consumed exactly as the Python client consumes them: a report's fresh coins bit by bit through the
 * source's [BitReader] ([ReportBits]), a keyed stream by the byte samplers of [Samplers].
 */
public fun interface ByteSource {
    /** The next `n` random bytes (a fresh array the caller may keep). */
    public fun read(n: Int): ByteArray
}

/**
 * A CSPRNG byte source that asks `fill` (default: a `SecureRandom`'s `nextBytes`) for `blockSize`
 * bytes at a time and serves them in order (a `nextBytes` call costs far more than the few bytes a
 * report needs). Every byte is served at most once: the position only moves forward, a served byte is
 * zeroed in the pool, and the unserved rest of a block is zeroed and dropped (never served) when a
 * read needs more than it holds. Reads longer than a block bypass the pool. Each `read(n)` returns a
 * fresh copy. Safe for concurrent threads (reads are serialized).
 */
public class PooledSource @JvmOverloads constructor(
    /** Bytes asked of `fill` at a time. */
    public val blockSize: Int = 16384,
    private val fill: (ByteArray) -> Unit = defaultFill(),
) : ByteSource {
    private val pool: ByteArray
    private var pos: Int

    init {
        if (blockSize < 1) fail("blockSize must be an integer >= 1, got $blockSize")
        pool = ByteArray(blockSize)
        pos = blockSize // empty: the first read fills it
    }

    /** The pool's bit reader ([ReportBits.reader]): it takes 64 pooled bytes at a time. */
    internal val bitReader = BitReader(this, 64)

    @Synchronized
    override fun read(n: Int): ByteArray {
        if (n < 0) fail("cannot read $n bytes")
        if (n > pool.size) {
            val out = ByteArray(n)
            fill(out)
            return out
        }
        if (pos + n > pool.size) {
            java.util.Arrays.fill(pool, pos, pool.size, 0) // the unserved rest is dropped, never served
            fill(pool)
            pos = 0
        }
        val start = pos
        pos += n
        val out = pool.copyOfRange(start, pos)
        java.util.Arrays.fill(pool, start, pos, 0)
        return out
    }

    private companion object {
        fun defaultFill(): (ByteArray) -> Unit {
            val random = SecureRandom()
            return { out -> random.nextBytes(out) }
        }
    }
}

/** Fixed bytes, read in order (tests); records the size of every read; an [LdpException] when used up. */
public class FixedSource(private val bytes: ByteArray) : ByteSource {
    private val sizes = ArrayList<Int>()
    private var pos = 0

    /** The sizes of the reads made so far, in order. */
    public val reads: List<Int> get() = sizes.toList()

    /** Bytes not read yet. */
    public val remaining: Int get() = bytes.size - pos

    /** This source's bit reader ([ReportBits.reader]): one byte a read, so the reads stay in program order. */
    internal val bitReader = BitReader(this, 1)

    override fun read(n: Int): ByteArray {
        if (pos + n > bytes.size) fail("fixed byte source used up")
        sizes.add(n)
        pos += n
        return bytes.copyOfRange(pos - n, pos)
    }
}

/** The shared byte sources. */
public object ByteSources {
    /** The platform CSPRNG (`java.security.SecureRandom`), pooled ([PooledSource]): every encoder's default. */
    @JvmStatic
    public val secure: ByteSource = PooledSource()
}

/**
 * A SHAKE-256 implementation: `stream(input)` is a byte source reading the XOF output of `input` in
 * order. [BouncyCastleShake256] is the default.
 */
public fun interface Shake256 {
    /** The XOF output of `input`, read in order. */
    public fun stream(input: ByteArray): ByteSource
}

/** SHAKE-256 of Bouncy Castle (`SHAKEDigest(256)`): `java.security` has no SHAKE before Java 25, nor Android. */
public object BouncyCastleShake256 : Shake256 {
    override fun stream(input: ByteArray): ByteSource {
        val digest = SHAKEDigest(256)
        digest.update(input, 0, input.size)
        return ByteSource { n ->
            val out = ByteArray(n)
            if (n > 0) digest.doOutput(out, 0, n) // successive calls continue the output stream
            out
        }
    }
}

/** The PRF input: each part prefixed by its length as 4 big-endian bytes. */
public fun prfInput(vararg parts: ByteArray): ByteArray =
    Bytes.concat(*parts.flatMap { listOf(Bytes.toBytesBE(it.size.toLong(), 4), it) }.toTypedArray())

/** A keyed pseudorandom stream: SHAKE-256 of [prfInput] of the parts, read sequentially. */
public class PrfStream @JvmOverloads constructor(parts: List<ByteArray>, shake: Shake256 = BouncyCastleShake256) : ByteSource {
    private val stream = shake.stream(prfInput(*parts.toTypedArray()))

    override fun read(n: Int): ByteArray = stream.read(n)
}

/**
 * Uniform integers in [0, n) by rejection, as Python's `secrets.randbelow`: each try reads ⌈k/8⌉ bytes
 * (k = bit length of n), keeps the top k bits big-endian, and accepts them when below n. The sizes are
 * computed once; n < 2^62 draws in [Long] arithmetic.
 */
public class UniformBelow(public val n: BigInteger) {
    private val k: Int
    private val nbytes: Int
    private val shift: Int
    private val small: Long // n when k ≤ 62, else 0

    init {
        if (n.signum() <= 0) fail("randbelow needs n > 0, got $n")
        k = n.bitLength()
        nbytes = (k + 7) / 8
        shift = 8 * nbytes - k
        small = if (k <= 62) n.toLong() else 0L
    }

    /** One draw as a [Long] (only when n < 2^62). */
    public fun drawLong(source: ByteSource): Long {
        if (small == 0L) fail("drawLong needs n < 2^62, got $n")
        while (true) {
            val bytes = source.read(nbytes)
            var x = 0L
            for (i in 0 until nbytes) x = (x shl 8) or (bytes[i].toLong() and 0xff)
            val r = x ushr shift // nbytes ≤ 8; x may use the sign bit when nbytes = 8, hence ushr
            if (r < small) return r
        }
    }

    private val wide = k in 63..126
    private val nHi = if (wide) n.shiftRight(64).toLong() else 0L
    private val nLo = if (wide) n.toLong() else 0L

    /**
     * One draw as an unsigned 128-bit integer, high word in `out[0]`, low word in `out[1]` (only when
     * 2^62 ≤ n < 2^126: the fast path of large bounds, such as GRR's lcm of two 2^64 denominators).
     */
    public fun drawWide(source: ByteSource, out: LongArray) {
        if (!wide) fail("drawWide needs 2^62 <= n < 2^126, got $n")
        while (true) {
            val bytes = source.read(nbytes)
            var hi = 0L
            var lo = 0L
            for (b in bytes) {
                hi = (hi shl 8) or (lo ushr 56)
                lo = (lo shl 8) or (b.toLong() and 0xff)
            }
            if (shift > 0) {
                lo = (lo ushr shift) or (hi shl (64 - shift))
                hi = hi ushr shift
            }
            if (compare128(hi, lo, nHi, nLo) < 0) {
                out[0] = hi
                out[1] = lo
                return
            }
        }
    }

    /** True when [drawWide] serves this bound. */
    public val isWide: Boolean get() = wide

    /** One draw. */
    public fun draw(source: ByteSource): BigInteger {
        if (wide) {
            val out = LongArray(2)
            drawWide(source, out)
            return BigInteger(1, Bytes.concat(Bytes.toBytesBE(out[0], 8), Bytes.toBytesBE(out[1], 8)))
        }
        if (small != 0L) return BigInteger.valueOf(drawLong(source))
        while (true) {
            val r = BigInteger(1, source.read(nbytes)).shiftRight(shift) // the top k bits
            if (r < n) return r
        }
    }
}

/** Unsigned comparison of the 128-bit integers (aHi, aLo) and (bHi, bLo). */
internal fun compare128(aHi: Long, aLo: Long, bHi: Long, bLo: Long): Int {
    val c = java.lang.Long.compareUnsigned(aHi, bHi)
    return if (c != 0) c else java.lang.Long.compareUnsigned(aLo, bLo)
}

/** A lane group: the lanes of `mask` (bit i = lane i) are 1 with `probability`. */
public class LaneGroup(public val mask: BigInteger, public val probability: Fraction)

/** A lane group with its mask as 64-bit words (lane i is bit i % 64 of word ⌊i/64⌋). */
public class WordLaneGroup(public val mask: LongArray, public val probability: Fraction)

/**
 * The binary expansion of a probability num/den (0 ≤ num/den ≤ 1): its first [TABLE] digits as bits
 * of 64-bit words (digit r, the weight 2^-(r+1), is bit r % 64 of word ⌊r/64⌋), and the numerator
 * left after them, from which a sampler going past them (about 2^-128 per lane) continues exactly.
 */
internal class LaneDigits(p: Fraction) {
    val words = LongArray(TABLE / 64)
    val den: BigInteger = p.den
    val rest: BigInteger

    init {
        if (p.num.signum() < 0 || p.num > p.den) fail("probability outside [0, 1]: $p")
        var num = p.num
        for (r in 0 until TABLE) {
            num = num.shiftLeft(1)
            if (num >= den) {
                num -= den
                words[r ushr 6] = words[r ushr 6] or (1L shl (r and 63))
            }
        }
        rest = num
    }

    /** Digit r (r < [TABLE]). */
    fun digit(r: Int): Boolean = (words[r ushr 6] ushr (r and 63)) and 1L != 0L

    /** The digits after the table, one per `next()` (practically never needed). */
    inner class Late {
        private var num = rest

        fun next(): Boolean {
            num = num.shiftLeft(1)
            if (num < den) return false
            num -= den
            return true
        }
    }

    companion object {
        /** Digits kept per probability. */
        const val TABLE = 128
    }
}

/**
 * The lane sampler ([Samplers.sampleLaneWords]) for fixed group probabilities, their binary digits
 * computed once: an encoder builds one for its spec and calls [sample] per report with the groups'
 * masks (the same bytes read, the same coins as [Samplers.sampleLaneWords]).
 *
 * @property width the number of lanes
 */
public class LaneSampler(public val width: Int, probabilities: List<Fraction>) {
    private val digits: Array<LaneDigits>

    init {
        if (width < 0) fail("a lane sampler needs width >= 0, got $width")
        digits = Array(probabilities.size) { LaneDigits(probabilities[it]) }
    }

    /**
     * One run of the sampler: lane i is 1 with the probability of the group whose mask (one per
     * probability, in order, as 64-bit words; disjoint) holds it. Returns the lanes as 64-bit words.
     */
    public fun sample(masks: Array<LongArray>, source: ByteSource): LongArray {
        if (masks.size != digits.size) fail("a lane sampler of ${digits.size} groups was given ${masks.size} masks")
        return sample(width, digits, masks, source)
    }

    internal companion object {
        /** Planes are read in blocks of this many (as Python does); the unused rest of a block is dropped. */
        private const val PLANES_PER_BLOCK = 12

        /** The little-endian word [w] of the plane at [offset] of [nbytes] bytes in [buffer]. */
        private fun planeWord(buffer: ByteArray, offset: Int, nbytes: Int, w: Int): Long {
            val b = offset + 8 * w
            val n = minOf(8, nbytes - 8 * w)
            if (n == 8) {
                return (buffer[b].toLong() and 0xff) or
                    ((buffer[b + 1].toLong() and 0xff) shl 8) or
                    ((buffer[b + 2].toLong() and 0xff) shl 16) or
                    ((buffer[b + 3].toLong() and 0xff) shl 24) or
                    ((buffer[b + 4].toLong() and 0xff) shl 32) or
                    ((buffer[b + 5].toLong() and 0xff) shl 40) or
                    ((buffer[b + 6].toLong() and 0xff) shl 48) or
                    ((buffer[b + 7].toLong() and 0xff) shl 56)
            }
            var plane = 0L
            for (i in 0 until n) plane = plane or ((buffer[b + i].toLong() and 0xff) shl (8 * i))
            return plane
        }

        /**
         * The sampler: each round reads one plane of U's digits (a block of 12 planes at a time), and
         * lanes where U's digit differs from their probability's are decided (U < t where t's is 1).
         */
        fun sample(width: Int, digits: Array<LaneDigits>, masks: Array<LongArray>, source: ByteSource): LongArray {
            val nwords = (width + 63) ushr 6
            val nbytes = (width + 7) ushr 3
            val result = LongArray(nwords)
            if (width == 0) return result
            val last = if (width % 64 == 0) -1L else (1L shl (width % 64)) - 1
            val undecided = LongArray(nwords) { -1L }
            undecided[nwords - 1] = last
            val groups = digits.size
            val on = BooleanArray(groups)
            var late: Array<LaneDigits.Late>? = null // past the tables (practically never)
            var buffer = ByteArray(0)
            var offset = 0
            var round = 0
            var open = true
            while (open) {
                if (round < LaneDigits.TABLE) {
                    for (j in 0 until groups) on[j] = digits[j].digit(round)
                } else {
                    val l = late ?: Array(groups) { digits[it].Late() }.also { late = it }
                    for (j in 0 until groups) on[j] = l[j].next()
                }
                if (offset == buffer.size) {
                    buffer = source.read(nbytes * PLANES_PER_BLOCK)
                    offset = 0
                }
                open = false
                for (w in 0 until nwords) {
                    val u = undecided[w]
                    if (u == 0L) continue // every lane of the word decided: nothing changes
                    var plane = planeWord(buffer, offset, nbytes, w)
                    if (w == nwords - 1) plane = plane and last
                    var t = 0L
                    for (j in 0 until groups) if (on[j]) t = t or masks[j][w]
                    result[w] = result[w] or (u and t and plane.inv()) // U's digit 0 where t's is 1: U < t, coin 1
                    val left = u and (plane xor t).inv() // decided wherever the digits differ
                    undecided[w] = left
                    if (left != 0L) open = true
                }
                offset += nbytes
                round++
            }
            return result
        }
    }
}

/**
 * The exact byte samplers (the port of the samplers of `js/src/random.ts`), each with Python's byte
 * consumption: the keyed PRF streams' (RAPPOR's permanent response, the memoized mechanisms). A
 * report's fresh coins use the bit samplers of [ReportBits].
 */
public object Samplers {
    /** Uniform integer in [0, n) by rejection, as Python's `secrets.randbelow`: k = bit length of n bits per try. */
    @JvmStatic
    public fun randbelow(n: BigInteger, source: ByteSource): BigInteger = UniformBelow(n).draw(source)

    /** k uniform bits: one read of ⌈k/8⌉ bytes, big-endian, top k bits kept. */
    @JvmStatic
    public fun randbits(k: Int, source: ByteSource): BigInteger {
        if (k < 0) fail("randbits needs k >= 0, got $k")
        val nbytes = (k + 7) / 8
        return BigInteger(1, source.read(nbytes)).shiftRight(8 * nbytes - k)
    }

    private val digitTables = java.util.Collections.synchronizedMap(java.util.WeakHashMap<Fraction, LaneDigits>())

    /** The digits of a probability (cached per equal fraction). */
    internal fun digitsOf(p: Fraction): LaneDigits =
        digitTables[p] ?: LaneDigits(p).also { digitTables[p] = it }

    /**
     * `width` independent exact coins, lane i with its group's probability, as 64-bit words. Each lane
     * compares a uniform real U (one binary digit per round: one plane of ⌈width/8⌉ bytes,
     * little-endian, read from the source in blocks of 12 planes) with its probability t, digit by
     * digit; the first differing digit decides U < t. Exactly the bytes and results of Python's
     * bit-sliced sampler. The groups' masks must be disjoint. An encoder with fixed probabilities
     * builds a [LaneSampler] once instead (the same coins, without the per-call set-up).
     */
    @JvmStatic
    public fun sampleLaneWords(width: Int, groups: List<WordLaneGroup>, source: ByteSource): LongArray {
        val digits = Array(groups.size) { digitsOf(groups[it].probability) }
        val masks = Array(groups.size) { groups[it].mask }
        return LaneSampler.sample(width, digits, masks, source)
    }

    /** Lanes as a [BigInteger] → 64-bit words. */
    @JvmStatic
    public fun lanesToWords(lanes: BigInteger, width: Int): LongArray =
        LongArray((width + 63) ushr 6) { w -> lanes.shiftRight(64 * w).toLong() }

    /** 64-bit words → lanes as a [BigInteger] (bit i = lane i). */
    @JvmStatic
    public fun wordsToLanes(words: LongArray): BigInteger {
        var x = BigInteger.ZERO
        for (w in words.indices.reversed()) x = x.shiftLeft(64).or(BigInteger(1, Bytes.toBytesBE(words[w], 8)))
        return x
    }

    /** [sampleLaneWords] with [BigInteger] masks and result (bit i = lane i). */
    @JvmStatic
    public fun sampleLanes(width: Int, groups: List<LaneGroup>, source: ByteSource): BigInteger {
        val full = BigInteger.ONE.shiftLeft(width) - BigInteger.ONE
        val wordGroups = groups.map { WordLaneGroup(lanesToWords(it.mask.and(full), width), it.probability) }
        return wordsToLanes(sampleLaneWords(width, wordGroups, source))
    }
}
