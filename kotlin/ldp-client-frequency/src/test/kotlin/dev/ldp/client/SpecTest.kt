package dev.ldp.client

import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/** Loading specs: what is refused, and with which message. */
class SpecTest {
    private val grr = Vectors.specs.getValue("grr/str")

    private fun refused(text: String, vararg words: String) {
        val e = assertFailsWith<SpecException> { Spec.load(text) }
        for (w in words) assertTrue(w in e.message!!, e.message)
        assertTrue('\n' !in e.message!!, "one line: ${e.message}")
    }

    private fun edited(change: (MutableMap<String, Any?>) -> Unit): String {
        val fields = LinkedHashMap(Json.parseObject(grr.canonicalJson))
        change(fields)
        return Json.dump(fields)
    }

    @Test
    fun anUnknownMechanismIsRefused() = refused("""{"mechanism":"nope","epsilon":1.0}""", "unknown mechanism", "nope")

    @Test
    fun anUnknownFieldIsRefused() = refused(edited { it["colour"] = "red" }, "unknown fields", "colour")

    @Test
    fun anotherFormatIsRefused() = refused(edited { it["format"] = 2 }, "format 2")

    @Test
    fun aStatedEpsilonBelowTheProbabilitiesIsRefused() =
        refused(edited { it["epsilon"] = (it["epsilon"] as Double) / 2 }, "claims epsilon=", "load the server's spec")

    @Test
    fun aStatedEpsilonAboveTheProbabilitiesIsRefused() =
        refused(edited { it["epsilon"] = (it["epsilon"] as Double) * 1.01 }, "must match them")

    @Test
    fun anEpsilonAboveTheMechanismsLimitIsRefused() =
        refused("""{"mechanism":"grr","domain":[1,2],"epsilon":30.0,"p":"3/4"}""", "above 23", "largest epsilon grr supports")

    @Test
    fun aProbabilityOutsideItsRangeIsRefused() = refused(edited { it["p"] = "3/2" }, "p must be in [0, 1]")

    @Test
    fun aDomainWithDuplicatesIsRefused() = refused(edited { it["domain"] = listOf("a", "a") }, "duplicate")

    @Test
    fun binaryRrNeedsTwoValues() =
        refused("""{"mechanism":"binary-rr","domain":[1,2,3],"epsilon":1.0,"p":"3/4"}""", "exactly 2 values")

    @Test
    fun anEtagIsAnExpectedFingerprint() {
        assertEquals(grr.fingerprint, Spec.load(grr.canonicalJson, "W/\"${grr.fingerprint.uppercase()}\"").fingerprint)
        assertEquals(grr.fingerprint, Spec.load(grr.canonicalJson).fingerprint) // no expected fingerprint: not checked
    }

    @Test
    fun aMalformedExpectedFingerprintIsRefused() {
        val e = assertFailsWith<SpecException> { Spec.load(grr.canonicalJson, "xyz") }
        assertTrue("not 16 hex digits" in e.message!!, e.message)
    }

    @Test
    fun theFieldsOfALoadedSpecCannotBeChanged() {
        @Suppress("UNCHECKED_CAST")
        assertFailsWith<UnsupportedOperationException> { (grr.fields as MutableMap<String, Any?>)["p"] = "1/2" }
    }

    @Test
    fun aMechanismNameIsCaseAndSeparatorInsensitive() {
        assertEquals("binary-rr", Spec.mechanismName(" Binary_RR "))
    }
}
