package dev.ldp.client

import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/**
 * ldp-client-core alone on the class path (this module's tests): it encodes its own mechanisms, and a spec
 * of another family is refused with one line naming the artifact to add (the other artifacts' tests, and
 * ldp-client-tests with every artifact, check the rest of [Registry.ARTIFACTS]).
 */
class FamiliesTest {
    private val core = Registry.ARTIFACTS.filterValues { it == "ldp-client-core" }.keys.toList()

    @Test
    fun coreAloneEncodesExactlyItsOwnMechanisms() {
        assertEquals(core, Registry.ENCODED)
        assertEquals(core, PrivacyRegistry.CHECKED)
        assertTrue("grr" in core && "ss" in core && "rappor" !in core && "pem" !in core, core.toString())
    }

    @Test
    fun everyRegisteredMechanismNamesItsArtifact() {
        assertEquals(SpecFields.FIELDS.keys.toList(), Registry.ARTIFACTS.keys.toList())
        val artifacts = Registry.ARTIFACTS.values.toSet()
        assertEquals(
            setOf(
                "ldp-client-core", "ldp-client-rappor", "ldp-client-numeric", "ldp-client-heavyhitters", "ldp-client-longitudinal",
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
