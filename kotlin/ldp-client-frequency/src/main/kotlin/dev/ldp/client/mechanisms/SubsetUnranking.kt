package dev.ldp.client.mechanisms

import dev.ldp.client.BitReader
import dev.ldp.client.ReportBits
import java.math.BigInteger
import java.util.concurrent.ConcurrentHashMap

/**
 * [ReportBits.uniformSubset] and [ReportBits.unrankSubset] for subset selection, faster from ranks of 2^62:
 * the same bits read and the same subsets (the tests compare them). The steps of the `bits` spec (at level
 * i, c stepped down while C(c, i) > rank; at a member, rank −= C(c, i)) on unsigned 64-bit limbs
 * (little-endian `LongArray`s).
 *
 * Each comparison C(c, i) > rank is decided in base-2 logarithms, log₂ C(c, i) = L(c) − L(i) − L(c − i)
 * from a table of L(c) = log₂ c!, against log₂ rank from the rank's top limbs, when they differ by more
 * than [delta] (a bound on both errors); near a tie it is made exactly. C(c, i) is kept exactly as its odd
 * part X and its twos e (C = X·2^e): a step's factor (c − i)/c (C(c − 1, i) = C(c, i)·(c − i)/c, and i/c
 * from a member at c to C(c − 1, i − 1)) adds its odd parts to a pending product of each side and its twos
 * to e, so X only meets multiplications and exact divisions by odd numbers (by the inverse modulo 2^64,
 * from the low limb). At a member one pass over the limbs applies the pending products (each below 2^32;
 * a pass without a member applies them when a factor would not fit) and subtracts X·2^e from the rank.
 */
public object SubsetUnranking {
    private const val MASK = 0xffffffffL
    private const val LN2 = 0.6931471805599453

    /** log₂(1 + j/1024) and 1024/(1024 + j), j ≤ 1024: [log2]'s table. */
    private val logMantissa = DoubleArray(1025) { Math.log1p(it / 1024.0) / LN2 }
    private val reciprocal = DoubleArray(1025) { 1024.0 / (1024 + it) }

    /** log₂ c! for c below its size (grown on demand). */
    @Volatile
    private var logFactorials = DoubleArray(1)

    /** The inverse modulo 2^64 of each odd number below its size (grown with [logFactorials]). */
    @Volatile
    private var inverses = LongArray(1)

    private val cache = ConcurrentHashMap<List<Any>, LongArray>()

    private fun logFactorials(n: Int): DoubleArray {
        logFactorials.let { if (it.size > n) return it }
        synchronized(this) {
            val old = logFactorials
            if (old.size > n) return old
            val table = old.copyOf(maxOf(n + 1, 2 * old.size))
            for (c in old.size until table.size) table[c] = table[c - 1] + Math.log(c.toDouble()) / LN2
            inverses = LongArray(table.size) { if (it and 1 == 1) inverse(it.toLong()) else 0L }
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

    /** The unsigned value of x as a double (its top 53 bits). */
    private fun unsigned(x: Long): Double = if (x >= 0) x.toDouble() else (x ushr 11).toDouble() * 2048.0

    /** log₂ of the nonzero value of `limbs[0, size)`, within 2^-40 + its magnitude·2^-50. */
    private fun log2(limbs: LongArray, size: Int): Double {
        val top = if (size > 1) unsigned(limbs[size - 1]) * 1.8446744073709552E19 + unsigned(limbs[size - 2]) else unsigned(limbs[0])
        val bits = java.lang.Double.doubleToRawLongBits(top)
        val exponent = (bits ushr 52).toInt() - 1023
        val j = ((bits ushr 42) and 1023).toInt()
        val mantissa = java.lang.Double.longBitsToDouble((bits and 0xfffffffffffffL) or 0x3ff0000000000000L) // in [1, 2)
        val u = mantissa * reciprocal[j] - 1 // |u| < 2^-10: log₂(1 + u) by its series to u³
        return exponent + 64.0 * maxOf(size - 2, 0) + logMantissa[j] + u * (1 - u * (0.5 - u / 3)) / LN2
    }

    /** The limbs of `rank` with room for [unrank] of a k-subset of [0, n). */
    internal fun limbs(rank: BigInteger, n: Int): LongArray {
        val out = LongArray((n ushr 6) + 5)
        val bytes = rank.toByteArray() // big-endian, with a sign byte at most
        for (j in bytes.indices) {
            val at = bytes.size - 1 - j // byte `at` of the value, from the least significant
            if (at < 8 * out.size) out[at ushr 3] = out[at ushr 3] or ((bytes[j].toLong() and 0xff) shl (8 * (at and 7)))
        }
        return out
    }

    /** The limbs of `key`'s value (as [limbs]), made once (at most 64 kept: past that the cache starts afresh); not to be written. */
    private fun cached(key: List<Any>, n: Int, value: () -> BigInteger): LongArray {
        cache[key]?.let { return it }
        if (cache.size >= 64) cache.clear()
        return limbs(value(), n).also { cache[key] = it }
    }

    /** [ReportBits.uniformSubset]: the same bits read, the same subset. */
    @JvmStatic
    public fun uniformSubset(n: Int, k: Int, reader: BitReader): IntArray {
        if (k < 0 || k > n) return ReportBits.uniformSubset(n, k, reader) // its refusal
        val total = ReportBits.binomial(n, k)
        if (total.bitLength() <= 62) return ReportBits.uniformSubset(n, k, reader)
        return unrank(synchronized(reader) { uniform(total, n, k, reader) }, n, k)
    }

    /** [ReportBits.unrankSubset]: the same subset. */
    @JvmStatic
    public fun unrankSubset(rank: BigInteger, n: Int, k: Int): IntArray {
        if (k < 0 || k > n || rank.signum() < 0 || rank >= ReportBits.binomial(n, k)) return ReportBits.unrankSubset(rank, n, k) // its refusal
        return unrank(limbs(rank, n), n, k)
    }

    private fun trim(limbs: LongArray, size: Int): Int {
        var s = size
        while (s > 0 && limbs[s - 1] == 0L) s--
        return s
    }

    /** The inverse of odd d modulo 2^64. */
    private fun inverse(d: Long): Long {
        var inv = d // correct to 3 bits; each step doubles them
        repeat(5) { inv *= 2 - d * inv }
        return inv
    }

    /** The high 64 bits of x·m (x unsigned, 0 ≤ m < 2^32). */
    private fun high(x: Long, m: Long): Long = ((x ushr 32) * m + (((x and MASK) * m) ushr 32)) ushr 32

    /** The borrow out of a − b − borrowIn = v (unsigned; Hacker's Delight 2-13). */
    private fun borrowOf(a: Long, b: Long, v: Long): Long = ((a.inv() and b) or ((a xor b).inv() and v)) ushr 63

    /**
     * The rank's limbs for C(n, k) ≥ 2^62 outcomes (the walk of [ReportBits.uniform] of a [BigInteger]: the
     * same bits), with room for [unrank]. The caller holds the reader's monitor.
     */
    private fun uniform(total: BigInteger, n: Int, k: Int, reader: BitReader): LongArray {
        val outcomes = cached(listOf("C", n, k), n) { total }
        val size = ((total.bitLength() + 63) ushr 6) + 1
        val zeros = if (total.bitCount() == 1) total.bitLength() - 2 else total.bitLength() - 1
        val d = LongArray(outcomes.size)
        val rest = LongArray(outcomes.size) // the digits' remainder after the leading zeros: 2^zeros
        rest[zeros ushr 6] = 1L shl (zeros and 63)
        // the first `zeros` bits, most significant first, at most 32 at a time
        var left = zeros
        while (left > 0) {
            val take = if (left and 31 == 0) 32 else left and 31
            left -= take
            d[left ushr 6] = d[left ushr 6] or (reader.bits(take) shl (left and 63))
        }
        while (true) {
            shiftUp(d, size, reader.bit().toLong())
            shiftUp(rest, size, 0L)
            if (compare(rest, outcomes, size) >= 0) { // a digit 1: the level's leaves are the outcomes
                subtract(rest, outcomes, size)
                if (compare(d, outcomes, size) < 0) return d
                subtract(d, outcomes, size)
            }
        }
    }

    /** x = 2x + bit over `size` limbs. */
    private fun shiftUp(x: LongArray, size: Int, bit: Long) {
        var carry = bit
        for (j in 0 until size) {
            val v = x[j]
            x[j] = (v shl 1) or carry
            carry = v ushr 63
        }
    }

    private fun compare(x: LongArray, y: LongArray, size: Int): Int {
        for (j in size - 1 downTo 0) {
            val c = java.lang.Long.compareUnsigned(x[j], y[j])
            if (c != 0) return c
        }
        return 0
    }

    /** x −= y over `size` limbs (y ≤ x). */
    private fun subtract(x: LongArray, y: LongArray, size: Int) {
        var borrow = 0L
        for (j in 0 until size) {
            val a = x[j]
            val v = a - y[j] - borrow
            borrow = borrowOf(a, y[j], v)
            x[j] = v
        }
    }

    /**
     * The k-subset of [0, n) of colex rank `rank` (its limbs as [limbs] makes them; overwritten), in
     * increasing order; the rank is below C(n, k).
     */
    internal fun unrank(rank: LongArray, n: Int, k: Int): IntArray {
        val members = IntArray(k)
        val r = rank
        var rs = trim(r, r.size)
        if (rs == 0) { // rank 0: C(c, i) > 0 down to c = i − 1, at every level
            for (i in 0 until k) members[i] = i
            return members
        }
        val lg = logFactorials(n)
        val inverses = inverses
        val delta = delta(n)
        val top = ReportBits.binomial(n - 1, k) // C(c, i) at c = n − 1, i = k (at least 1: 0 < rank < C(n, k))
        var e = top.lowestSetBit
        val x = cached(listOf("odd", n, k), n) { top.shiftRight(e) }.copyOf() // X = C's odd part
        var xs = trim(x, x.size)
        var c = n - 1
        var m = 1L // the pending odd factors of X: X·m/d is C(c, i)'s odd part; each below 2^32
        var d = 1L
        var dInverse = 1L // d's inverse modulo 2^64
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
                    xs = apply(x, xs, m, d, dInverse, r, 0, -1)
                    m = 1L
                    d = 1L
                    dInverse = 1L
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
                    xs = apply(x, xs, m, d, dInverse, r, 0, -1)
                    m = 1L
                    d = 1L
                    dInverse = 1L
                }
                m *= ao
                d *= co
                dInverse *= inverses[co.toInt()]
                c--
            }
            members[i - 1] = c
            xs = apply(x, xs, m, d, dInverse, r, e, rs) // X = C(c, i)'s odd part; rank −= X·2^e
            rs = trim(r, rs)
            // C(c − 1, i − 1) = C(c, i)·i/c
            val ti = Integer.numberOfTrailingZeros(i)
            val tc = Integer.numberOfTrailingZeros(c)
            e += ti - tc
            m = (i ushr ti).toLong()
            d = (c ushr tc).toLong()
            dInverse = inverses[d.toInt()]
            c--
            i--
        }
        return members
    }

    /**
     * X = X·m/d (0 < m < 2^32, odd d < 2^32 of the given inverse modulo 2^64, the quotient exact) in one pass from the low limb, returning X's
     * limb count; with `rankSize` ≥ 0, also rank −= X·2^e (the new X; e < 63) in the same pass.
     */
    private fun apply(x: LongArray, size: Int, m: Long, d: Long, inverse: Long, r: LongArray, e: Int, rankSize: Int): Int {
        val length = if (rankSize < 0) size + 1 else maxOf(size + 2, rankSize)
        var carry = 0L // the product's high limb so far
        var borrowQ = 0L // the quotient's: what q·d took past the limb
        var shifted = 0L // X's bits shifted past the limb
        var borrow = 0L
        for (j in 0 until length) {
            val xj = x[j]
            val product = xj * m + carry
            carry = high(xj, m) + (if (java.lang.Long.compareUnsigned(product, carry) < 0) 1L else 0L)
            val l = product - borrowQ
            val q = l * inverse
            borrowQ = high(q, d) + (if (java.lang.Long.compareUnsigned(product, borrowQ) < 0) 1L else 0L)
            x[j] = q
            if (rankSize >= 0) {
                val w = (q shl e) or shifted
                shifted = (q ushr 1) ushr (63 - e)
                val a = r[j]
                val v = a - w - borrow
                borrow = borrowOf(a, w, v)
                r[j] = v
            }
        }
        return trim(x, size + 1)
    }

    /** The sign of X·2^e − rank. */
    private fun compareShifted(x: LongArray, size: Int, e: Int, r: LongArray, rankSize: Int): Int {
        for (j in maxOf(size, rankSize) downTo 0) {
            val low = if (j > 0) (x[j - 1] ushr 1) ushr (63 - e) else 0L
            val c = java.lang.Long.compareUnsigned((x[j] shl e) or low, r[j])
            if (c != 0) return c
        }
        return 0
    }
}
