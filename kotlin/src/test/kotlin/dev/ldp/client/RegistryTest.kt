package dev.ldp.client

import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/**
 * Every registered mechanism (the generated [SpecFields], from `ldp/registry.py`) has a Kotlin encoder
 * and privacy function, except those in [NOT_PORTED]: the one visible list of the gap, which shrinks as
 * families are ported (a ported mechanism left in it fails too).
 */
class RegistryTest {
    private companion object {
        /** Registered mechanisms with no Kotlin encoder or privacy function yet. */
        val NOT_PORTED = setOf(
            "olh", "blh", "hr", "pem", "treehist",
            "duchi", "stochastic-rounding", "piecewise", "hybrid", "laplace", "gaussian",
            "cms", "hcms", "ss", "dbitflip",
            "pckv-ue", "pckv-grr", "privkvm",
            "loloha", "l-grr", "l-osue", "l-oue", "l-sue",
            "multi-attribute", "onebitmean", "range-hierarchy", "range-haar",
        )
    }

    private val registered = SpecFields.FIELDS.keys

    @Test
    fun everyRegisteredMechanismHasAKotlinEncoderUnlessListedAsNotPorted() {
        val missing = registered.filter { it !in NOT_PORTED && it !in Registry.ENCODED }
        assertEquals(emptyList(), missing, "registered mechanisms with no Kotlin encoder (port them, or list them in NOT_PORTED)")
    }

    @Test
    fun everyRegisteredMechanismHasAPrivacyFunctionUnlessListedAsNotPorted() {
        val missing = registered.filter { it !in NOT_PORTED && it !in PrivacyRegistry.CHECKED }
        assertEquals(emptyList(), missing, "registered mechanisms whose claim this client cannot check")
    }

    @Test
    fun theNotPortedListNamesOnlyRegisteredMechanismsWithoutAnEncoder() {
        assertTrue(registered.containsAll(NOT_PORTED), "NOT_PORTED names unregistered ones: ${NOT_PORTED - registered}")
        val ported = NOT_PORTED.filter { it in Registry.ENCODED && it in PrivacyRegistry.CHECKED }
        assertEquals(emptyList(), ported, "ported: remove them from NOT_PORTED")
    }

    @Test
    fun everyEncoderIsMadeByTheRegistryForItsVectorSpecs() {
        for (spec in Vectors.specs.values) {
            if (spec.mechanism !in Registry.ENCODED) continue
            assertEquals(spec, Registry.makeEncoder(spec).spec)
        }
    }
}
