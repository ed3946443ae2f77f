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
}
