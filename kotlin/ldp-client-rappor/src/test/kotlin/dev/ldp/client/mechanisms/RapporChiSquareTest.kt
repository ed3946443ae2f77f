package dev.ldp.client.mechanisms

import dev.ldp.client.ByteSources
import dev.ldp.client.ChiSquare
import dev.ldp.client.ClientState
import dev.ldp.client.Vectors
import kotlin.test.Test
import kotlin.test.assertTrue

/**
 * The instantaneous response of the real `SecureRandom` output against RAPPOR's exact probabilities.
 *
 * For one client and value the permanent response B′ is fixed, and each report bit j is an
 * independent Bernoulli(t_j) with t_j = q where B′_j = 1 and p where B′_j = 0. Over n reports the
 * counts c_j give X = Σ_j (c_j − n·t_j)² / (n·t_j·(1 − t_j)), asymptotically χ² with k = num_bits
 * degrees of freedom (a sum of k independent squared standardized binomials; n·t·(1 − t) ≥ 3,750
 * here, so the normal limit is close). The test rejects at α = 1e-6 (unseeded: a false alarm once in
 * a million runs); the critical value is [ChiSquare.critical]'s. The power check: the same counts against swapped probabilities are far beyond it.
 */
class RapporChiSquareTest {
    @Test
    fun instantaneousBitsFollowTheSpecsProbabilities() {
        val spec = Vectors.specs.getValue("rappor/md5")
        val k = spec.intValue("num_bits")
        val encoder = RapporEncoder(spec, ClientState(ByteArray(32) { it.toByte() }, 5), ByteSources.secure)
        val prr = encoder.permanentWords("hello")
        val p = spec.fraction("p").toDouble()
        val q = spec.fraction("q").toDouble()
        val n = 20_000
        val counts = IntArray(k)
        repeat(n) {
            val bits = encoder.encode("hello").bits!!
            for (j in 0 until k) if ((bits[j / 8].toInt() shr (7 - j % 8)) and 1 == 1) counts[j]++
        }
        fun statistic(one: Double, zero: Double): Double = (0 until k).sumOf { j ->
            val t = if ((prr[j ushr 6] ushr (j and 63)) and 1L == 1L) one else zero
            val expected = n * t
            (counts[j] - expected) * (counts[j] - expected) / (expected * (1 - t))
        }
        val limit = ChiSquare.critical(1e-6, k)
        assertTrue(limit > k && ChiSquare.survival(limit, k) <= 1.0001e-6, "critical value $limit")
        val x = statistic(q, p)
        assertTrue(x < limit, "chi-square $x over $k bits exceeds the alpha = 1e-6 critical value $limit")
        assertTrue(statistic(p, q) > 10 * limit, "power: swapped probabilities must be rejected")
    }
}
