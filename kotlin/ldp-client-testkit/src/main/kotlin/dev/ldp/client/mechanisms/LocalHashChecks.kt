package dev.ldp.client.mechanisms

import dev.ldp.client.Fraction
import dev.ldp.client.hashing.LH_PRIME
import dev.ldp.client.hashing.LH_SEED_SPACE
import dev.ldp.client.hashing.lhBucket

/** The distribution checks of local-hashing reports, shared by OLH/BLH (core) and PEM/TreeHist (heavy hitters). */
object LocalHashChecks {
    /** How many of the P residues fall in bucket c of g: ⌈(c + 1)P/g⌉ − ⌈cP/g⌉. */
    fun bucketSize(c: Long, g: Long): Long = ceilDiv((c + 1) * LH_PRIME, g) - ceilDiv(c * LH_PRIME, g)

    private fun ceilDiv(a: Long, b: Long): Long = (a + b - 1) / b

    /** The seeds' cells: [c·w, (c + 1)·w) with w = ⌈(P − 1)P/16⌉, the last one shorter. */
    private val SIXTEENTH = ceilDiv(LH_SEED_SPACE, 16)

    /**
     * Pearson's test of local-hashing reports: the cells (true bucket h_seed(x) in one of ≤ 8 groups, the
     * reported bucket's offset y − h_seed(x) mod g: 0, or one of ≤ 8 groups of the others). For a uniform
     * seed, a·x + b is a uniform residue, so the true bucket c has probability size(c)/P exactly
     * ([bucketSize]); the offset is 0 with p and each other with q = (1 − p)/(g − 1), independently. Then
     * the seed's sixteenth of [0, (P − 1)P) (cells of ⌈(P − 1)P/16⌉ seeds): uniform, with the exact counts. α = 1e-6 each. Each report
     * is (seed, reported bucket, the hashed input: the value's domain index or prefix key).
     */
    fun assertHashedReportsFit(what: String, g: Long, p: Fraction, reports: List<Triple<Long, Long, Long>>) {
        val n = reports.size
        val pd = p.toDouble()
        val q = (1 - pd) / (g - 1)
        val hGroups = minOf(g, 8L).toInt()
        val oGroups = minOf(g - 1, 8L).toInt()
        fun hGroup(c: Long) = (c * hGroups / g).toInt()
        fun oGroup(o: Long) = if (o == 0L) 0 else 1 + ((o - 1) * oGroups / (g - 1)).toInt()
        val hProb = DoubleArray(hGroups)
        for (c in 0 until g) hProb[hGroup(c)] += bucketSize(c, g).toDouble() / LH_PRIME
        val oProb = DoubleArray(oGroups + 1)
        for (o in 0 until g) oProb[oGroup(o)] += if (o == 0L) pd else q
        val cells = LongArray(hGroups * (oGroups + 1))
        val seeds = LongArray(16)
        for ((seed, y, input) in reports) {
            val h = lhBucket(seed, input, g).toLong()
            cells[hGroup(h) * (oGroups + 1) + oGroup(Math.floorMod(y - h, g))]++
            seeds[(seed / SIXTEENTH).toInt()]++
        }
        val probs = DoubleArray(cells.size) { hProb[it / (oGroups + 1)] * oProb[it % (oGroups + 1)] }
        FamilyChecks.assertFits("$what (true bucket, offset)", cells, probs, n)
        val sixteenth = DoubleArray(16) { c -> (minOf((c + 1) * SIXTEENTH, LH_SEED_SPACE) - c * SIXTEENTH).toDouble() / LH_SEED_SPACE }
        FamilyChecks.assertFits("$what seeds", seeds, sixteenth, n)
    }
}
