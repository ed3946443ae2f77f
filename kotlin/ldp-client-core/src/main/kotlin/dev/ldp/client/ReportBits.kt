package dev.ldp.client

import java.math.BigInteger

/**
 * Uniform bits from a byte source, most significant bit of each byte first (the port of Python's
 * `ldp.client.report_bits.BitReader`; tests/vectors/README.md, "`bits`").
 *
 * A byte is read (`source.read(chunk)`, then served in order) only when a bit is needed and none is
 * left; the bits a draw leaves serve the next draw. One reader per byte source ([BitReader.of]), kept
 * across draws and reports. [bitsRead] counts the bits handed out. Not thread-safe by itself: every
 * sampler of [ReportBits] holds the reader's monitor (`synchronized(reader)`) for a whole draw.
 *
 * @param chunk bytes asked of the source at a time: 1 for a fixed test stream (so exactly the bytes the
 *   draws need are read, in program order with any other reads of the source), more for a pooled CSPRNG.
 */
public class BitReader @JvmOverloads constructor(private val source: ByteSource, private val chunk: Int = 1) {
    private var buffer = EMPTY
    private var offset = 0
    private var word = 0L // the bits not served yet are its low `left` bits
    private var left = 0

    /** Bits handed out so far. */
    public var bitsRead: Long = 0
        private set

    init {
        if (chunk < 1) fail("chunk must be at least 1 byte, got $chunk")
    }

    /** The next bit (0 or 1). */
    public fun bit(): Int {
        if (left == 0) refill()
        left--
        bitsRead++
        return ((word ushr left) and 1L).toInt()
    }

    private fun refill() {
        if (offset == buffer.size) {
            buffer = source.read(chunk)
            offset = 0
            if (buffer.isEmpty()) fail("the byte source returned no bytes")
        }
        if (buffer.size - offset >= 8) { // eight bytes big-endian: served most significant first, as byte by byte
            var w = 0L
            for (i in 0 until 8) w = (w shl 8) or (buffer[offset + i].toLong() and 0xff)
            java.util.Arrays.fill(buffer, offset, offset + 8, 0)
            offset += 8
            word = w
            left = 64
        } else {
            word = buffer[offset].toLong() and 0xff
            buffer[offset] = 0
            offset++
            left = 8
        }
    }

    public companion object {
        private val EMPTY = ByteArray(0)

        /** Bytes a reader of a [PooledSource] takes from its pool at a time. */
        public const val POOLED_CHUNK: Int = 64

        private val readers = java.util.Collections.synchronizedMap(java.util.WeakHashMap<ByteSource, BitReader>())

        /**
         * The reader of `source`: one per source, so leftover bits carry across draws and reports. A
         * [PooledSource] keeps its own (reading [POOLED_CHUNK] pooled bytes at a time); any other source
         * (a [FixedSource] of a test, a caller's source) gets one that reads one byte at a time, kept
         * while the source lives (identity, weakly).
         */
        @JvmStatic
        public fun of(source: ByteSource): BitReader {
            if (source is PooledSource) return source.bitReader
            synchronized(readers) {
                return readers.getOrPut(source) { BitReader(source, 1) }
            }
        }
    }
}

/** A bounded least-recently-used cache (the tables of [ReportBits], as Python's `lru_cache`). */
internal class TableCache<K, V>(private val capacity: Int) {
    private val map = object : java.util.LinkedHashMap<K, V>(16, 0.75f, true) {
        override fun removeEldestEntry(eldest: MutableMap.MutableEntry<K, V>?): Boolean = size > capacity
    }

    @Synchronized
    fun get(key: K, make: (K) -> V): V = map[key] ?: make(key).also { map[key] = it }
}

/**
 * A discrete distribution drawn by the Knuth–Yao walk, reading a bit only while the outcome is
 * undecided (the port of Python's `KnuthYao`).
 *
 * Group g has `counts[g]` outcomes, each with the exact probability `probabilities[g]`; the
 * probabilities must sum to exactly 1 over all outcomes. Level j of the walk's tree has one leaf for
 * each outcome whose probability has binary digit j equal to 1, the groups in order and each group's
 * outcomes in order. The walk keeps d, the index of its node among the level's nodes: d = 2d + (next
 * bit); the node is the leaf of (group g, member d′) when d falls in g's leaves, else it is internal and
 * d −= the level's leaf count. Each outcome comes with probability exactly its own; the expected number
 * of bits read is below H + 2. A distribution with one outcome reads nothing. Levels are computed on
 * first use and kept. d stays below twice the number of outcomes, so walks over fewer than 2^61 outcomes
 * run in [Long] arithmetic.
 */
public class KnuthYao(counts: List<BigInteger>, probabilities: List<Fraction>) {
    /** An outcome: member [member] of group [group] (the index in the list as given). */
    public data class Outcome(val group: Int, val member: BigInteger)

    private class Level(
        val groups: IntArray, // the groups with a leaf at this level, in order
        val ends: LongArray, // small: cumulative leaf counts (ends[i] = leaves of groups[0..i])
        val bigEnds: Array<BigInteger>, // large: the same
    ) {
        val total: Long = if (ends.isEmpty()) 0L else ends[ends.size - 1]
        val bigTotal: BigInteger = if (bigEnds.isEmpty()) BigInteger.ZERO else bigEnds[bigEnds.size - 1]
    }

    private val certainGroup: Int // the group of the only outcome, or -1
    private val liveIndex: IntArray
    private val liveCount: Array<BigInteger>
    private val den: Array<BigInteger>
    private val rest: Array<BigInteger> // the numerators of the digits not yet turned into levels
    private val small: Boolean

    @Volatile
    private var levels: Array<Level> = emptyArray()

    init {
        if (counts.size != probabilities.size) fail("${counts.size} counts for ${probabilities.size} probabilities")
        var total = Fraction.ZERO
        val live = ArrayList<Int>()
        for (g in counts.indices) {
            val count = counts[g]
            val p = probabilities[g]
            if (count.signum() < 0 || p < Fraction.ZERO || p > Fraction.ONE) fail("group $g: count $count and probability $p out of range")
            total += Fraction.of(count * p.num, p.den)
            if (count.signum() != 0 && p.num.signum() != 0) live.add(g)
        }
        if (total != Fraction.ONE) fail("the outcomes' probabilities sum to $total, not 1")
        certainGroup = if (live.size == 1 && counts[live[0]] == BigInteger.ONE) live[0] else -1
        // every walked probability is below 1: an outcome of probability 1 is the only one (certain)
        val walked = if (certainGroup >= 0) emptyList() else live
        liveIndex = walked.toIntArray()
        liveCount = Array(walked.size) { counts[walked[it]] }
        den = Array(walked.size) { probabilities[walked[it]].den }
        rest = Array(walked.size) { probabilities[walked[it]].num }
        var outcomes = BigInteger.ZERO
        for (c in liveCount) outcomes += c
        small = outcomes.bitLength() <= 61
    }

    /** The outcome when the distribution has only one (no bits are read), else null. */
    public val certain: Outcome? = if (certainGroup >= 0) Outcome(certainGroup, BigInteger.ZERO) else null

    /** True when members are [Long]s ([memberLong], [walkLong]): fewer than 2^61 outcomes. */
    public val isSmall: Boolean get() = small

    @Synchronized
    private fun grow(depth: Int): Level {
        var current = levels
        while (current.size <= depth) {
            val groups = ArrayList<Int>()
            val counts = ArrayList<BigInteger>()
            for (i in liveIndex.indices) {
                val r = rest[i].shiftLeft(1)
                if (r >= den[i]) {
                    rest[i] = r - den[i]
                    groups.add(liveIndex[i])
                    counts.add(liveCount[i])
                } else {
                    rest[i] = r
                }
            }
            val bigEnds = Array(counts.size) { BigInteger.ZERO }
            var sum = BigInteger.ZERO
            for (i in counts.indices) {
                sum += counts[i]
                bigEnds[i] = sum
            }
            val ends = if (small) LongArray(counts.size) { bigEnds[it].toLong() } else LongArray(0)
            current = current + Level(groups.toIntArray(), ends, if (small) emptyArray() else bigEnds)
            levels = current
        }
        return current[depth]
    }

    private fun level(depth: Int): Level {
        val current = levels
        return if (depth < current.size) current[depth] else grow(depth)
    }

    /**
     * One walk in [Long] arithmetic (only when [isSmall]): returns the group index and stores the member
     * in `member[0]` when given. The caller holds the reader's monitor.
     */
    public fun walkLong(reader: BitReader, member: LongArray?): Int {
        if (certainGroup >= 0) {
            if (member != null) member[0] = 0L
            return certainGroup
        }
        if (!small) fail("walkLong needs fewer than 2^61 outcomes")
        var d = 0L
        var depth = 0
        while (true) {
            d = 2 * d + reader.bit()
            val lv = level(depth)
            val total = lv.total
            if (d < total) {
                val ends = lv.ends
                // the first leaf group whose end is above d
                var a = 0
                var b = ends.size - 1
                while (a < b) {
                    val mid = (a + b) ushr 1
                    if (ends[mid] > d) b = mid else a = mid + 1
                }
                if (member != null) member[0] = if (a == 0) d else d - ends[a - 1]
                return lv.groups[a]
            }
            d -= total
            depth++
        }
    }

    /** One outcome; the caller holds the reader's monitor. */
    public fun sample(reader: BitReader): Outcome {
        certain?.let { return it }
        if (small) {
            val m = LongArray(1)
            val g = walkLong(reader, m)
            return Outcome(g, BigInteger.valueOf(m[0]))
        }
        var d = BigInteger.ZERO
        var depth = 0
        while (true) {
            d = d.shiftLeft(1)
            if (reader.bit() == 1) d = d.setBit(0)
            val lv = level(depth)
            if (d < lv.bigTotal) {
                val ends = lv.bigEnds
                var a = 0
                var b = ends.size - 1
                while (a < b) {
                    val mid = (a + b) ushr 1
                    if (ends[mid] > d) b = mid else a = mid + 1
                }
                return Outcome(lv.groups[a], if (a == 0) d else d - ends[a - 1])
            }
            d -= lv.bigTotal
            depth++
        }
    }

    /** The group of one outcome; the caller holds the reader's monitor. */
    public fun group(reader: BitReader): Int = if (small || certainGroup >= 0) walkLong(reader, null) else sample(reader).group

    public companion object {
        /** Groups given as (count, probability) pairs of longs and fractions. */
        @JvmStatic
        public fun of(vararg groups: Pair<Long, Fraction>): KnuthYao =
            KnuthYao(groups.map { BigInteger.valueOf(it.first) }, groups.map { it.second })
    }
}

/** Lane groups for [ReportBits.sampleLaneWords] (the masks as 64-bit words, lane i = bit i % 64 of word ⌊i/64⌋). */
private class LanePlan(width: Int, masks: Array<LongArray>) {
    val lanes: Array<IntArray> = Array(masks.size) { g ->
        val out = IntArray(countBits(masks[g], width))
        var n = 0
        for (w in 0 until minOf(masks[g].size, (width + 63) ushr 6)) {
            var m = masks[g][w]
            if (w == (width ushr 6)) m = m and ((1L shl (width and 63)) - 1)
            while (m != 0L) {
                out[n++] = 64 * w + java.lang.Long.numberOfTrailingZeros(m)
                m = m and (m - 1)
            }
        }
        out
    }

    companion object {
        fun countBits(mask: LongArray, width: Int): Int {
            var n = 0
            for (w in 0 until minOf(mask.size, (width + 63) ushr 6)) {
                var m = mask[w]
                if (w == (width ushr 6)) m = m and ((1L shl (width and 63)) - 1)
                n += java.lang.Long.bitCount(m)
            }
            return n
        }
    }
}

/**
 * The per-report samplers that read the CSPRNG bit by bit (the port of Python's
 * `ldp.client.report_bits`; tests/vectors/README.md, "`bits`"): every fresh coin of a report is a
 * Knuth–Yao walk ([KnuthYao]) reading the bits of the source's [BitReader]. Keyed PRF streams (RAPPOR's
 * permanent response, the memoized mechanisms' streams) keep [Samplers]' byte samplers.
 *
 * Tables are cached as Python caches them: uniform(n) per n, coins per probability, run tables per
 * probability, subset ranks per (n, k); each table's levels are computed on first use.
 */
public object ReportBits {
    /** Longest run of the likelier symbol one walk of [sampleLanes] draws. */
    public const val RUN_CAP: Int = 255

    private val uniformTables = TableCache<BigInteger, KnuthYao>(256)
    private val coinTables = TableCache<Fraction, KnuthYao>(256)
    private val runTables = TableCache<Fraction, KnuthYao>(64)
    private val rankTables = TableCache<Pair<Int, Int>, KnuthYao>(64)
    private val binomials = TableCache<Pair<Int, Int>, BigInteger>(64)

    private val HALF = Fraction.of(1, 2)

    /** The walk over n outcomes of 1/n (cached per n). */
    @JvmStatic
    public fun uniformTable(n: BigInteger): KnuthYao {
        if (n.signum() <= 0) fail("uniform needs n > 0, got $n")
        return uniformTables.get(n) { KnuthYao(listOf(it), listOf(Fraction.of(BigInteger.ONE, it))) }
    }

    /** The walk over (probability, 1 − probability) (cached per probability). */
    @JvmStatic
    public fun coinTable(probability: Fraction): KnuthYao =
        coinTables.get(probability) { KnuthYao(listOf(BigInteger.ONE, BigInteger.ONE), listOf(it, Fraction.ONE - it)) }

    /**
     * Run lengths of the likelier symbol (cached per `rarer`): k < [RUN_CAP] with s(1 − s)^k (k likelier
     * symbols, then one rarer), [RUN_CAP] with (1 − s)^RUN_CAP; `rarer` is s, 0 < s ≤ 1/2.
     */
    @JvmStatic
    public fun runTable(rarer: Fraction): KnuthYao = runTables.get(rarer) { s ->
        val probabilities = ArrayList<Fraction>(RUN_CAP + 1)
        var stay = Fraction.ONE
        val likelier = Fraction.ONE - s
        repeat(RUN_CAP) {
            probabilities.add(s * stay)
            stay *= likelier
        }
        probabilities.add(stay)
        KnuthYao(List(RUN_CAP + 1) { BigInteger.ONE }, probabilities)
    }

    /** A uniform integer in [0, n) (the walk over n outcomes of 1/n); uniform(1) reads nothing. */
    @JvmStatic
    public fun uniform(n: BigInteger, reader: BitReader): BigInteger {
        val table = uniformTable(n)
        synchronized(reader) { return table.sample(reader).member }
    }

    /** [uniform] for n < 2^61, in [Long] arithmetic. */
    @JvmStatic
    public fun uniform(n: Long, reader: BitReader): Long {
        if (n <= 0) fail("uniform needs n > 0, got $n")
        val table = uniformTable(BigInteger.valueOf(n))
        if (!table.isSmall) return uniform(BigInteger.valueOf(n), reader).toLong()
        val member = LongArray(1)
        synchronized(reader) { table.walkLong(reader, member) }
        return member[0]
    }

    /** True with the exact `probability` (the walk over (probability, 1 − probability)); coin(0) and coin(1) read nothing. */
    @JvmStatic
    public fun coin(probability: Fraction, reader: BitReader): Boolean {
        val table = coinTable(probability)
        synchronized(reader) { return table.walkLong(reader, null) == 0 }
    }

    /**
     * Independent coins over `width` lanes, lane i with its group's probability; groups drawn in order,
     * a group's lanes in increasing order one sequence of coins (masks as 64-bit words, disjoint).
     * With s the rarer symbol's probability (s = t when t ≤ 1/2, the rarer symbol then 1; else s = 1 − t
     * and the rarer symbol 0), each walk of [runTable] fills the next k lanes with the likelier symbol
     * and, when k < [RUN_CAP], the lane after them with the rarer one; lanes past the group's last lane
     * are not used. A group with t = 0 or t = 1 reads nothing. Returns the lanes as 64-bit words.
     */
    @JvmStatic
    public fun sampleLaneWords(width: Int, groups: List<WordLaneGroup>, reader: BitReader): LongArray {
        if (width < 0) fail("a lane sampler needs width >= 0, got $width")
        val result = LongArray((width + 63) ushr 6)
        val plan = LanePlan(width, Array(groups.size) { groups[it].mask })
        synchronized(reader) {
            for ((g, group) in groups.withIndex()) {
                val lanes = plan.lanes[g]
                val t = group.probability
                if (lanes.isEmpty() || t.num.signum() == 0) continue
                if (t == Fraction.ONE) {
                    for (lane in lanes) result[lane ushr 6] = result[lane ushr 6] or (1L shl (lane and 63))
                    continue
                }
                val rarerIsOne = t <= HALF
                val table = runTable(if (rarerIsOne) t else Fraction.ONE - t)
                // rarerIsOne: set the rare lanes; else set every lane, then clear the rare ones
                if (!rarerIsOne) for (lane in lanes) result[lane ushr 6] = result[lane ushr 6] or (1L shl (lane and 63))
                var position = 0
                while (position < lanes.size) {
                    val run = table.walkLong(reader, null)
                    position += run
                    if (run < RUN_CAP) {
                        if (position < lanes.size) {
                            val lane = lanes[position]
                            result[lane ushr 6] = result[lane ushr 6] xor (1L shl (lane and 63))
                        }
                        position++
                    }
                }
            }
        }
        return result
    }

    /** [sampleLaneWords] with [BigInteger] masks and result (bit i = lane i). */
    @JvmStatic
    public fun sampleLanes(width: Int, groups: List<LaneGroup>, reader: BitReader): BigInteger {
        val full = BigInteger.ONE.shiftLeft(width) - BigInteger.ONE
        val wordGroups = groups.map { WordLaneGroup(Samplers.lanesToWords(it.mask.and(full), width), it.probability) }
        return Samplers.wordsToLanes(sampleLaneWords(width, wordGroups, reader))
    }

    /** C(n, k) (cached). */
    @JvmStatic
    public fun binomial(n: Int, k: Int): BigInteger {
        if (k < 0 || k > n) return BigInteger.ZERO
        return binomials.get(n to k) { (nn, kk) ->
            val j = minOf(kk, nn - kk)
            var c = BigInteger.ONE
            for (i in 1..j) c = c * BigInteger.valueOf((nn - j + i).toLong()) / BigInteger.valueOf(i.toLong())
            c
        }
    }

    /**
     * The k-subset of [0, n) whose colex rank is `rank` (rank = Σ C(c_i, i) over its c_1 < … < c_k), in
     * increasing order.
     */
    @JvmStatic
    public fun unrankSubset(rank: BigInteger, n: Int, k: Int): IntArray {
        if (k < 0 || k > n || rank.signum() < 0 || rank >= binomial(n, k)) fail("rank $rank is not the rank of a $k-subset of $n")
        val members = IntArray(k)
        var c = n - 1
        // C(c, i) for the current c and i; small: in Long arithmetic (C(n, k)·n < 2^62 keeps every product in range)
        if (binomial(n, k).bitLength() + 32 - Integer.numberOfLeadingZeros(maxOf(n, 1)) < 62) {
            var r = rank.toLong()
            var binom = if (k > 0) binomial(c, k).toLong() else 0L
            for (i in k downTo 1) {
                while (binom > r) { // C(c − 1, i) = C(c, i)·(c − i)/c
                    binom = binom * (c - i) / c
                    c--
                }
                members[i - 1] = c
                r -= binom
                binom = if (c != 0) binom * i / c else 0L // C(c − 1, i − 1) = C(c, i)·i/c
                c--
            }
            return members
        }
        var r = rank
        var binom = if (k > 0) binomial(c, k) else BigInteger.ZERO
        for (i in k downTo 1) {
            while (binom > r) {
                binom = binom * BigInteger.valueOf((c - i).toLong()) / BigInteger.valueOf(c.toLong())
                c--
            }
            members[i - 1] = c
            r -= binom
            binom = if (c != 0) binom * BigInteger.valueOf(i.toLong()) / BigInteger.valueOf(c.toLong()) else BigInteger.ZERO
            c--
        }
        return members
    }

    /** The walk over the C(n, k) ranks of k-subsets of [0, n) (cached per (n, k)). */
    @JvmStatic
    public fun rankTable(n: Int, k: Int): KnuthYao {
        if (k < 0 || k > n) fail("cannot choose $k of $n")
        return rankTables.get(n to k) { KnuthYao(listOf(binomial(n, k)), listOf(Fraction.of(BigInteger.ONE, binomial(n, k)))) }
    }

    /** A uniform k-subset of [0, n), increasing: one uniform rank below C(n, k) (one walk), unranked. */
    @JvmStatic
    public fun uniformSubset(n: Int, k: Int, reader: BitReader): IntArray {
        val table = rankTable(n, k)
        val rank = synchronized(reader) { table.sample(reader).member }
        return unrankSubset(rank, n, k)
    }
}
