package dev.ldp.client.mechanisms

import dev.ldp.client.BitReader
import dev.ldp.client.ReportBits
import java.math.BigInteger
import java.util.concurrent.ConcurrentHashMap

/**
 * [ReportBits.uniformSubset] and [ReportBits.unrankSubset] for subset selection, faster from ranks of 2^62:
 * the same bits read and the same subsets (the tests compare them). The steps of the `bits` spec (at level i, c stepped down while C(c, i) > rank; at a member, rank −= C(c, i)) on 32-bit
 * limbs (little-endian `IntArray`s).
 *
 * Each comparison C(c, i) > rank is decided in base-2 logarithms, log₂ C(c, i) = L(c) − L(i) − L(c − i)
 * from a table of L(c) = log₂ c!, against log₂ rank from the rank's top limbs, when they differ by more
 * than [delta] (a bound on both errors); near a tie it is made exactly. C(c, i) is kept exactly as its odd
 * part X and its twos e (C = X·2^e): a step's factor (c − i)/c (C(c − 1, i) = C(c, i)·(c − i)/c, and i/c
 * from a member at c to C(c − 1, i − 1)) contributes its odd parts to two pending products and its twos to
 * e, so X only ever meets multiplications and exact divisions by odd numbers (by their inverse modulo
 * 2^32, from the low limb). At a member one pass over the limbs applies the pending products (two chunks,
 * each below 2^32) and subtracts X·2^e from the rank.
 */
internal object SubsetUnranking {
    private const val MASK = 0xffffffffL
    private const val LN2 = 0.6931471805599453

    /** log₂(1 + j/1024) and 1024/(1024 + j), j ≤ 1024: [log2]'s table. */
    private val logMantissa = DoubleArray(1025) { Math.log1p(it / 1024.0) / LN2 }
    private val reciprocal = DoubleArray(1025) { 1024.0 / (1024 + it) }

    /** log₂ c! for c below its size (grown on demand). */
    @Volatile
    private var logFactorials = DoubleArray(1)

    private fun logFactorials(n: Int): DoubleArray {
        logFactorials.let { if (it.size > n) return it }
        synchronized(this) {
            val old = logFactorials
            if (old.size > n) return old
            val table = old.copyOf(maxOf(n + 1, 2 * old.size))
            for (c in old.size until table.size) table[c] = table[c - 1] + Math.log(c.toDouble()) / LN2
            logFactorials = table
            return table
        }
    }

    /**
     * A bound on the error of log₂ C(c, i) − log₂ rank for c ≤ n: each L(c) is a sum of c terms, each
     * term and sum rounded (at most c·(c·log₂c·2^-53 + 2^-50)), three of them, and log₂ rank's rounding
     * (its top 53 bits, the table's interpolation: below 2^-40).
     */
    private fun delta(n: Int): Double {
        val m = n + 2.0
        return 1e-10 + 4 * m * (m * (Math.log(m) / LN2) * 1.12e-16 + 8.9e-16)
    }

    /** log₂ of the nonzero value of `limbs[0, size)`, within 2^-40 + its magnitude·2^-50. */
    private fun log2(limbs: IntArray, size: Int): Double {
        var top = 0.0
        for (j in size - 1 downTo maxOf(size - 3, 0)) top = top * 4294967296.0 + (limbs[j].toLong() and MASK)
        val bits = java.lang.Double.doubleToRawLongBits(top)
        val exponent = (bits ushr 52).toInt() - 1023
        val j = ((bits ushr 42) and 1023).toInt()
        val mantissa = java.lang.Double.longBitsToDouble((bits and 0xfffffffffffffL) or 0x3ff0000000000000L) // in [1, 2)
        val u = mantissa * reciprocal[j] - 1 // |u| < 2^-10: log₂(1 + u) by its series to u³
        return exponent + 32.0 * maxOf(size - 3, 0) + logMantissa[j] + u * (1 - u * (0.5 - u / 3)) / LN2
    }

    /** The limbs of `rank` with room for [unrank] of a k-subset of [0, n). */
    fun limbs(rank: BigInteger, n: Int): IntArray = IntArray((n ushr 5) + 6).also { limbs(rank, it) }

    /** Writes x's limbs into `out` (zeroed), returns their count. */
    private fun limbs(x: BigInteger, out: IntArray): Int {
        val bytes = x.toByteArray() // big-endian, with a sign byte at most
        for (j in bytes.indices) {
            val at = bytes.size - 1 - j // byte `at` of the value, from the least significant
            if (at < 4 * out.size) out[at ushr 2] = out[at ushr 2] or ((bytes[j].toInt() and 0xff) shl (8 * (at and 3)))
        }
        return (x.bitLength() + 31) ushr 5
    }

    private val cache = ConcurrentHashMap<List<Any>, IntArray>()

    /** The limbs of `key`'s value, made once (at most 64 kept: past that the cache starts afresh); not to be written. */
    private fun cached(key: List<Any>, n: Int, value: () -> BigInteger): IntArray {
        cache[key]?.let { return it }
        if (cache.size >= 64) cache.clear()
        return limbs(value(), n).also { cache[key] = it }
    }

    /** The limbs of C(n, k). */
    private fun binomialLimbs(n: Int, k: Int): IntArray = cached(listOf("C", n, k), n) { ReportBits.binomial(n, k) }

    /** [ReportBits.uniformSubset]: the same bits read, the same subset. */
    fun uniformSubset(n: Int, k: Int, reader: BitReader): IntArray {
        if (k < 0 || k > n) return ReportBits.uniformSubset(n, k, reader) // its refusal
        val total = ReportBits.binomial(n, k)
        if (total.bitLength() <= 62) return ReportBits.uniformSubset(n, k, reader)
        return unrank(synchronized(reader) { uniform(total, n, k, reader) }, n, k)
    }

    /** [ReportBits.unrankSubset] (k ≤ n, 0 ≤ rank < C(n, k)): the same subset. */
    fun unrankSubset(rank: BigInteger, n: Int, k: Int): IntArray = unrank(limbs(rank, n), n, k)

    private fun trim(limbs: IntArray, size: Int): Int {
        var s = size
        while (s > 0 && limbs[s - 1] == 0) s--
        return s
    }

    /** The inverse of odd d modulo 2^32. */
    private fun inverse(d: Long): Int {
        val o = d.toInt()
        var inv = o
        repeat(4) { inv *= 2 - o * inv }
        return inv
    }

    /**
     * The rank's limbs for C(n, k) ≥ 2^62 outcomes (the walk of [ReportBits.uniform] of a [BigInteger]: the
     * same bits), with room for [unrank]. The caller holds the reader's monitor.
     */
    fun uniform(total: BigInteger, n: Int, k: Int, reader: BitReader): IntArray {
        val capacity = (n ushr 5) + 6
        val outcomes = binomialLimbs(n, k)
        val size = (total.bitLength() + 31) ushr 5
        val zeros = if (total.bitCount() == 1) total.bitLength() - 2 else total.bitLength() - 1
        val d = IntArray(capacity)
        val rest = IntArray(capacity) // the digits' remainder after the leading zeros: 2^zeros
        rest[zeros ushr 5] = 1 shl (zeros and 31)
        // the first `zeros` bits, most significant first: the top limb's zeros % 32, then whole limbs
        var j = (zeros - 1) ushr 5
        var width = zeros - 32 * j
        while (j >= 0) {
            d[j] = reader.bits(width).toInt()
            j--
            width = 32
        }
        while (true) {
            shiftUp(d, size + 1, reader.bit())
            shiftUp(rest, size + 1, 0)
            if (compare(rest, outcomes, size + 1) >= 0) { // a digit 1: the level's leaves are the outcomes
                subtract(rest, outcomes, size + 1)
                if (compare(d, outcomes, size + 1) < 0) return d
                subtract(d, outcomes, size + 1)
            }
        }
    }

    /** x = 2x + bit over `size` limbs. */
    private fun shiftUp(x: IntArray, size: Int, bit: Int) {
        var carry = bit
        for (j in 0 until size) {
            val v = x[j]
            x[j] = (v shl 1) or carry
            carry = v ushr 31
        }
    }

    private fun compare(x: IntArray, y: IntArray, size: Int): Int {
        for (j in size - 1 downTo 0) {
            val c = Integer.compareUnsigned(x[j], y[j])
            if (c != 0) return c
        }
        return 0
    }

    /** x −= y over `size` limbs (y ≤ x). */
    private fun subtract(x: IntArray, y: IntArray, size: Int) {
        var borrow = 0L
        for (j in 0 until size) {
            val v = (x[j].toLong() and MASK) - (y[j].toLong() and MASK) - borrow
            x[j] = v.toInt()
            borrow = v ushr 63
        }
    }

    /**
     * The k-subset of [0, n) of colex rank `rank` (its limbs; overwritten), in increasing order; `rank` has
     * at least n/32 + 6 limbs, zero above the rank's, and is below C(n, k).
     */
    fun unrank(rank: IntArray, n: Int, k: Int): IntArray {
        val members = IntArray(k)
        if (k == 0) return members
        val r = rank
        var rs = trim(r, r.size)
        if (rs == 0) { // rank 0: C(c, i) > 0 down to c = i − 1, at every level
            for (i in 0 until k) members[i] = i
            return members
        }
        val lg = logFactorials(n)
        val delta = delta(n)
        val top = ReportBits.binomial(n - 1, k) // C(c, i) at c = n − 1, i = k (at least 1: 0 < rank < C(n, k))
        var e = top.lowestSetBit
        val x = cached(listOf("odd", n, k), n) { top.shiftRight(e) }.copyOf(r.size) // X = C's odd part
        var xs = trim(x, x.size)
        var c = n - 1
        var m = 1L // the pending odd factors of X: X·m/d is C(c, i)'s odd part; each below 2^32
        var d = 1L
        var i = k
        while (i > 0) {
            if (rs == 0) { // rank 0: C(c, i) > 0 down to c = i − 1, at every level
                while (i > 0) {
                    i--
                    members[i] = i
                }
                break
            }
            val logRank = log2(r, rs)
            val lgi = lg[i]
            while (true) { // rank ≥ 1 = C(i, i): c stays at least i
                val gap = lg[c] - lgi - lg[c - i] - logRank
                var above = gap > delta
                if (!above && gap >= -delta) { // near a tie: exactly
                    xs = apply(x, xs, m, d, r, 0, -1)
                    m = 1L
                    d = 1L
                    above = compareShifted(x, xs, e, r, rs) > 0
                }
                if (!above) break
                val a = c - i
                val ta = Integer.numberOfTrailingZeros(a)
                val tc = Integer.numberOfTrailingZeros(c)
                e += ta - tc
                val ao = (a ushr ta).toLong()
                val co = (c ushr tc).toLong()
                if (m * ao > MASK || d * co > MASK) { // a pass applies the pending factors
                    xs = apply(x, xs, m, d, r, 0, -1)
                    m = 1L
                    d = 1L
                }
                m *= ao
                d *= co
                c--
            }
            members[i - 1] = c
            xs = apply(x, xs, m, d, r, e, rs) // X = C(c, i)'s odd part; rank −= X·2^e
            rs = trim(r, rs)
            // C(c − 1, i − 1) = C(c, i)·i/c
            val ti = Integer.numberOfTrailingZeros(i)
            val tc = Integer.numberOfTrailingZeros(c)
            e += ti - tc
            m = (i ushr ti).toLong()
            d = (c ushr tc).toLong()
            c--
            i--
        }
        return members
    }

    /**
     * X = X·m/d (d odd, the quotient exact) in one pass from the low limb, returning X's limb count; with
     * `rankSize` ≥ 0, also rank −= X·2^e (the new X) in the same pass.
     */
    private fun apply(x: IntArray, size: Int, m: Long, d: Long, r: IntArray, e: Int, rankSize: Int): Int {
        val inverse = inverse(d)
        var carry = 0L
        var borrowQ = 0L
        if (rankSize < 0) {
            for (j in 0..size) {
                val t = (x[j].toLong() and MASK) * m + carry
                carry = t ushr 32
                val l = (t and MASK) - borrowQ
                val q = (l.toInt() * inverse).toLong() and MASK
                borrowQ = ((q * d) ushr 32) + (l ushr 63)
                x[j] = q.toInt()
            }
            return trim(x, size + 1)
        }
        var shifted = 0L // X's bits shifted past the limb
        var borrow = 0L
        for (j in 0 until maxOf(size + 2, rankSize)) {
            val t = (x[j].toLong() and MASK) * m + carry
            carry = t ushr 32
            val l = (t and MASK) - borrowQ
            val q = (l.toInt() * inverse).toLong() and MASK
            borrowQ = ((q * d) ushr 32) + (l ushr 63)
            x[j] = q.toInt()
            val w = (q shl e) or shifted
            shifted = w ushr 32
            val v = (r[j].toLong() and MASK) - (w and MASK) - borrow
            r[j] = v.toInt()
            borrow = v ushr 63
        }
        return trim(x, size + 1)
    }

    /** The sign of X·2^e − rank. */
    private fun compareShifted(x: IntArray, size: Int, e: Int, r: IntArray, rankSize: Int): Int {
        for (j in maxOf(size, rankSize) downTo 0) {
            val high = (x[j].toLong() and MASK) shl e
            val low = if (j > 0) (x[j - 1].toLong() and MASK) ushr (32 - e) else 0L
            val c = java.lang.Long.compare((high or low) and MASK, r[j].toLong() and MASK)
            if (c != 0) return c
        }
        return 0
    }
}
