package dev.ldp.client.mechanisms

import dev.ldp.client.ChiSquare
import dev.ldp.client.Claim
import dev.ldp.client.Fraction
import dev.ldp.client.Json
import dev.ldp.client.Spec
import dev.ldp.client.SpecException
import dev.ldp.client.Vectors
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/**
 * Checks the family tests of the frequency and heavy-hitter encoders share: the ε claim against the
 * exact probabilities, one-line refusals, and a Pearson test at a stated α.
 */
object FamilyChecks {
    /**
     * The significance level of each chi-square test: runs are unseeded (real `SecureRandom`), so a
     * correct encoder fails a given test once in a million runs.
     */
    const val ALPHA = 1e-6

    /** A vector spec by id. */
    fun spec(id: String): Spec = Vectors.specs.getValue(id)

    /** The canonical JSON of `spec` with `change` applied to its fields. */
    fun edited(spec: Spec, change: (MutableMap<String, Any?>) -> Unit): String {
        val fields = LinkedHashMap(Json.parseObject(spec.canonicalJson))
        change(fields)
        return Json.dump(fields)
    }

    /** `text` is refused with a one-line [SpecException] holding every word of `words`. */
    fun refused(text: String, vararg words: String) {
        val e = assertFailsWith<SpecException> { Spec.load(text) }
        for (w in words) assertTrue(w in e.message!!, e.message)
        assertTrue('\n' !in e.message!!, "one line: ${e.message}")
    }

    /**
     * The stated ε of `spec` is checked against its exact probabilities: the privacy function's ratio is
     * `exactRatio` (max over outputs y and values x, x′ of P[y|x]/P[y|x′], computed by the test from the
     * output distribution), the spec loads as it is, and is refused with ε halved (the probabilities give
     * more than it claims) or raised by 1 % (its claim no longer matches them).
     */
    fun claimIsChecked(spec: Spec, exactRatio: Fraction) {
        assertEquals(exactRatio, Claim.privacyRatio(spec.fields), "${spec.mechanism}: the privacy function's ratio")
        val epsilon = spec.fields["epsilon"] as Double
        val ln = Math.log(exactRatio.toDouble())
        assertTrue(epsilon >= ln * (1 - 1e-12), "${spec.mechanism}: ε = $epsilon below ln ratio = $ln")
        assertEquals(spec.canonicalJson, Spec.load(spec.canonicalJson).canonicalJson)
        refused(edited(spec) { it["epsilon"] = epsilon / 2 }, "claims epsilon=", "load the server's spec")
        refused(edited(spec) { it["epsilon"] = epsilon * 1.01 }, "must match them")
    }

    /** max over outputs of (max over values of P[y|x]) / (min over values of P[y|x]); rows are values, columns outputs. */
    fun worstRatio(probabilities: List<List<Fraction>>): Fraction =
        probabilities[0].indices.maxOf { y ->
            val column = probabilities.map { it[y] }
            column.max() / column.min()
        }

    /**
     * Pearson's test of `observed` against `probabilities` (summing to 1) over `n` draws at [ALPHA], with
     * df = cells − 1 − `fitted`; every expected count at least 1,000, so the χ² approximation holds.
     */
    fun assertFits(what: String, observed: LongArray, probabilities: DoubleArray, n: Int) {
        assertEquals(1.0, probabilities.sum(), 1e-9, "$what: probabilities sum to 1")
        val expected = DoubleArray(probabilities.size) { probabilities[it] * n }
        assertTrue(expected.all { it >= 1000.0 }, "$what: an expected count below 1,000: ${expected.min()}")
        assertEquals(n.toLong(), observed.sum(), "$what: every draw counted")
        val df = probabilities.size - 1
        val x = ChiSquare.statistic(observed, expected)
        val critical = ChiSquare.critical(ALPHA, df)
        assertTrue(x < critical, "$what: chi-square $x >= $critical (df $df, alpha $ALPHA); observed ${observed.toList()}")
    }
}
