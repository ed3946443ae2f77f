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
 * C(c, i) is kept exactly as its odd part X and its twos e (C = X·2^e): a step's factor (c − i)/c
 * (C(c − 1, i) = C(c, i)·(c − i)/c, and i/c from a member at c to C(c − 1, i − 1)) adds its odd parts to a
 * pending product of each side and its twos to e, so X only meets multiplications and exact divisions by
 * odd numbers (by the inverse modulo 2^64, from the low limb).
 *
 * The comparisons C(c, i) > rank are made in doubles while certain: C(c, i) tracked step by step from X's
 * top limbs, the rank from its top limbs and, past each member, less C(c, i), each with a bound on its
 * error; a comparison within the bounds of a tie is made exactly. So several members are decided ahead of
 * the limbs, and one pass over the limbs applies up to [STAGES] stages, each the pending products up to a
 * member (rank −= X·2^e) or up to where a factor would not fit: the stages' chains of carries are
 * independent, so the CPU overlaps them. The pending products are below 2^62 where the runtime has
 * `Math.multiplyHigh` (Java 9, Android API 31; [WideStages]), else below 2^32 with the high products from
 * 32-bit halves (Android API 26).
 */
public object SubsetUnranking {
    private const val MASK = 0xffffffffL
    internal const val STAGES = 8
    private const val TWO_49 = 1.7763568394002505E-15 // 2^-49
    private const val TWO_50 = 8.881784197001252E-16 // 2^-50
    private const val TWO_52 = 2.220446049250313E-16 // 2^-52
    private const val TINY = 1.1830521861667747E-271 // 2^-900: doubles past it are not compared

    /** Whether `Math.multiplyHigh` exists here (it is not on Android before API 31). */
    private val hasMultiplyHigh: Boolean = try {
        Math::class.java.getMethod("multiplyHigh", java.lang.Long.TYPE, java.lang.Long.TYPE)
        true
    } catch (e: NoSuchMethodException) {
        false
    }

    /** Whether the pending products go up to 2^62 ([WideStages]) rather than 2^32 (tests turn it off). */
    @Volatile
    internal var wide: Boolean = hasMultiplyHigh

    /** 1/c for c below its size, rounded (grown on demand). */
    @Volatile
    private var reciprocals = DoubleArray(1)

    /** The inverse modulo 2^64 of each odd number below its size (grown with [reciprocals]). */
    @Volatile
    private var inverses = LongArray(1)

    private val cache = ConcurrentHashMap<Long, Plan>()

    private fun reciprocals(n: Int): DoubleArray {
        reciprocals.let { if (it.size > n) return it }
        synchronized(this) {
            val old = reciprocals
            if (old.size > n) return old
            val size = maxOf(n + 1, 2 * old.size)
            inverses = LongArray(size) { if (it and 1 == 1) inverse(it.toLong()) else 0L }
            return DoubleArray(size) { 1.0 / it }.also { reciprocals = it }
        }
    }

    /** The unsigned value of x as a double (its top 53 bits). */
    private fun unsigned(x: Long): Double = if (x >= 0) x.toDouble() else (x ushr 11).toDouble() * 2048.0

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

    /**
     * What the draws and unrankings of k-subsets of [0, n) share: C(n, k) (`total`, and its limbs), and
     * C(n − 1, k) = X·2^e (X's limbs, not to be written, and e).
     */
    private class Plan(val n: Int, val k: Int) {
        val total: BigInteger = ReportBits.binomial(n, k)
        val outcomes: LongArray = limbs(total, n)
        private val top = ReportBits.binomial(n - 1, k)
        val twos: Int = maxOf(top.lowestSetBit, 0) // C(n − 1, k) = 0 when n = k
        val odd: LongArray = limbs(top.shiftRight(twos), n)
    }

    /** The last plan made (most encoders draw one size). */
    @Volatile
    private var lastPlan: Plan? = null

    /** The plan of (n, k), made once (at most 64 kept: past that the cache starts afresh). */
    private fun plan(n: Int, k: Int): Plan {
        lastPlan?.let { if (it.n == n && it.k == k) return it }
        val key = (n.toLong() shl 32) or k.toLong()
        val plan = cache[key] ?: Plan(n, k).also {
            if (cache.size >= 64) cache.clear()
            cache[key] = it
        }
        lastPlan = plan
        return plan
    }

    /** [ReportBits.uniformSubset]: the same bits read, the same subset. */
    @JvmStatic
    public fun uniformSubset(n: Int, k: Int, reader: BitReader): IntArray {
        if (k < 0 || k > n) return ReportBits.uniformSubset(n, k, reader) // its refusal
        val plan = plan(n, k)
        if (plan.total.bitLength() <= 62) return ReportBits.uniformSubset(n, k, reader)
        return unrank(synchronized(reader) { uniform(plan, reader) }, plan)
    }

    /** [ReportBits.unrankSubset]: the same subset. */
    @JvmStatic
    public fun unrankSubset(rank: BigInteger, n: Int, k: Int): IntArray {
        if (k < 0 || k > n || rank.signum() < 0 || rank >= plan(n, k).total) return ReportBits.unrankSubset(rank, n, k) // its refusal
        if (rank.signum() == 0) return IntArray(k) { it }
        return unrank(limbs(rank, n), plan(n, k))
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

    /**
     * The rank's limbs for C(n, k) ≥ 2^62 outcomes (the walk of [ReportBits.uniform] of a [BigInteger]: the
     * same bits), with room for [unrank]. The caller holds the reader's monitor.
     */
    private fun uniform(plan: Plan, reader: BitReader): LongArray {
        val total = plan.total
        val outcomes = plan.outcomes
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
    internal fun unrank(rank: LongArray, n: Int, k: Int): IntArray = unrank(rank, plan(n, k))

    /** [unrank] with the plan of its (n, k) (C(n, k) ≥ 1). */
    private fun unrank(rank: LongArray, plan: Plan): IntArray {
        val n = plan.n
        val k = plan.k
        val members = IntArray(k)
        val r = rank
        var rs = trim(r, r.size)
        if (rs == 0) { // rank 0: C(c, i) > 0 down to c = i − 1, at every level
            for (i in 0 until k) members[i] = i
            return members
        }
        val recip = reciprocals(n)
        val inverses = inverses
        val wide = wide
        val budget = if (wide) 66 else 96 // a product of factors with more than 128 − budget bits would not fit
        // C(c, i) at c = n − 1, i = k (at least 1: 0 < rank < C(n, k))
        var e = plan.twos
        val x = plan.odd.copyOf() // X = C's odd part
        var xs = trim(x, x.size)
        var c = n - 1
        var m = 1L // the pending odd factors of X: X·m/d is C(c, i)'s odd part
        var d = 1L
        var dInverse = 1L // d's inverse modulo 2^64
        var i = k
        val stages = Stages()
        while (i > 0) {
            if (rs == 0) { // rank 0: C(c, i) > 0 down to c = i − 1, at every level
                while (i > 0) {
                    i--
                    members[i] = i
                }
                break
            }
            // a batch: steps and members decided in doubles while certain, up to STAGES stages of factors. The
            // doubles are values·2^-scale: C(c, i) ≤ X·2^(e + 62) ≤ 2^962, and rank < C(c + 1, i) ≤ n·C(c, i) (c + 1
            // the level's start, or stepped past); a rank far below C(c, i) (64·(xs − rs) + e ≥ 1700, only past
            // n ≈ 1,700) would fall below the doubles' normal range: then the comparison is made exactly. Each
            // multiplication of binom adds at most 2^-50 to its relative error, at most c of them
            val scale = maxOf(0, 64 * xs + e - 900)
            val rho = TWO_49 + TWO_50 * c // a bound on |binom − C(c, i)|/binom throughout the batch
            // what a member adds to rankError, times binom: |binom − C(c, i)| and left's rounding (|left| ≤ rankApprox ≤
            // rank + rankError < C(c + 1, i) + rankError ≤ (c + 1)·C(c, i) + rankError), 1% more for the sums' roundings
            val grow = (rho * 1.01 + (c + 2) * TWO_52) * 1.01
            var rankApprox = approximate(r, rs, -scale) // within 2^-51 of the rank (relative)
            var rankError = rankApprox * TWO_50 // a bound on |rankApprox − rank|
            var binom = approximate(x, xs, e - scale) * m / d // C(c, i), within 2^-50
            // the limbs of C(c, i) (< 2^(exponent + 2)), every C(c', i') of the batch below it, so every stage's X too
            val bound = maxOf(Math.getExponent(binom) + scale + 2 + 63, 64) ushr 6
            var above = (rankApprox + rankError) * (1 + 3 * rho) // beyond it C(c, i) > rank certainly
            var below = (rankApprox - rankError) * (1 - 3 * rho) // within it C(c, i) ≤ rank certainly
            var count = 0
            var certain = 64 * (xs - rs) + e < 1700
            while (certain) {
                if (binom > above && c > i) { // C(c, i) > rank: C(c − 1, i) = C(c, i)·(c − i)/c
                    val a = c - i
                    val ta = Integer.numberOfTrailingZeros(a)
                    val tc = Integer.numberOfTrailingZeros(c)
                    val ao = (a ushr ta).toLong()
                    val co = (c ushr tc).toLong()
                    if (java.lang.Long.numberOfLeadingZeros(m) + java.lang.Long.numberOfLeadingZeros(ao) < budget ||
                        java.lang.Long.numberOfLeadingZeros(d) + java.lang.Long.numberOfLeadingZeros(co) < budget
                    ) { // the factors so far make a stage
                        stages.set(count++, m, d, dInverse, 0, 0L)
                        m = 1L
                        d = 1L
                        dInverse = 1L
                        if (count == STAGES) break
                    }
                    e += ta - tc
                    m *= ao
                    d *= co
                    dInverse *= inverses[co.toInt()]
                    binom *= a * recip[c]
                    c--
                } else if (binom <= below && below > TINY) { // C(c, i) ≤ rank: a member, rank −= C(c, i)
                    members[i - 1] = c
                    stages.set(count++, m, d, dInverse, e, -1L)
                    // |left − (rank − C(c, i))| ≤ rankError + |binom − C(c, i)| + the rounding of left (0 ≤ left < rankApprox)
                    rankApprox -= binom
                    rankError = rankError * (1 + TWO_50) + binom * grow // 2^-50: left's rounding from rankError, the sums'
                    above = (rankApprox + rankError) * (1 + 3 * rho)
                    below = (rankApprox - rankError) * (1 - 3 * rho)
                    // C(c − 1, i − 1) = C(c, i)·i/c
                    val ti = Integer.numberOfTrailingZeros(i)
                    val tc = Integer.numberOfTrailingZeros(c)
                    e += ti - tc
                    m = (i ushr ti).toLong()
                    d = (c ushr tc).toLong()
                    dInverse = inverses[d.toInt()]
                    binom *= i * recip[c]
                    c--
                    i--
                    if (i == 0 || count == STAGES) break
                } else {
                    certain = false
                    break
                }
            }
            if (count > 0) {
                xs = stages.apply(count, wide, x, xs, r, rs, bound)
                rs = trim(r, rs)
            }
            if (certain || i == 0 || rs == 0) continue
            // near a tie: this level's comparison exactly (C(c, i) > rank leaves c > i: rank ≥ 1 = C(i, i))
            stages.set(0, m, d, dInverse, 0, 0L)
            xs = stages.apply(1, wide, x, xs, r, rs, xs + 2) // X·m/d < X·2^62
            m = 1L
            d = 1L
            dInverse = 1L
            val member = compareShifted(x, xs, e, r, rs) <= 0
            val a = if (member) i else c - i // C(c − 1, i) = C(c, i)·(c − i)/c
            if (member) { // rank −= X·2^e, and C(c − 1, i − 1) = C(c, i)·i/c
                members[i - 1] = c
                stages.set(0, 1L, 1L, 1L, e, -1L)
                xs = stages.apply(1, wide, x, xs, r, rs, xs)
                rs = trim(r, rs)
                i--
            }
            val ta = Integer.numberOfTrailingZeros(a)
            val tc = Integer.numberOfTrailingZeros(c)
            e += ta - tc
            m = (a ushr ta).toLong()
            d = (c ushr tc).toLong()
            dInverse = inverses[d.toInt()]
            c--
        }
        return members
    }

    /**
     * The value of `limbs[0, size)` (nonzero) times 2^shift (−1022 < shift + 64·(size − 2) < 1024) as a
     * double, within 2^-51 of it (relative): its top 53 bits (from its top two limbs) and the sum's rounding.
     */
    private fun approximate(limbs: LongArray, size: Int, shift: Int): Double {
        val top = if (size > 1) unsigned(limbs[size - 1]) * 1.8446744073709552E19 + unsigned(limbs[size - 2]) else unsigned(limbs[0])
        return top * java.lang.Double.longBitsToDouble((shift + 64L * maxOf(size - 2, 0) + 1023) shl 52)
    }

    /**
     * Up to [STAGES] stages' factors, applied in one pass over the limbs: stage s makes X = X·m/d (m > 0 and
     * odd d below 2^32, or 2^62 when wide; d's inverse modulo 2^64; the quotient exact), then rank −= X·2^e
     * (e < 63) when it is a member's (`subtract` all ones).
     */
    internal class Stages {
        val m = LongArray(STAGES)
        val d = LongArray(STAGES)
        val inverse = LongArray(STAGES)
        val e = IntArray(STAGES)
        val subtract = LongArray(STAGES)

        fun set(s: Int, m: Long, d: Long, inverse: Long, e: Int, subtract: Long) {
            this.m[s] = m
            this.d[s] = d
            this.inverse[s] = inverse
            this.e[s] = e
            this.subtract[s] = subtract
        }

        /**
         * Stages 0 until `count` (the rest made the identity) on X (`size` limbs) and the rank (`rankSize`),
         * where `bound` limbs hold every stage's X; X's limb count after. The limbs are computed modulo
         * 2^(64·length) only: an exact quotient that fits is right from the low limbs alone.
         */
        fun apply(count: Int, wide: Boolean, x: LongArray, size: Int, r: LongArray, rankSize: Int, bound: Int): Int {
            for (s in count until STAGES) set(s, 1L, 1L, 1L, 0, 0L)
            val length = maxOf(bound, rankSize)
            if (wide) WideStages.apply(this, x, r, length) else narrow(x, r, length)
            for (j in length until size) x[j] = 0L
            return trim(x, length)
        }

        /** The pass with factors below 2^32 (high products from 32-bit halves). */
        private fun narrow(x: LongArray, r: LongArray, length: Int) = passStages(this, x, r, length) { a, b -> high(a, b) }
    }

    /** The carry out of a + b = v (unsigned). */
    internal fun carryOf(a: Long, b: Long, v: Long): Long = ((a and b) or ((a or b) and v.inv())) ushr 63

    /** The borrow out of a − b − borrowIn = v (unsigned; Hacker's Delight 2-13). */
    internal fun borrowOf(a: Long, b: Long, v: Long): Long = ((a.inv() and b) or ((a xor b).inv() and v)) ushr 63

    /** The high 64 bits of x·m (x unsigned, 0 ≤ m < 2^32). */
    private fun high(x: Long, m: Long): Long = ((x ushr 32) * m + (((x and MASK) * m) ushr 32)) ushr 32

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

/**
 * [SubsetUnranking]'s pass with factors below 2^62, its high products by `Math.multiplyHigh`: loaded only
 * where that exists (Java 9, Android API 31).
 */
private object WideStages {
    /** The high 64 bits of x·m (x unsigned, 0 ≤ m < 2^63). */
    private fun high(x: Long, m: Long): Long = Math.multiplyHigh(x, m) + ((x shr 63) and m)

    fun apply(stages: SubsetUnranking.Stages, x: LongArray, r: LongArray, length: Int) =
        passStages(stages, x, r, length) { a, b -> high(a, b) }
}

/**
 * One pass of [SubsetUnranking.Stages] over the limbs: each stage's exact division chain on X and the rank less
 * its w, the eight chains independent. Written once, inlined with each pass's `high` (the high 64 bits of x·m):
 * the 32-bit halves' ([SubsetUnranking.Stages]) or `Math.multiplyHigh`'s ([WideStages]).
 */
private inline fun passStages(
    stages: SubsetUnranking.Stages,
    x: LongArray,
    r: LongArray,
    length: Int,
    high: (Long, Long) -> Long,
) {
    val m0 = stages.m[0]; val m1 = stages.m[1]; val m2 = stages.m[2]; val m3 = stages.m[3]; val m4 = stages.m[4]; val m5 = stages.m[5]; val m6 = stages.m[6]; val m7 = stages.m[7]
    val d0 = stages.d[0]; val d1 = stages.d[1]; val d2 = stages.d[2]; val d3 = stages.d[3]; val d4 = stages.d[4]; val d5 = stages.d[5]; val d6 = stages.d[6]; val d7 = stages.d[7]
    val v0 = stages.inverse[0]; val v1 = stages.inverse[1]; val v2 = stages.inverse[2]; val v3 = stages.inverse[3]; val v4 = stages.inverse[4]; val v5 = stages.inverse[5]; val v6 = stages.inverse[6]; val v7 = stages.inverse[7]
    val e0 = stages.e[0]; val e1 = stages.e[1]; val e2 = stages.e[2]; val e3 = stages.e[3]; val e4 = stages.e[4]; val e5 = stages.e[5]; val e6 = stages.e[6]; val e7 = stages.e[7]
    val s0 = stages.subtract[0]; val s1 = stages.subtract[1]; val s2 = stages.subtract[2]; val s3 = stages.subtract[3]; val s4 = stages.subtract[4]; val s5 = stages.subtract[5]; val s6 = stages.subtract[6]; val s7 = stages.subtract[7]
    var carry0 = 0L; var carry1 = 0L; var carry2 = 0L; var carry3 = 0L; var carry4 = 0L; var carry5 = 0L; var carry6 = 0L; var carry7 = 0L
    var borrowQ0 = 0L; var borrowQ1 = 0L; var borrowQ2 = 0L; var borrowQ3 = 0L; var borrowQ4 = 0L; var borrowQ5 = 0L; var borrowQ6 = 0L; var borrowQ7 = 0L
    var shifted0 = 0L; var shifted1 = 0L; var shifted2 = 0L; var shifted3 = 0L; var shifted4 = 0L; var shifted5 = 0L; var shifted6 = 0L; var shifted7 = 0L
    var borrow = 0L // into the rank's limb: 0 to the stages' count
    for (j in 0 until length) {
        var q = x[j]
        var p: Long
        p = q * m0 + carry0
        carry0 = high(q, m0) + (if (java.lang.Long.compareUnsigned(p, carry0) < 0) 1L else 0L)
        q = (p - borrowQ0) * v0
        borrowQ0 = high(q, d0) + (if (java.lang.Long.compareUnsigned(p, borrowQ0) < 0) 1L else 0L)
        val w0 = ((q shl e0) or shifted0) and s0
        shifted0 = (q ushr 1) ushr (63 - e0)
        p = q * m1 + carry1
        carry1 = high(q, m1) + (if (java.lang.Long.compareUnsigned(p, carry1) < 0) 1L else 0L)
        q = (p - borrowQ1) * v1
        borrowQ1 = high(q, d1) + (if (java.lang.Long.compareUnsigned(p, borrowQ1) < 0) 1L else 0L)
        val w1 = ((q shl e1) or shifted1) and s1
        shifted1 = (q ushr 1) ushr (63 - e1)
        p = q * m2 + carry2
        carry2 = high(q, m2) + (if (java.lang.Long.compareUnsigned(p, carry2) < 0) 1L else 0L)
        q = (p - borrowQ2) * v2
        borrowQ2 = high(q, d2) + (if (java.lang.Long.compareUnsigned(p, borrowQ2) < 0) 1L else 0L)
        val w2 = ((q shl e2) or shifted2) and s2
        shifted2 = (q ushr 1) ushr (63 - e2)
        p = q * m3 + carry3
        carry3 = high(q, m3) + (if (java.lang.Long.compareUnsigned(p, carry3) < 0) 1L else 0L)
        q = (p - borrowQ3) * v3
        borrowQ3 = high(q, d3) + (if (java.lang.Long.compareUnsigned(p, borrowQ3) < 0) 1L else 0L)
        val w3 = ((q shl e3) or shifted3) and s3
        shifted3 = (q ushr 1) ushr (63 - e3)
        p = q * m4 + carry4
        carry4 = high(q, m4) + (if (java.lang.Long.compareUnsigned(p, carry4) < 0) 1L else 0L)
        q = (p - borrowQ4) * v4
        borrowQ4 = high(q, d4) + (if (java.lang.Long.compareUnsigned(p, borrowQ4) < 0) 1L else 0L)
        val w4 = ((q shl e4) or shifted4) and s4
        shifted4 = (q ushr 1) ushr (63 - e4)
        p = q * m5 + carry5
        carry5 = high(q, m5) + (if (java.lang.Long.compareUnsigned(p, carry5) < 0) 1L else 0L)
        q = (p - borrowQ5) * v5
        borrowQ5 = high(q, d5) + (if (java.lang.Long.compareUnsigned(p, borrowQ5) < 0) 1L else 0L)
        val w5 = ((q shl e5) or shifted5) and s5
        shifted5 = (q ushr 1) ushr (63 - e5)
        p = q * m6 + carry6
        carry6 = high(q, m6) + (if (java.lang.Long.compareUnsigned(p, carry6) < 0) 1L else 0L)
        q = (p - borrowQ6) * v6
        borrowQ6 = high(q, d6) + (if (java.lang.Long.compareUnsigned(p, borrowQ6) < 0) 1L else 0L)
        val w6 = ((q shl e6) or shifted6) and s6
        shifted6 = (q ushr 1) ushr (63 - e6)
        p = q * m7 + carry7
        carry7 = high(q, m7) + (if (java.lang.Long.compareUnsigned(p, carry7) < 0) 1L else 0L)
        q = (p - borrowQ7) * v7
        borrowQ7 = high(q, d7) + (if (java.lang.Long.compareUnsigned(p, borrowQ7) < 0) 1L else 0L)
        val w7 = ((q shl e7) or shifted7) and s7
        shifted7 = (q ushr 1) ushr (63 - e7)
        x[j] = q
        // rank −= the stages' w (their sum: low + 2^64·out), with the borrow in; carries without branches
        var sum = borrow
        var out = 0L
        val t0 = sum + w0
        out += SubsetUnranking.carryOf(sum, w0, t0)
        sum = t0
        val t1 = sum + w1
        out += SubsetUnranking.carryOf(sum, w1, t1)
        sum = t1
        val t2 = sum + w2
        out += SubsetUnranking.carryOf(sum, w2, t2)
        sum = t2
        val t3 = sum + w3
        out += SubsetUnranking.carryOf(sum, w3, t3)
        sum = t3
        val t4 = sum + w4
        out += SubsetUnranking.carryOf(sum, w4, t4)
        sum = t4
        val t5 = sum + w5
        out += SubsetUnranking.carryOf(sum, w5, t5)
        sum = t5
        val t6 = sum + w6
        out += SubsetUnranking.carryOf(sum, w6, t6)
        sum = t6
        val t7 = sum + w7
        out += SubsetUnranking.carryOf(sum, w7, t7)
        sum = t7
        val a = r[j]
        val v = a - sum
        r[j] = v
        borrow = out + SubsetUnranking.borrowOf(a, sum, v)
    }
}
