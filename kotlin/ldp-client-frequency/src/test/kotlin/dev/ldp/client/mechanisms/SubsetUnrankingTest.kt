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

    /** [body] with the pending products below 2^62 (`Math.multiplyHigh`, when this runtime has it) and below 2^32. */
    private fun bothWidths(body: (String) -> Unit) {
        val before = SubsetUnranking.wide
        try {
            for (wide in listOf(true, false)) {
                SubsetUnranking.wide = wide
                body(if (wide) "wide" else "narrow")
            }
        } finally {
            SubsetUnranking.wide = before
        }
    }

    @Test
    fun theLimbsGiveThePlainStepsAtEveryRankOfSmallSizes() {
        // every rank of small (n, k): every boundary of every level (c = 2i among them: a step whose factor c − i is i)
        bothWidths { width ->
            for ((n, k) in listOf(12 to 5, 12 to 6, 9 to 1, 9 to 8, 7 to 7, 40 to 3, 16 to 8, 20 to 10)) {
                val count = ReportBits.binomial(n, k).toInt()
                for (r in 0 until count) {
                    val rank = big(r.toLong())
                    assertContentEquals(plainUnrank(rank, n, k), SubsetUnranking.unrank(SubsetUnranking.limbs(rank, n), n, k), "$width: $n choose $k, rank $r")
                }
            }
        }
    }

    @Test
    fun largeRanksUnrankAsThePlainSteps() = bothWidths { width -> largeRanks(width, 28, 4) }

    @Test
    fun manyRandomRanksAtTheSubsetSelectionSizes() = bothWidths { width ->
        // the batches decided in doubles ahead of the limbs (up to STAGES members a pass), over many ranks
        val random = java.util.Random(5)
        for (k in listOf(275, 274, 100, 511)) {
            val count = ReportBits.binomial(1023, k)
            repeat(150) {
                val rank = BigInteger(count.bitLength() + 8, random).mod(count)
                assertContentEquals(plainUnrank(rank, 1023, k), SubsetUnranking.unrankSubset(rank, 1023, k), "$width: 1023 choose $k, rank $rank")
            }
        }
    }

    /**
     * 0, 1, C − 1, random ranks, and ranks at ties: with its lowest j members replaced by 0, …, j − 1 (whose
     * C(c, i) are 0), a subset's rank at each level above them is exactly C(c_i, i); and ±1 beside it (a
     * remainder of 1 far below C(c, i): past n ≈ 1,700 beyond the doubles, compared exactly).
     */
    private fun largeRanks(width: String, seed: Long, each: Int) {
        val random = java.util.Random(seed)
        for ((n, k) in listOf(1023 to 275, 1023 to 274, 1023 to 1, 1023 to 2, 1023 to 511, 1023 to 1022, 300 to 150, 64 to 32, 90 to 3, 2000 to 1000, 2500 to 600)) {
            val count = ReportBits.binomial(n, k)
            val ranks = mutableListOf(BigInteger.ZERO, BigInteger.ONE, count - BigInteger.ONE)
            repeat(each) {
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
            for (rank in ranks) assertContentEquals(plainUnrank(rank, n, k), SubsetUnranking.unrankSubset(rank, n, k), "$width: $n choose $k, rank $rank")
        }
    }

    @Test
    fun largeUniformSubsetsReadTheWalksBits() {
        // on limbs: the bits ReportBits.uniformSubset reads (a rank of uniform(C(n, k))), the same subset
        for ((n, k) in listOf(1023 to 275, 1023 to 274, 100 to 50, 64 to 33)) { // (the pending products' width as this runtime has it)
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
