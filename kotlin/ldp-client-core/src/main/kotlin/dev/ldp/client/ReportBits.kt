package dev.ldp.client

import java.math.BigInteger
import java.util.concurrent.ConcurrentHashMap

/**
 * Uniform bits from a byte source, most significant bit of each byte first (the port of Python's
 * `ldp.client.report_bits.BitReader`; tests/vectors/README.md, "`bits`").
 *
 * A byte is read (`source.read(chunk)`, then served in order) only when a bit is needed and none is
 * left; the bits a draw leaves serve the next draw. One reader per byte source ([ReportBits.reader]),
 * kept across draws and reports. [bitsRead] counts the bits handed out. Not thread-safe by itself:
 * every sampler of [ReportBits] holds the reader's monitor (`synchronized(reader)`) for a whole draw.
 *
 * @param chunk bytes asked of the source at a time: 1 for a fixed test stream (so exactly the bytes the
 *   draws need are read, in program order with any other reads of the source), more for a pooled CSPRNG.
 */
public class BitReader(private val source: ByteSource, private val chunk: Int) {
    private var buffer = ByteArray(0)
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

    /** The next `count` ≤ 32 bits as one integer, the first the most significant (what `count` calls of [bit] serve). */
    public fun bits(count: Int): Long {
        var out = 0L
        var need = count
        while (need > 0) {
            if (left == 0) refill()
            val take = minOf(need, left)
            left -= take
            out = (out shl take) or ((word ushr left) and ((1L shl take) - 1))
            need -= take
        }
        bitsRead += count
        return out
    }

    private fun refill() {
        if (offset == buffer.size) {
            buffer = source.read(chunk)
            offset = 0
            if (buffer.isEmpty()) fail("the byte source returned no bytes")
        }
        // eight bytes at a time when the buffer holds them (served most significant first, as byte by byte)
        val n = if (buffer.size - offset >= 8) 8 else 1
        var w = 0L
        for (i in offset until offset + n) {
            w = (w shl 8) or (buffer[i].toLong() and 0xff)
            buffer[i] = 0
        }
        offset += n
        word = w
        left = 8 * n
    }

    /** The next `k` bits as an unsigned integer, the first the most significant. */
    public fun bigBits(k: Int): BigInteger {
        val bytes = ByteArray((k + 7) ushr 3)
        val pad = 8 * bytes.size - k
        for (i in pad until pad + k) if (bit() == 1) bytes[i ushr 3] = (bytes[i ushr 3].toInt() or (0x80 ushr (i and 7))).toByte()
        return BigInteger(1, bytes)
    }
}

/**
 * A discrete distribution drawn by the Knuth–Yao walk, reading a bit only while the outcome is
 * undecided (the port of Python's `KnuthYao`).
 *
 * Group g has `counts[g]` outcomes, each with the exact probability nums[g]/dens[g]; the
 * probabilities must sum to exactly 1 over all outcomes. Level j of the walk's tree has one leaf for
 * each outcome whose probability has binary digit j equal to 1, the groups in order and each group's
 * outcomes in order. The walk keeps d, the index of its node among the level's nodes: d = 2d + (next
 * bit); the node is the leaf of (group g, member d′) when d falls in g's leaves, else it is internal and
 * d −= the level's leaf count. Each outcome comes with probability exactly its own; the expected number
 * of bits read is below H + 2. A distribution with one outcome reads nothing. Levels are computed on
 * first use and kept. A level has fewer internal nodes than the distribution has outcomes (N), so d
 * stays below 2N: the walk runs in [Long] arithmetic, for N ≤ 2^62 (larger uniform ranges:
 * [ReportBits.uniform] of a [BigInteger]).
 *
 * @throws LdpException when a count is negative, a probability outside [0, 1], the probabilities do
 *   not sum to exactly 1, or there are more than 2^62 outcomes
 */
public class KnuthYao internal constructor(counts: LongArray, nums: Array<BigInteger>, dens: Array<BigInteger>) {
    /** Groups of (count, exact probability of each outcome). */
    public constructor(counts: List<Long>, probabilities: List<Fraction>) :
        this(counts.toLongArray(), Array(probabilities.size) { probabilities[it].num }, Array(probabilities.size) { probabilities[it].den })

    /** The group of the only outcome (nothing is read), or −1. */
    public val certainGroup: Int
    private val live: IntArray // the walked groups (count and probability nonzero), in order
    private val liveCount: LongArray
    private val den: Array<BigInteger>
    private val rest: Array<BigInteger> // the numerators of the digits not yet turned into levels

    // level j: (group, cumulative leaf count) pairs of the groups with a leaf there; its total is the last count
    @Volatile
    private var levels: Array<LongArray> = emptyArray()

    init {
        if (counts.size != nums.size) fail("${counts.size} counts for ${nums.size} probabilities")
        var total = Fraction.ZERO
        var outcomes = BigInteger.ZERO
        val walked = ArrayList<Int>()
        for (g in counts.indices) {
            if (counts[g] < 0 || nums[g].signum() < 0 || nums[g] > dens[g]) fail("group $g: count ${counts[g]} and probability ${nums[g]}/${dens[g]} out of range")
            total += Fraction.of(BigInteger.valueOf(counts[g]) * nums[g], dens[g])
            if (counts[g] != 0L && nums[g].signum() != 0) {
                walked.add(g)
                outcomes += BigInteger.valueOf(counts[g])
            }
        }
        if (total != Fraction.ONE) fail("the outcomes' probabilities sum to $total, not 1")
        if (outcomes > BigInteger.ONE.shiftLeft(62)) fail("a walk over more than 2^62 outcomes")
        // an outcome of probability 1 is the only one: every walked probability is below 1
        certainGroup = if (walked.size == 1 && counts[walked[0]] == 1L) walked[0] else -1
        if (certainGroup >= 0) walked.clear()
        live = walked.toIntArray()
        liveCount = LongArray(live.size) { counts[live[it]] }
        den = Array(live.size) { dens[live[it]] }
        rest = Array(live.size) { nums[live[it]] }
    }

    @Synchronized
    private fun grow(depth: Int): LongArray {
        var current = levels
        while (current.size <= depth) {
            val level = ArrayList<Long>()
            var sum = 0L
            for (i in live.indices) {
                val r = rest[i].shiftLeft(1)
                rest[i] = if (r >= den[i]) r - den[i] else r
                if (r >= den[i]) {
                    sum += liveCount[i]
                    level.add(live[i].toLong())
                    level.add(sum)
                }
            }
            current = current + level.toLongArray()
            levels = current
        }
        return current[depth]
    }

    /**
     * One walk: returns the group index and stores the member in `member[0]` when given. The caller
     * holds the reader's monitor.
     */
    public fun walk(reader: BitReader, member: LongArray?): Int {
        if (certainGroup >= 0) {
            if (member != null) member[0] = 0L
            return certainGroup
        }
        var d = 0L
        var depth = 0
        while (true) {
            d = 2 * d + reader.bit()
            val known = levels
            val level = if (depth < known.size) known[depth] else grow(depth)
            val total = if (level.isEmpty()) 0L else level[level.size - 1]
            if (d < total) {
                // the first pair whose cumulative count is above d (binary search over the pairs)
                var a = 0
                var b = level.size / 2 - 1
                while (a < b) {
                    val mid = (a + b) ushr 1
                    if (level[2 * mid + 1] > d) b = mid else a = mid + 1
                }
                if (member != null) member[0] = if (a == 0) d else d - level[2 * a - 1]
                return level[2 * a].toInt()
            }
            d -= total
            depth++
        }
    }

    /** One walk's member (a uniform table: uniform(n)), holding the reader. */
    public fun draw(reader: BitReader): Long {
        val member = LongArray(1)
        synchronized(reader) { walk(reader, member) }
        return member[0]
    }

    /** True when one walk gives group 0 (a coin table: coin(p)), holding the reader. */
    public fun flip(reader: BitReader): Boolean = synchronized(reader) { walk(reader, null) } == 0
}

/**
 * Lanes as runs for fixed group probabilities, their run tables resolved
 * once: an encoder builds one for its spec and calls [sample] per report with the groups' masks.
 *
 * @property width the number of lanes
 */
public class RunSampler(public val width: Int, probabilities: List<Fraction>) {
    private val always = BooleanArray(probabilities.size) { probabilities[it] == Fraction.ONE } // t = 1: all lanes 1, nothing read
    private val never = BooleanArray(probabilities.size) { probabilities[it].num.signum() == 0 } // t = 0: all 0, nothing read
    private val rarerIsOne = BooleanArray(probabilities.size) { probabilities[it] <= Fraction.of(1, 2) }
    private val tables = Array(probabilities.size) {
        val t = probabilities[it]
        if (t < Fraction.ZERO || t > Fraction.ONE) fail("probability outside [0, 1]: $t")
        if (always[it] || never[it]) null else ReportBits.runTable(if (rarerIsOne[it]) t else Fraction.ONE - t)
    }

    init {
        if (width < 0) fail("a lane sampler needs width >= 0, got $width")
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
                    var run = table.walk(reader, null)
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
 * Knuth–Yao walk ([KnuthYao]) on the bits of the source's [BitReader]. Keyed PRF streams (RAPPOR's
 * permanent response, the memoized mechanisms' streams) keep [Samplers]' byte samplers.
 *
 * Tables are cached as Python caches them: uniform(n) per n, coins per probability, run tables per
 * probability; each table's levels are computed on first use.
 */
public object ReportBits {
    /** Longest run of the likelier symbol one walk of a [RunSampler] draws. */
    public const val RUN_CAP: Int = 255

    private val readers = java.util.WeakHashMap<ByteSource, java.lang.ref.WeakReference<BitReader>>()
    private val tables = ConcurrentHashMap<Any, Any>()

    /**
     * The reader of `source`: one per source, so leftover bits carry across draws and reports (an
     * encoder keeps its source's reader). A [PooledSource] keeps its own, reading 64 pooled bytes at a
     * time; a [FixedSource] its own, one byte at a time; any other source gets one that reads one byte
     * at a time, looked up by identity while someone holds it (a reader no one holds is dropped with its
     * leftover bits: they are never served). The map holds readers weakly: a reader holds its source.
     */
    @JvmStatic
    public fun reader(source: ByteSource): BitReader {
        if (source is PooledSource) return source.bitReader
        if (source is FixedSource) return source.bitReader
        synchronized(readers) {
            readers[source]?.get()?.let { return it }
            return BitReader(source, 1).also { readers[source] = java.lang.ref.WeakReference(it) }
        }
    }

    /** The table of `key`, made once (at most 1,024 kept: past that the cache starts afresh). */
    @Suppress("UNCHECKED_CAST")
    private fun <T : Any> cached(key: Any, make: () -> T): T {
        tables[key]?.let { return it as T }
        if (tables.size >= 1024) tables.clear()
        val made = make()
        return (tables.putIfAbsent(key, made) ?: made) as T
    }

    /** The walk over n outcomes of 1/n (0 < n ≤ 2^62; cached per n). */
    @JvmStatic
    public fun uniformTable(n: Long): KnuthYao {
        if (n <= 0 || n > (1L shl 62)) fail("uniform needs 0 < n <= 2^62, got $n")
        return cached(n) { KnuthYao(longArrayOf(n), arrayOf(BigInteger.ONE), arrayOf(BigInteger.valueOf(n))) }
    }

    /** The walk over (probability, 1 − probability) (cached per probability). */
    @JvmStatic
    public fun coinTable(probability: Fraction): KnuthYao =
        cached(probability) { KnuthYao(listOf(1L, 1L), listOf(probability, Fraction.ONE - probability)) }

    /**
     * Run lengths of the likelier symbol (cached per `rarer`): k < [RUN_CAP] with s(1 − s)^k (k likelier
     * symbols, then one rarer), [RUN_CAP] with (1 − s)^RUN_CAP; `rarer` is s, 0 < s ≤ 1/2.
     */
    @JvmStatic
    public fun runTable(rarer: Fraction): KnuthYao = cached(listOf("runs", rarer)) {
        val probabilities = ArrayList<Fraction>(RUN_CAP + 1)
        var stay = Fraction.ONE
        repeat(RUN_CAP) {
            probabilities.add(rarer * stay)
            stay *= Fraction.ONE - rarer
        }
        probabilities.add(stay)
        KnuthYao(List(RUN_CAP + 1) { 1L }, probabilities)
    }

    /** A uniform integer in [0, n) (the walk over n outcomes of 1/n); uniform(1) reads nothing. */
    @JvmStatic
    public fun uniform(n: Long, reader: BitReader): Long = uniformTable(n).draw(reader)

    /**
     * [uniform] of any n > 0: above 2^62, the same walk in [BigInteger] arithmetic. 1/n has ⌈log₂ n⌉ − 1
     * leading zero digits (levels without leaves: their bits are read as one integer d); from there each
     * level with a digit 1 ends the walk at d when d < n, else d −= n.
     */
    @JvmStatic
    public fun uniform(n: BigInteger, reader: BitReader): BigInteger {
        if (n.signum() <= 0) fail("uniform needs n > 0, got $n")
        if (n.bitLength() <= 62) return BigInteger.valueOf(uniform(n.toLong(), reader))
        val zeros = if (n.bitCount() == 1) n.bitLength() - 2 else n.bitLength() - 1
        var rest = BigInteger.ONE.shiftLeft(zeros) // the digits' remainder after the leading zeros
        synchronized(reader) {
            var d = reader.bigBits(zeros)
            while (true) {
                d = d.shiftLeft(1)
                if (reader.bit() == 1) d = d.setBit(0)
                rest = rest.shiftLeft(1)
                if (rest >= n) { // a digit 1: the level's leaves are the n outcomes
                    rest -= n
                    if (d < n) return d
                    d -= n
                }
            }
        }
    }

    /** True with the exact `probability` (the walk over (probability, 1 − probability)); coin(0) and coin(1) read nothing. */
    @JvmStatic
    public fun coin(probability: Fraction, reader: BitReader): Boolean = coinTable(probability).flip(reader)

    /**
     * coin(k/2^bits) (bits in [1, 64], k < 2^bits unsigned): the walk over (t, 1 − t) of [coin] with
     * the digits read off k and 2^bits − k, without a table (a rounding or discretization coin, whose
     * probability changes every report). coin(0) reads nothing.
     */
    @JvmStatic
    public fun dyadicCoin(k: Long, bits: Int, reader: BitReader): Boolean {
        if (bits !in 1..64 || (bits < 64 && k < 0) || (bits < 63 && k >= (1L shl bits))) fail("dyadicCoin needs 0 <= k < 2^bits, bits in [1, 64], got k=$k, bits=$bits")
        if (k == 0L) return false
        val rest = (if (bits == 64) 0L else 1L shl bits) - k // 2^bits − k, unsigned (2^63 and 2^64 wrap)
        synchronized(reader) {
            var d = 0L
            var j = bits - 1 // digit bits − j of t is bit j of k
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

    /** C(n, k) (cached). */
    @JvmStatic
    public fun binomial(n: Int, k: Int): BigInteger {
        if (k < 0 || k > n) return BigInteger.ZERO
        return cached(listOf("C", n, k)) {
            val j = minOf(k, n - k)
            var c = BigInteger.ONE
            for (i in 1..j) c = c * BigInteger.valueOf((n - j + i).toLong()) / BigInteger.valueOf(i.toLong())
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
        // large: the same steps in BigInteger arithmetic (the SS encoder's are faster: SubsetUnranking in ldp-client-frequency)
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

    /**
     * A uniform k-subset of [0, n), increasing: one uniform rank below C(n, k) (one walk), unranked.
     * `dev.ldp.client.mechanisms.SubsetUnranking` (ldp-client-frequency) draws the same subsets from the
     * same bits, faster for large ranks.
     */
    @JvmStatic
    public fun uniformSubset(n: Int, k: Int, reader: BitReader): IntArray {
        if (k < 0 || k > n) fail("cannot choose $k of $n")
        return unrankSubset(uniform(binomial(n, k), reader), n, k)
    }
}
