package dev.ldp.client.mechanisms

import dev.ldp.client.BitReader
import dev.ldp.client.FixedSource
import dev.ldp.client.ReportBits
import java.math.BigInteger
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals

/** SubsetUnranking (the SS encoder's unranking on limbs) against the plain steps of the `bits` spec. */
class SubsetUnrankingTest {
    private fun big(n: Long) = BigInteger.valueOf(n)

    /**
     * The plain steps of the `bits` spec in [BigInteger]s (c stepped down while C(c, i) > rank; at a member
     * rank −= C(c, i)): the members, and each member's C(c_i, i) in `parts` when given.
     */
    private fun plainUnrank(rank: BigInteger, n: Int, k: Int, parts: Array<BigInteger>? = null): IntArray {
        val members = IntArray(k)
        var r = rank
        var c = n - 1
        var binom = ReportBits.binomial(c, k)
        for (i in k downTo 1) {
            while (binom > r) { // C(c − 1, i) = C(c, i)·(c − i)/c
                binom = binom * big((c - i).toLong()) / big(c.toLong())
                c--
            }
            members[i - 1] = c
            parts?.set(i - 1, binom)
            r -= binom
            binom = if (c > 0) binom * big(i.toLong()) / big(c.toLong()) else BigInteger.ZERO // C(c − 1, i − 1)
            c--
        }
        return members
    }

    @Test
    fun theLimbsGiveThePlainStepsAtEveryRankOfSmallSizes() {
        // every rank of small (n, k): every boundary of every level
        for ((n, k) in listOf(12 to 5, 12 to 6, 9 to 1, 9 to 8, 7 to 7, 40 to 3)) {
            val count = ReportBits.binomial(n, k).toInt()
            for (r in 0 until count) {
                val rank = big(r.toLong())
                assertContentEquals(plainUnrank(rank, n, k), SubsetUnranking.unrank(SubsetUnranking.limbs(rank, n), n, k), "$n choose $k, rank $r")
            }
        }
    }

    @Test
    fun largeRanksUnrankAsThePlainSteps() {
        // 0, 1, C − 1, random ranks, and ranks at ties: with its lowest j members replaced by 0, …, j − 1 (whose
        // C(c, i) are 0), a subset's rank at each level above them is exactly C(c_i, i); and ±1 beside it
        val random = java.util.Random(28)
        for ((n, k) in listOf(1023 to 275, 1023 to 274, 1023 to 1, 1023 to 2, 1023 to 511, 1023 to 1022, 300 to 150, 64 to 32, 90 to 3, 2000 to 1000)) {
            val count = ReportBits.binomial(n, k)
            val ranks = mutableListOf(BigInteger.ZERO, BigInteger.ONE, count - BigInteger.ONE)
            repeat(4) {
                val rank = BigInteger(count.bitLength() + 8, random).mod(count)
                ranks.add(rank)
                val parts = Array(k) { BigInteger.ZERO }
                plainUnrank(rank, n, k, parts)
                val low = if (it == 0) k else random.nextInt(k + 1)
                val tie = (0 until low).fold(rank) { sum, j -> sum - parts[j] }
                ranks.add(tie)
                if (tie.signum() > 0) ranks.add(tie - BigInteger.ONE)
                if (tie + BigInteger.ONE < count) ranks.add(tie + BigInteger.ONE)
            }
            for (rank in ranks) assertContentEquals(plainUnrank(rank, n, k), SubsetUnranking.unrankSubset(rank, n, k), "$n choose $k, rank $rank")
        }
    }

    @Test
    fun largeUniformSubsetsReadTheWalksBits() {
        // on limbs: the bits ReportBits.uniformSubset reads (a rank of uniform(C(n, k))), the same subset
        for ((n, k) in listOf(1023 to 275, 1023 to 274, 100 to 50, 64 to 33)) {
            val bytes = ByteArray(4096).also { java.util.Random(n.toLong() * k).nextBytes(it) }
            val a = BitReader(FixedSource(bytes), 1)
            val b = BitReader(FixedSource(bytes), 1)
            repeat(20) {
                val members = SubsetUnranking.uniformSubset(n, k, a)
                assertContentEquals(ReportBits.uniformSubset(n, k, b), members)
                assertEquals(b.bitsRead, a.bitsRead)
            }
        }
    }
}
