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

    /** The next `k` bits as an unsigned integer, the first the most significant (k single bits). */
    public fun bigBits(k: Int): BigInteger {
        if (k == 0) return BigInteger.ZERO
        val bytes = ByteArray((k + 7) ushr 3)
        val pad = 8 * bytes.size - k
        for (i in 0 until k) {
            if (bit() == 1) {
                val at = pad + i
                bytes[at ushr 3] = (bytes[at ushr 3].toInt() or (0x80 ushr (at and 7))).toByte()
            }
        }
        return BigInteger(1, bytes)
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

        // a reader holds its source, so the map holds readers weakly too (else no entry would ever go)
        private val readers = java.util.WeakHashMap<ByteSource, java.lang.ref.WeakReference<BitReader>>()

        /**
         * The reader of `source`: one per source, so leftover bits carry across draws and reports (an
         * encoder keeps its source's reader for its lifetime). A [PooledSource] keeps its own, reading
         * [POOLED_CHUNK] pooled bytes at a time; a [FixedSource] its own, one byte at a time; any other
         * source gets one that reads one byte at a time, looked up by identity while someone holds it
         * (a reader no one holds is dropped with its leftover bits: they are never served).
         */
        @JvmStatic
        public fun of(source: ByteSource): BitReader {
            if (source is PooledSource) return source.bitReader
            if (source is FixedSource) return source.bitReader
            synchronized(readers) {
                readers[source]?.get()?.let { return it }
                val reader = BitReader(source, 1)
                readers[source] = java.lang.ref.WeakReference(reader)
                return reader
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
 * first use and kept. A level has fewer internal nodes than the distribution has outcomes (N), so d stays
 * below 2N: walks over at most 2^62 outcomes run in [Long] arithmetic.
 */
public class KnuthYao private constructor(counts: List<BigInteger>, nums: List<BigInteger>, dens: List<BigInteger>) {
    /**
     * Groups of (count, exact probability of each outcome).
     *
     * @throws LdpException when a count is negative, a probability outside [0, 1], or the probabilities
     *   do not sum to exactly 1
     */
    public constructor(counts: List<BigInteger>, probabilities: List<Fraction>) :
        this(counts, checked(counts, probabilities).map { it.num }, probabilities.map { it.den })

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
        val live = ArrayList<Int>()
        for (g in counts.indices) if (counts[g].signum() != 0 && nums[g].signum() != 0) live.add(g)
        certainGroup = if (live.size == 1 && counts[live[0]] == BigInteger.ONE) live[0] else -1
        // every walked probability is below 1: an outcome of probability 1 is the only one (certain)
        val walked = if (certainGroup >= 0) emptyList() else live
        liveIndex = walked.toIntArray()
        liveCount = Array(walked.size) { counts[walked[it]] }
        den = Array(walked.size) { dens[walked[it]] }
        rest = Array(walked.size) { nums[walked[it]] }
        var outcomes = BigInteger.ZERO
        for (c in liveCount) outcomes += c
        small = outcomes <= BigInteger.ONE.shiftLeft(62)
    }

    /** The outcome when the distribution has only one (no bits are read), else null. */
    public val certain: Outcome? = if (certainGroup >= 0) Outcome(certainGroup, BigInteger.ZERO) else null

    /** True when the walk runs in [Long] arithmetic ([walkLong]): at most 2^62 outcomes. */
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
        if (!small) fail("walkLong needs at most 2^62 outcomes")
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

    @Volatile
    private var emptyLevels = -1

    /** The number of levels before the first with a leaf (computed once). */
    private fun leadingEmptyLevels(): Int {
        var z = emptyLevels
        if (z >= 0) return z
        z = 0
        while (level(z).groups.isEmpty()) z++
        emptyLevels = z
        return z
    }

    /** One outcome; the caller holds the reader's monitor. */
    public fun sample(reader: BitReader): Outcome {
        certain?.let { return it }
        if (small) {
            val m = LongArray(1)
            val g = walkLong(reader, m)
            return Outcome(g, BigInteger.valueOf(m[0]))
        }
        // levels without leaves only double d and add the bit: the first z bits, read as one integer
        // (uniform(n) has ⌊log2 n⌋ of them: most of its walk)
        val z = leadingEmptyLevels()
        var d = reader.bigBits(z)
        var depth = z
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
        private fun checked(counts: List<BigInteger>, probabilities: List<Fraction>): List<Fraction> {
            if (counts.size != probabilities.size) fail("${counts.size} counts for ${probabilities.size} probabilities")
            var total = Fraction.ZERO
            for (g in counts.indices) {
                val count = counts[g]
                val p = probabilities[g]
                if (count.signum() < 0 || p < Fraction.ZERO || p > Fraction.ONE) fail("group $g: count $count and probability $p out of range")
                total += Fraction.of(count * p.num, p.den)
            }
            if (total != Fraction.ONE) fail("the outcomes' probabilities sum to $total, not 1")
            return probabilities
        }

        /**
         * Groups whose outcomes have probability weights[g]/total each (integer weights of a table: the
         * same walk as the reduced fractions, without reducing them); Σ counts[g]·weights[g] must be total.
         */
        @JvmStatic
        public fun ofWeights(counts: List<Long>, weights: List<BigInteger>, total: BigInteger): KnuthYao {
            if (counts.size != weights.size) fail("${counts.size} counts for ${weights.size} weights")
            var sum = BigInteger.ZERO
            for (g in counts.indices) {
                if (counts[g] < 0 || weights[g].signum() < 0) fail("group $g: count ${counts[g]} and weight ${weights[g]} out of range")
                sum += BigInteger.valueOf(counts[g]) * weights[g]
            }
            if (sum != total || total.signum() <= 0) fail("the weights sum to $sum, not the total $total")
            return KnuthYao(counts.map { BigInteger.valueOf(it) }, weights, List(counts.size) { total })
        }

        /** Groups given as (count, probability) pairs of longs and fractions. */
        @JvmStatic
        public fun of(vararg groups: Pair<Long, Fraction>): KnuthYao =
            KnuthYao(groups.map { BigInteger.valueOf(it.first) }, groups.map { it.second })
    }
}

/**
 * Lanes as runs ([ReportBits.sampleLaneWords]) for fixed group probabilities, their run tables resolved
 * once: an encoder builds one for its spec and calls [sample] per report with the groups' masks.
 *
 * @property width the number of lanes
 */
public class RunSampler(public val width: Int, probabilities: List<Fraction>) {
    private val always: BooleanArray // t = 1: every lane of the group is 1, nothing read
    private val never: BooleanArray // t = 0: every lane is 0, nothing read
    private val rarerIsOne: BooleanArray
    private val tables: Array<KnuthYao?>

    init {
        if (width < 0) fail("a lane sampler needs width >= 0, got $width")
        val half = Fraction.of(1, 2)
        val n = probabilities.size
        always = BooleanArray(n) { probabilities[it] == Fraction.ONE }
        never = BooleanArray(n) { probabilities[it].num.signum() == 0 }
        rarerIsOne = BooleanArray(n) { probabilities[it] <= half }
        tables = Array(n) {
            val t = probabilities[it]
            if (t < Fraction.ZERO || t > Fraction.ONE) fail("probability outside [0, 1]: $t")
            if (always[it] || never[it]) null else ReportBits.runTable(if (rarerIsOne[it]) t else Fraction.ONE - t)
        }
    }

    /**
     * One draw: lane i is 1 with the probability of the group whose mask (one per probability, in
     * order, as 64-bit words; disjoint) holds it. Returns the lanes as 64-bit words.
     */
    public fun sample(masks: Array<LongArray>, reader: BitReader): LongArray {
        if (masks.size != tables.size) fail("a lane sampler of ${tables.size} groups was given ${masks.size} masks")
        val nwords = (width + 63) ushr 6
        val result = LongArray(nwords)
        val last = if (width and 63 == 0) -1L else (1L shl (width and 63)) - 1
        synchronized(reader) {
            for (g in masks.indices) {
                val mask = masks[g]
                val words = minOf(mask.size, nwords)
                if (never[g]) continue
                // rarer symbol 1: set the rare lanes; rarer symbol 0 (and t = 1): set every lane, clear the rare ones
                if (always[g] || !rarerIsOne[g]) {
                    for (w in 0 until words) result[w] = result[w] or (if (w == nwords - 1) mask[w] and last else mask[w])
                }
                val table = tables[g] ?: continue
                // a cursor over the group's lanes in increasing order: word w, its lanes not passed yet in cur
                var w = 0
                var cur = if (words == 0) 0L else if (nwords == 1) mask[0] and last else mask[0]
                while (true) {
                    while (cur == 0L && w + 1 < words) {
                        w++
                        cur = if (w == nwords - 1) mask[w] and last else mask[w]
                    }
                    if (cur == 0L) break // every lane filled
                    var run = table.walkLong(reader, null)
                    val rare = run < ReportBits.RUN_CAP
                    // pass `run` lanes of the likelier symbol
                    while (run > 0 && cur != 0L) {
                        val c = java.lang.Long.bitCount(cur)
                        if (c <= run) {
                            run -= c
                            cur = 0L
                            while (cur == 0L && w + 1 < words) {
                                w++
                                cur = if (w == nwords - 1) mask[w] and last else mask[w]
                            }
                        } else {
                            repeat(run) { cur = cur and (cur - 1) }
                            run = 0
                        }
                    }
                    if (rare && cur != 0L) { // the next lane gets the rarer symbol
                        val bit = cur and -cur
                        result[w] = result[w] xor bit
                        cur = cur xor bit
                    }
                }
            }
        }
        return result
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

    /** [uniform] for a [Long] n. */
    @JvmStatic
    public fun uniform(n: Long, reader: BitReader): Long {
        if (n <= 0) fail("uniform needs n > 0, got $n")
        val table = uniformTable(BigInteger.valueOf(n))
        if (!table.isSmall) return uniform(BigInteger.valueOf(n), reader).toLong()
        val member = LongArray(1)
        synchronized(reader) { table.walkLong(reader, member) }
        return member[0]
    }

    /**
     * coin(k/2^bits) (0 ≤ k < 2^bits, bits ≤ 62): the walk over (t, 1 − t) of [coin] with the digits
     * read off k and 2^bits − k, without building a table (the numeric encoders' rounding coin, whose
     * probability changes every report). coin(0) reads nothing.
     */
    @JvmStatic
    public fun dyadicCoin(k: Long, bits: Int, reader: BitReader): Boolean {
        if (bits !in 1..62 || k < 0 || k >= (1L shl bits)) fail("dyadicCoin needs 0 <= k < 2^bits, bits in [1, 62], got k=$k, bits=$bits")
        if (k == 0L) return false
        val rest = (1L shl bits) - k
        synchronized(reader) {
            var d = 0L
            var j = bits - 1 // digit j + 1 of t is bit j of k
            while (true) {
                d = 2 * d + reader.bit()
                val one = (k ushr j) and 1L // a leaf of t (group 0) first, then of 1 − t (group 1)
                val two = (rest ushr j) and 1L
                if (d < one + two) return one == 1L && d == 0L
                d -= one + two
                j-- // both expansions end at digit `bits`: the walk has decided by then
            }
        }
    }

    /** [dyadicCoin] of a [BigInteger] k, 0 ≤ k ≤ 2^bits: coin(k/2^bits); coin(0) and coin(1) read nothing. */
    @JvmStatic
    public fun dyadicCoin(k: BigInteger, bits: Int, reader: BitReader): Boolean {
        val one = BigInteger.ONE.shiftLeft(bits)
        if (bits < 1 || k.signum() < 0 || k > one) fail("dyadicCoin needs 0 <= k <= 2^bits, got k=$k, bits=$bits")
        if (k.signum() == 0) return false
        if (k == one) return true
        if (bits <= 62) return dyadicCoin(k.toLong(), bits, reader)
        val rest = one - k
        synchronized(reader) {
            var d = 0L // below 4: at most two leaves a level
            var j = bits - 1
            while (true) {
                d = 2 * d + reader.bit()
                val first = if (k.testBit(j)) 1L else 0L
                val second = if (rest.testBit(j)) 1L else 0L
                if (d < first + second) return first == 1L && d == 0L
                d -= first + second
                j--
            }
        }
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
    public fun sampleLaneWords(width: Int, groups: List<WordLaneGroup>, reader: BitReader): LongArray =
        RunSampler(width, groups.map { it.probability }).sample(Array(groups.size) { groups[it].mask }, reader)

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
        // large: the same steps on mutable 32-bit limbs (each step one multiplication by a small integer and
        // one exact division, by the inverse of its odd part: no allocation, no hardware division)
        val r = Limbs.of(rank)
        val binom = Limbs.of(if (k > 0) binomial(c, k) else BigInteger.ZERO)
        for (i in k downTo 1) {
            while (binom > r) {
                binom.timesOver(c - i, c)
                c--
            }
            members[i - 1] = c
            r.minus(binom)
            if (c != 0) binom.timesOver(i, c) else binom.times(0)
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

/** uniform(n) of one n (n ≤ 2^62), its table held: an encoder's draw of a fixed range. */
public class UniformDraw(public val n: Long) {
    private val table: KnuthYao

    init {
        if (n <= 0 || n > (1L shl 62)) fail("uniform needs 0 < n <= 2^62, got $n")
        table = ReportBits.uniformTable(BigInteger.valueOf(n))
    }

    /** A uniform integer in [0, n) from `reader` (nothing read when n = 1). */
    public fun draw(reader: BitReader): Long {
        val member = LongArray(1)
        synchronized(reader) { table.walkLong(reader, member) }
        return member[0]
    }
}

/** coin(p) of one p, its table held: an encoder's exact coin of a fixed probability. */
public class CoinDraw(public val probability: Fraction) {
    private val table = ReportBits.coinTable(probability)

    /** True with the exact probability (nothing read when it is 0 or 1). */
    public fun flip(reader: BitReader): Boolean = synchronized(reader) { table.walkLong(reader, null) } == 0
}

/** A nonnegative integer as mutable little-endian 32-bit limbs (the large path of [ReportBits.unrankSubset]). */
internal class Limbs private constructor(private var limbs: IntArray, private var size: Int) : Comparable<Limbs> {
    override fun compareTo(other: Limbs): Int {
        if (size != other.size) return size.compareTo(other.size)
        for (i in size - 1 downTo 0) {
            val c = Integer.compareUnsigned(limbs[i], other.limbs[i])
            if (c != 0) return c
        }
        return 0
    }

    /** this −= other (other ≤ this). */
    fun minus(other: Limbs) {
        var borrow = 0L
        for (i in 0 until size) {
            val d = (limbs[i].toLong() and MASK) - (if (i < other.size) other.limbs[i].toLong() and MASK else 0L) - borrow
            limbs[i] = d.toInt()
            borrow = if (d < 0) 1L else 0L
        }
        trim()
    }

    /** this ·= m (0 ≤ m < 2^31). */
    fun times(m: Int) {
        if (m == 0) {
            size = 0
            return
        }
        var carry = 0L
        for (i in 0 until size) {
            val t = (limbs[i].toLong() and MASK) * m + carry
            limbs[i] = t.toInt()
            carry = t ushr 32
        }
        if (carry != 0L) {
            if (size == limbs.size) limbs = limbs.copyOf(size + 4)
            limbs[size++] = carry.toInt()
        }
    }

    /**
     * this = this·m/d (0 ≤ m < 2^31, 1 ≤ d < 2^31), the quotient known to be exact, in one pass from the
     * low limb: each limb of the product goes straight into the exact division by d's odd part (the
     * inverse's recurrence), whose quotient limbs are shifted right by d's factors of two one limb late.
     */
    fun timesOver(m: Int, d: Int) {
        if (d < 1) fail("timesOver needs d >= 1, got $d")
        if (m == 0) {
            size = 0
            return
        }
        val twos = Integer.numberOfTrailingZeros(d)
        val odd = d ushr twos
        var inverse = odd
        repeat(4) { inverse *= 2 - odd * inverse }
        val divisor = odd.toLong()
        if (size + 1 > limbs.size) limbs = limbs.copyOf(size + 4)
        var carry = 0L
        var borrow = 0L
        var previous = 0 // the quotient limb before this one (its low bits are shifted out as `twos`)
        val n = size + 1 // the product may have one more limb
        for (i in 0 until n) {
            val t = (if (i < size) (limbs[i].toLong() and MASK) * m else 0L) + carry
            carry = t ushr 32
            var l = (t and MASK) - borrow
            var under = 0L
            if (l < 0) {
                l += 1L shl 32
                under = 1L
            }
            val q = l.toInt() * inverse
            borrow = (((q.toLong() and MASK) * divisor) ushr 32) + under
            if (twos == 0) {
                limbs[i] = q
            } else if (i > 0) {
                limbs[i - 1] = (previous ushr twos) or (q shl (32 - twos))
            }
            previous = q
        }
        if (twos != 0) limbs[n - 1] = previous ushr twos
        size = n
        trim()
    }

    /** this /= d, d in [1, 2^31), the quotient known to be exact: a shift by d's factors of two, then the inverse of its odd part. */
    fun dividedExactly(d: Int) {
        if (d < 1) fail("dividedExactly needs d >= 1, got $d")
        val twos = Integer.numberOfTrailingZeros(d)
        if (twos > 0) {
            for (i in 0 until size) {
                val high = if (i + 1 < size) limbs[i + 1] shl (32 - twos) else 0
                limbs[i] = (limbs[i] ushr twos) or high
            }
            trim()
        }
        val odd = d ushr twos
        if (odd == 1) return
        var inverse = odd // odd·odd ≡ 1 mod 8: 3 bits; each Newton step doubles them
        repeat(4) { inverse *= 2 - odd * inverse }
        val divisor = odd.toLong()
        var borrow = 0L
        for (i in 0 until size) {
            var l = (limbs[i].toLong() and MASK) - borrow
            var under = 0L
            if (l < 0) {
                l += 1L shl 32
                under = 1L
            }
            val q = l.toInt() * inverse
            limbs[i] = q
            borrow = (((q.toLong() and MASK) * divisor) ushr 32) + under
        }
        trim()
    }

    private fun trim() {
        while (size > 0 && limbs[size - 1] == 0) size--
    }

    companion object {
        private const val MASK = 0xffffffffL

        fun of(x: BigInteger): Limbs {
            if (x.signum() < 0) fail("limbs of a negative integer: $x")
            val n = (x.bitLength() + 31) ushr 5
            val limbs = IntArray(n + 2)
            for (i in 0 until n) limbs[i] = x.shiftRight(32 * i).toInt()
            return Limbs(limbs, n).also { it.trim() }
        }
    }

    fun toBigInteger(): BigInteger {
        var x = BigInteger.ZERO
        for (i in size - 1 downTo 0) x = x.shiftLeft(32).or(BigInteger.valueOf(limbs[i].toLong() and MASK))
        return x
    }
}
