package dev.ldp.client

import java.math.BigInteger
import java.security.SecureRandom
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/** The byte sources and the fast paths of the samplers, against their definitions. */
class RandomTest {
    private val random = SecureRandom()

    private fun randomBytes(n: Int) = ByteArray(n).also { random.nextBytes(it) }

    /** randbelow as the vectors README defines it, in BigInteger arithmetic. */
    private fun reference(n: BigInteger, source: ByteSource): BigInteger {
        val k = n.bitLength()
        val nbytes = (k + 7) / 8
        while (true) {
            val r = BigInteger(1, source.read(nbytes)).shiftRight(8 * nbytes - k)
            if (r < n) return r
        }
    }

    @Test
    fun everyPathOfUniformBelowDrawsWhatTheDefinitionDraws() {
        val bounds = listOf(1, 2, 3, 7, 255, 256, 257, 62, 63, 64, 65, 100, 126, 127, 128, 200).flatMap { bits ->
            listOf(BigInteger.ONE.shiftLeft(bits), BigInteger.ONE.shiftLeft(bits) - BigInteger.ONE, BigInteger(bits, random).add(BigInteger.ONE))
        }
        for (n in bounds.filter { it.signum() > 0 }) {
            // 50 draws accept with probability > 1/2 each: 16 tries per draw on average would be 8x the
            // expected need, so running out (fewer than 50 acceptances in 800 tries) has probability < 2^-400
            val bytes = randomBytes(800 * ((n.bitLength() + 7) / 8))
            val a = FixedSource(bytes)
            val b = FixedSource(bytes)
            val uniform = UniformBelow(n)
            repeat(50) { assertEquals(reference(n, b), uniform.draw(a), "n = $n") }
            assertEquals(b.reads, a.reads, "n = $n")
        }
    }

    @Test
    fun randomizedResponseSlicesAsTheDefinition() {
        // keep with keep/den, else the other index o (skipping the true one) with r − keep in slice o of size other
        for ((p, n) in listOf(
            Fraction.parse("3/5") to 3L,
            Fraction.parse("2579851567123676007/9223372036854775808") to 8L,
            Fraction.parse("14517330109336599765/18446744073709551616") to 3L,
            Fraction.parse("9/10") to 1000L,
            Fraction.of(BigInteger.ONE.shiftLeft(64) - BigInteger.ONE, BigInteger.ONE.shiftLeft(64)) to 2L,
        )) {
            val q = (Fraction.ONE - p).divInt(BigInteger.valueOf(n - 1))
            val den = Fraction.lcm(p.den, q.den)
            val keep = p.num * (den / p.den)
            val other = q.num * (den / q.den)
            val rr = RandomizedResponse(p, BigInteger.valueOf(n))
            val bytes = randomBytes(20000)
            val a = FixedSource(bytes)
            val b = FixedSource(bytes)
            repeat(300) { i ->
                val index = (i % n).toInt()
                val r = reference(den, b)
                val expected = if (r < keep) index else ((r - keep) / other).toInt().let { if (it >= index) it + 1 else it }
                assertEquals(expected, rr.respond(index, a), "p = $p, n = $n")
            }
        }
    }

    @Test
    fun aPooledSourceServesEachByteOnceAndDropsTheRestOfABlock() {
        val served = ArrayList<Byte>()
        var filled = 0
        val source = PooledSource(8) { out -> for (i in out.indices) out[i] = (filled * 8 + i).toByte(); filled++ }
        for (n in listOf(3, 3, 3, 8, 20, 1)) served.addAll(source.read(n).toList())
        // block 0 serves 0..2 and 3..5, its 6 and 7 are dropped; block 1 serves 8..10; block 2 serves 16..23;
        // the 20-byte read bypasses the pool (a 4th fill); the last byte comes from a 5th fill
        assertEquals((0..5).map { it.toByte() } + (8..10).map { it.toByte() } + (16..23).map { it.toByte() }, served.subList(0, 17))
        assertEquals(20 + 1, served.size - 17)
        assertEquals(5, filled)
    }

    @Test
    fun aPooledSourceReturnsCopiesAndRefusesABadBlockSize() {
        val source = PooledSource(16) { out -> out.fill(7) }
        val first = source.read(4)
        first.fill(0)
        assertContentEquals(ByteArray(4) { 7 }, source.read(4))
        assertFailsWith<LdpException> { PooledSource(0) }
    }

    @Test
    fun theSharedSecureSourceIsSafeUnderConcurrentThreads() {
        val threads = (1..4).map { Thread { repeat(10000) { assertEquals(13, ByteSources.secure.read(13).size) } } }
        threads.forEach { it.start() }
        threads.forEach { it.join() }
    }

    @Test
    fun aFixedSourceRecordsItsReadsAndRefusesToReadPastItsEnd() {
        val source = FixedSource(Bytes.fromHex("00010203"))
        assertContentEquals(Bytes.fromHex("0001"), source.read(2))
        assertEquals(listOf(2), source.reads)
        assertEquals(2, source.remaining)
        val e = assertFailsWith<LdpException> { source.read(3) }
        assertTrue("used up" in e.message!!)
    }

    @Test
    fun shake256IsTheStandardsAndReadsAsOneStream() {
        // SHAKE-256 of the empty string begins 46b9dd2b0ba88d13 (FIPS 202 test vectors)
        val stream = BouncyCastleShake256.stream(ByteArray(0))
        assertEquals("46b9dd2b", Bytes.toHex(stream.read(4)))
        assertEquals("0ba88d13", Bytes.toHex(stream.read(4)))
        assertEquals("0000000161", Bytes.toHex(prfInput(Bytes.utf8("a")))) // each part: its length as 4 bytes big-endian, then it
    }

    /** The lane sampler as the vectors README defines it: lane by lane, digit by digit, in BigInteger arithmetic. */
    private fun referenceLanes(width: Int, masks: List<BigInteger>, probabilities: List<Fraction>, source: ByteSource): BigInteger {
        if (width == 0) return BigInteger.ZERO
        val nbytes = (width + 7) / 8
        val planes = ArrayList<BigInteger>()
        var block = ByteArray(0)
        var offset = 0
        fun plane(r: Int): BigInteger {
            while (planes.size <= r) {
                if (offset == block.size) {
                    block = source.read(nbytes * 12)
                    offset = 0
                }
                planes.add(BigInteger(1, block.copyOfRange(offset, offset + nbytes).reversedArray())) // little-endian
                offset += nbytes
            }
            return planes[r]
        }
        var lanes = BigInteger.ZERO
        for (i in 0 until width) {
            val j = masks.indexOfFirst { it.testBit(i) }
            val p = if (j < 0) Fraction.ZERO else probabilities[j]
            var num = p.num
            var r = 0
            while (true) {
                num = num.shiftLeft(1)
                val t = num >= p.den
                if (t) num -= p.den
                val u = plane(r).testBit(i)
                if (u != t) {
                    if (t) lanes = lanes.setBit(i)
                    break
                }
                r++
            }
        }
        return lanes
    }

    @Test
    fun theLaneSamplerDrawsWhatTheDefinitionDraws() {
        val probabilities = listOf(Fraction.of(1, 2), Fraction.of(3, 4), Fraction.of(1, 3), Fraction.parse("4961093570831984269/18446744073709551616"), Fraction.ZERO, Fraction.ONE)
        for (width in listOf(0, 1, 7, 8, 9, 63, 64, 65, 127, 128, 129, 200, 1024)) {
            repeat(20) {
                val k = 1 + random.nextInt(3)
                val probs = List(k) { probabilities[random.nextInt(probabilities.size)] }
                val owner = IntArray(width) { random.nextInt(k + 1) } // k: in no group
                val masks = List(k) { j -> (0 until width).filter { owner[it] == j }.fold(BigInteger.ZERO) { m, i -> m.setBit(i) } }
                val bytes = randomBytes(60_000)
                val a = FixedSource(bytes)
                val b = FixedSource(bytes)
                val c = FixedSource(bytes)
                val expected = referenceLanes(width, masks, probs, b)
                val sampler = LaneSampler(width, probs)
                val words = sampler.sample(Array(k) { Samplers.lanesToWords(masks[it], width) }, a)
                assertEquals(expected, Samplers.wordsToLanes(words), "width $width")
                assertEquals(b.reads, a.reads, "width $width")
                assertEquals(expected, Samplers.sampleLanes(width, List(k) { LaneGroup(masks[it], probs[it]) }, c), "width $width")
                assertEquals(b.reads, c.reads, "width $width")
            }
        }
    }

    @Test
    fun theLaneSamplerContinuesPastItsDigitTable() {
        // one lane with t = 1/3 = 0.010101...: planes that repeat t's digits for 130 rounds, then differ
        val p = Fraction.of(1, 3)
        val planes = ByteArray(12 * 12) { r -> if (r < 130) (r % 2).toByte() else (1 - r % 2).toByte() }
        val a = FixedSource(planes)
        val b = FixedSource(planes)
        val expected = referenceLanes(1, listOf(BigInteger.ONE), listOf(p), b)
        assertEquals(expected, Samplers.wordsToLanes(LaneSampler(1, listOf(p)).sample(arrayOf(longArrayOf(1L)), a)))
        assertEquals(b.reads, a.reads)
        assertEquals(11, a.reads.size) // decided at round 130: 131 planes, 11 blocks of 12
    }

    @Test
    fun aLaneSamplerRefusesTheWrongNumberOfMasks() {
        val sampler = LaneSampler(8, listOf(Fraction.of(1, 2), Fraction.of(1, 4)))
        assertFailsWith<LdpException> { sampler.sample(arrayOf(longArrayOf(1L)), FixedSource(ByteArray(12))) }
    }
}
