package dev.ldp.client

import java.math.BigInteger
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertNull
import kotlin.test.assertTrue

/** The per-report samplers (ReportBits.kt) against their definitions (tests/vectors/README.md, "`bits`"). */
class ReportBitsTest {
    private fun big(n: Long) = BigInteger.valueOf(n)

    private fun frac(text: String) = Fraction.parse(text)

    private fun ky(vararg groups: Pair<Long, Fraction>) = KnuthYao(groups.map { it.first }, groups.map { it.second })

    /** One walk as (group, member). */
    private fun KnuthYao.outcome(reader: BitReader): Pair<Int, Long> {
        val member = LongArray(1)
        val group = walk(reader, member)
        return group to member[0]
    }

    private fun lanes(width: Int, groups: List<LaneGroup>, reader: BitReader): BigInteger = Samplers.wordsToLanes(
        RunSampler(width, groups.map { it.probability }).sample(Array(groups.size) { Samplers.lanesToWords(groups[it].mask, width) }, reader),
    )

    /** The first `bits` binary digits of p, as a fraction (what a walk decided within `bits` bits gives). */
    private fun truncated(p: Fraction, bits: Int): Fraction {
        val scale = BigInteger.ONE.shiftLeft(bits)
        return Fraction.of(p.num * scale / p.den, scale)
    }

    @Test
    fun theWalkIsExactOverEveryBitString() {
        // every 16-bit string, each reached with probability 2^-16: outcome (g, m) must come for exactly
        // the first 16 binary digits of its probability (the strings it has not decided run out of bytes)
        val bits = 16
        val distributions = listOf(
            listOf(3L to frac("1/3")),
            listOf(5L to frac("1/5")),
            listOf(1L to frac("1/3"), 2L to frac("1/6"), 1L to frac("1/3")),
            listOf(1L to frac("3/7"), 0L to frac("1/2"), 2L to frac("2/7"), 4L to frac("0")),
            listOf(2L to frac("1/4"), 1L to frac("1/2")), // dyadic: every string decides
            listOf(1000L to frac("1/1000")),
        )
        for (groups in distributions) {
            val table = ky(*groups.toTypedArray())
            val hits = HashMap<Pair<Int, Long>, Long>()
            var undecided = 0L
            for (s in 0 until (1 shl bits)) {
                val reader = BitReader(FixedSource(byteArrayOf((s ushr 8).toByte(), s.toByte())), 1)
                try {
                    hits.merge(table.outcome(reader), 1L, Long::plus)
                } catch (e: LdpException) {
                    undecided++
                }
            }
            var decided = Fraction.ZERO
            for ((g, group) in groups.withIndex()) {
                for (m in 0 until group.first) {
                    val want = truncated(group.second, bits)
                    val got = Fraction.of(big(hits[g to m] ?: 0L), big(1L shl bits))
                    assertEquals(want, got, "$groups: outcome ($g, $m)")
                    decided += want
                }
            }
            assertEquals(Fraction.ONE - decided, Fraction.of(big(undecided), big(1L shl bits)), "$groups: undecided strings")
        }
    }

    @Test
    fun theLargeWalkDrawsWhatTheSmallOneDraws() {
        // 2^70 outcomes run in BigInteger arithmetic: each group's members split as a small table's
        val n = BigInteger.ONE.shiftLeft(70)
        val bytes = ByteArray(90) { (it * 37 + 11).toByte() }
        val reader = BitReader(FixedSource(bytes), 1)
        val member = ReportBits.uniform(n, reader)
        assertEquals(70L, reader.bitsRead) // a power of two: exactly its bits
        assertEquals(BigInteger(1, bytes.copyOfRange(0, 9)).shiftRight(2), member)
        val three = n.multiply(big(3))
        repeat(20) { assertTrue(ReportBits.uniform(three, BitReader(FixedSource(ByteArray(64) { b -> (b * it + 5).toByte() }), 1)) < three) }
        assertFailsWith<LdpException> { ky((1L shl 62) + 1 to Fraction.of(BigInteger.ONE, BigInteger.ONE.shiftLeft(62) + BigInteger.ONE)) }
        assertFailsWith<LdpException> { ky(3L to frac("1/4"), 1L shl 62 to Fraction.of(BigInteger.ONE, BigInteger.ONE.shiftLeft(64))) }
    }

    @Test
    fun theDocExamplesOfThePythonModule() {
        // KnuthYao([(3, 1/3)]) on bits 1, 0: member 2 of 3, two bits read
        val third = ky(3L to frac("1/3"))
        val reader = BitReader(ByteSource { n -> ByteArray(n) { 0b10010000.toByte() } }, 1)
        assertEquals(0 to 2L, third.outcome(reader))
        assertEquals(2L, reader.bitsRead)
        // unrank_subset(r, 4, 2) for r in range(6)
        val expected = listOf(intArrayOf(0, 1), intArrayOf(0, 2), intArrayOf(1, 2), intArrayOf(0, 3), intArrayOf(1, 3), intArrayOf(2, 3))
        for (r in 0 until 6) assertContentEquals(expected[r], ReportBits.unrankSubset(big(r.toLong()), 4, 2))
    }

    @Test
    fun certainDrawsReadNothing() {
        val empty = FixedSource(ByteArray(0))
        val reader = BitReader(empty, 1)
        assertEquals(0L, ReportBits.uniform(1L, reader))
        assertEquals(BigInteger.ZERO, ReportBits.uniform(BigInteger.ONE, reader))
        assertEquals(-1, ky(1L to frac("1/2"), 1L to frac("1/2")).certainGroup)
        assertFalse(ReportBits.coin(Fraction.ZERO, reader))
        assertTrue(ReportBits.coin(Fraction.ONE, reader))
        assertContentEquals(intArrayOf(0, 1, 2), ReportBits.uniformSubset(3, 3, reader))
        assertContentEquals(IntArray(0), ReportBits.uniformSubset(3, 0, reader))
        val all = LongArray(1) { 0b1011L }
        val lanes = RunSampler(4, listOf(Fraction.ONE, Fraction.ZERO)).sample(arrayOf(all, longArrayOf(0b0100L)), reader)
        assertContentEquals(longArrayOf(0b1011L), lanes)
        assertEquals(0L, reader.bitsRead)
        assertEquals(emptyList(), empty.reads)
        assertEquals(1, ky(1L to Fraction.ZERO, 1L to Fraction.ONE).certainGroup)
    }

    @Test
    fun leftoverBitsCarryToTheNextDraw() {
        // byte 1011 0110: coins of 1/2 read one bit each (true on 0), then uniform(4) reads two bits a draw
        val source = FixedSource(byteArrayOf(0b10110110.toByte(), 0b01000000))
        val reader = ReportBits.reader(source)
        val half = frac("1/2")
        assertEquals(listOf(false, true, false, false), List(4) { ReportBits.coin(half, ReportBits.reader(source)) })
        assertEquals(listOf(1), source.reads)
        assertEquals(1L, ReportBits.uniform(4L, reader)) // bits 0, 1
        assertEquals(2L, ReportBits.uniform(4L, reader)) // bits 1, 0: the last of byte 1, no new read
        assertEquals(listOf(1), source.reads)
        assertEquals(1L, ReportBits.uniform(4L, reader)) // bits 0, 1 of byte 2
        assertEquals(listOf(1, 1), source.reads)
        assertEquals(8L + 2L, reader.bitsRead)
        assertTrue(ReportBits.reader(source) === reader)
        assertFalse(ReportBits.reader(FixedSource(ByteArray(1))) === reader) // a new source starts fresh
    }

    @Test
    fun aPooledSourceServesItsBytesMostSignificantBitFirst() {
        var next = 0
        val pooled = PooledSource(128) { out -> for (i in out.indices) out[i] = (next++).toByte() }
        val reader = ReportBits.reader(pooled)
        assertTrue(ReportBits.reader(pooled) === reader)
        val served = ByteArray(200) { b -> var x = 0; repeat(8) { x = (x shl 1) or reader.bit() }; x.toByte() }
        // 64 bytes at a time from a pool of 128: bytes 0..127, then the next block from 128
        assertContentEquals(ByteArray(200) { it.toByte() }, served)
        // a byte read of the pool never serves bytes the reader holds (it took 0..255): a new block
        assertEquals(256, next)
        assertEquals(0, pooled.read(1)[0].toInt())
        assertEquals(384, next)
        assertEquals(1600L, reader.bitsRead)
    }

    @Test
    fun coinsAndUniformsFollowTheWalk() {
        // coin(1/3): 1/3 = .0101…, 2/3 = .1010…: level 1 holds only 2/3's leaf: bit 0 → false; bits 1, 0 →
        // d = 0 at level 2, 1/3's leaf → true
        val reader = BitReader(FixedSource(byteArrayOf(0b01010000)), 1)
        val third = frac("1/3")
        assertFalse(ReportBits.coin(third, reader))
        assertTrue(ReportBits.coin(third, reader))
        assertEquals(3L, reader.bitsRead)
        // uniform(3): no leaf at level 1, three at level 2: bits 1, 0 → d = 2
        assertEquals(2L, ReportBits.uniform(3L, reader))
        assertEquals(5L, reader.bitsRead)
    }

    @Test
    fun lanesAreRunsOfTheLikelierSymbol() {
        // t = 1/2: run k has probability 2^-(k+1), the only leaf of level k + 1: bits 0 → run 0, 10 → run 1
        val source = FixedSource(byteArrayOf(0b10100100.toByte(), 0b11000000.toByte()))
        val reader = BitReader(source, 1)
        val lanes = lanes(8, listOf(LaneGroup(big(0xff), frac("1/2"))), reader)
        // 10 → lane 0 = 0, lane 1 = 1; 10 → lanes 2, 3 = 0, 1; 0 → lane 4 = 1; 10 → lanes 5, 6 = 0, 1; 0 → lane 7 = 1
        assertEquals(big(0b11011010), lanes)
        assertEquals(8L, reader.bitsRead)
        assertEquals(listOf(1), source.reads)
        // t = 3/4 > 1/2: the rarer symbol is 0 with s = 1/4; masks split by group, lanes in increasing order
        val r2 = BitReader(FixedSource(ByteArray(64) { (it * 101 + 7).toByte() }), 1)
        val r3 = BitReader(FixedSource(ByteArray(64) { (it * 101 + 7).toByte() }), 1)
        val mask = big(0b1011_0110_1101)
        val direct = lanes(12, listOf(LaneGroup(mask, frac("3/4"))), r2)
        assertEquals(direct, direct.and(mask))
        // drawing the complement's lanes by hand: walk the run table of 1/4 over the mask's lanes
        val table = ReportBits.runTable(frac("1/4"))
        val laneList = (0 until 12).filter { mask.testBit(it) }
        var want = mask
        var pos = 0
        while (pos < laneList.size) {
            val run = table.walk(r3, null)
            pos += run
            if (run < ReportBits.RUN_CAP) {
                if (pos < laneList.size) want = want.clearBit(laneList[pos])
                pos++
            }
        }
        assertEquals(want, direct)
        assertEquals(r3.bitsRead, r2.bitsRead)
    }

    @Test
    fun theRunTableSumsToOneAndCapsRuns() {
        val table = ReportBits.runTable(frac("1/1000"))
        // bits all 1: the deepest-first path; bits all 0 go to the longest runs: the cap comes
        val reader = BitReader(ByteSource { n -> ByteArray(n) }, 1)
        assertEquals(ReportBits.RUN_CAP, table.walk(reader, null))
        assertFailsWith<LdpException> { ky(1L to frac("1/2"), 1L to frac("1/3")) }
        assertFailsWith<LdpException> { ky(-1L to frac("1/2"), 3L to frac("1/2")) }
        assertFailsWith<LdpException> { ReportBits.uniform(0L, reader) }
    }

    @Test
    fun subsetsUnrankInColexOrderAtEverySize() {
        for ((n, k) in listOf(5 to 2, 7 to 3, 6 to 6, 4 to 1)) {
            val seen = HashSet<List<Int>>()
            val count = ReportBits.binomial(n, k).toInt()
            var previous: List<Int>? = null
            for (r in 0 until count) {
                val s = ReportBits.unrankSubset(big(r.toLong()), n, k).toList()
                assertEquals(k, s.size)
                assertEquals(s.sorted(), s)
                assertTrue(s.all { it in 0 until n })
                var rank = BigInteger.ZERO
                for ((i, c) in s.withIndex()) rank += ReportBits.binomial(c, i + 1)
                assertEquals(big(r.toLong()), rank)
                assertTrue(seen.add(s))
                previous = s
            }
            assertEquals(count, seen.size, "$n choose $k, last $previous")
        }
        // the BigInteger path (C(1024, 275) is far above 2^62) against the definition
        val n = 1024
        val k = 275
        val reader = BitReader(ByteSource { m -> ByteArray(m) { (it * 73 + 19).toByte() } }, 1)
        val rank = ReportBits.uniform(ReportBits.binomial(n, k), reader)
        val members = ReportBits.unrankSubset(rank, n, k)
        var back = BigInteger.ZERO
        for ((i, c) in members.withIndex()) back += ReportBits.binomial(c, i + 1)
        assertEquals(rank, back)
        assertFailsWith<LdpException> { ReportBits.unrankSubset(ReportBits.binomial(4, 2), 4, 2) }
    }

    @Test
    fun bitsServeWhatBitServes() {
        // bits(count) serves what count calls of bit() serve
        val bytes = ByteArray(64).also { java.util.Random(9).nextBytes(it) }
        val a = BitReader(FixedSource(bytes), 1)
        val b = BitReader(FixedSource(bytes), 1)
        for (count in listOf(1, 7, 32, 3, 31, 17, 32, 1, 8, 32)) {
            var expected = 0L
            repeat(count) { expected = 2 * expected + b.bit() }
            assertEquals(expected, a.bits(count))
            assertEquals(b.bitsRead, a.bitsRead)
        }
    }

    @Test
    fun dyadicCoinsWalkAsTheirTables() {
        // coin(k/2^bits) without a table reads the bits coin(Fraction) reads and gives the same answer
        val random = java.util.Random(53)
        for (bits in listOf(1, 2, 7, 53, 62, 63, 64)) {
            repeat(200) {
                val k = if (bits == 64) random.nextLong() else random.nextLong() ushr (64 - bits)
                val bytes = ByteArray(16).also { random.nextBytes(it) }
                val a = BitReader(FixedSource(bytes), 1)
                val b = BitReader(FixedSource(bytes), 1)
                val p = Fraction.of(BigInteger(java.lang.Long.toUnsignedString(k)), BigInteger.ONE.shiftLeft(bits))
                assertEquals(ReportBits.coin(p, b), ReportBits.dyadicCoin(k, bits, a), "k=$k bits=$bits")
                assertEquals(b.bitsRead, a.bitsRead)
            }
        }
        assertFalse(ReportBits.dyadicCoin(0, 53, BitReader(FixedSource(ByteArray(0)), 1)))
        assertFailsWith<LdpException> { ReportBits.dyadicCoin(1L shl 53, 53, BitReader(FixedSource(ByteArray(1)), 1)) }
    }

    @Test
    fun anySourceHasOneReaderWhileItIsHeld() {
        val source = ByteSource { n -> ByteArray(n) { 0x5a } }
        val reader = ReportBits.reader(source)
        assertTrue(ReportBits.reader(source) === reader)
        assertFalse(ReportBits.reader(ByteSource { n -> ByteArray(n) }) === reader)
        val pooled = PooledSource(64) { it.fill(1) }
        assertTrue(ReportBits.reader(pooled) === ReportBits.reader(pooled))
    }
}
