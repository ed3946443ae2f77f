package dev.ldp.client

import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/**
 * ldp-client-core alone on the class path (this module's tests): it encodes no mechanism of its own (the
 * frequency oracles are ldp-client-frequency's), and a spec of any family is refused with one line naming the
 * artifact to add (the family artifacts' tests, and ldp-client-tests with every artifact, check
 * [Registry.ARTIFACTS]).
 */
class FamiliesTest {
    @Test
    fun coreAloneEncodesNoMechanism() {
        assertEquals(emptyList(), Registry.ENCODED)
        assertEquals(emptyList(), PrivacyRegistry.CHECKED)
        assertTrue("ldp-client-core" !in Registry.ARTIFACTS.values, Registry.ARTIFACTS.toString())
    }

    @Test
    fun everyRegisteredMechanismNamesItsArtifact() {
        assertEquals(SpecFields.FIELDS.keys.toList(), Registry.ARTIFACTS.keys.toList())
        val artifacts = Registry.ARTIFACTS.values.toSet()
        assertEquals(
            setOf(
                "ldp-client-frequency", "ldp-client-rappor", "ldp-client-numeric", "ldp-client-heavyhitters", "ldp-client-longitudinal",
                "ldp-client-keyvalue", "ldp-client-multiattribute",
            ),
            artifacts,
        )
    }

    @Test
    fun aSpecWhoseArtifactIsMissingIsRefusedNamingTheArtifact() {
        val pem = """{"mechanism": "pem", "domain": ["a", "b", "c", "d"], "epsilon": 1.0}"""
        val e = assertFailsWith<SpecException> { Spec.load(pem) }
        assertEquals(
            "pem: its encoder is in the artifact dev.ldp:ldp-client-heavyhitters, which is not on the class path: " +
                "add it to the app's dependencies",
            e.message,
        )
        val duchi = """{"mechanism": "duchi", "epsilon": 1.0}"""
        val d = assertFailsWith<SpecException> { Spec.load(duchi) }
        assertTrue("dev.ldp:ldp-client-numeric" in d.message!!, d.message)
        val grr = """{"mechanism": "grr", "domain": ["a", "b"], "epsilon": 1.0}"""
        val g = assertFailsWith<SpecException> { Spec.load(grr) }
        assertEquals(
            "grr: its encoder is in the artifact dev.ldp:ldp-client-frequency, which is not on the class path: " +
                "add it to the app's dependencies",
            g.message,
        )
        val rappor = """{"mechanism": "rappor", "domain": ["a", "b"], "epsilon": 1.0}"""
        val r = assertFailsWith<SpecException> { Spec.load(rappor) }
        assertEquals(
            "rappor: its encoder is in the artifact dev.ldp:ldp-client-rappor, which is not on the class path: " +
                "add it to the app's dependencies",
            r.message,
        )
    }

    @Test
    fun anUnknownMechanismIsStillAnUnknownMechanism() {
        val e = assertFailsWith<SpecException> { Spec.load("""{"mechanism": "no-such", "epsilon": 1.0}""") }
        assertTrue("artifact" !in e.message!!, e.message)
    }
}
