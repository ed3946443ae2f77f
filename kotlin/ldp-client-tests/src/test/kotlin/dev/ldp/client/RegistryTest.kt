package dev.ldp.client

import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/**
 * Every registered mechanism (the generated [SpecFields], from `ldp/registry.py`) has a Kotlin encoder
 * and privacy function, except those in [NOT_PORTED]: the one visible list of the gap, which shrinks as
 * families are ported (a ported mechanism left in it fails too).
 */
class RegistryTest {
    private companion object {
        /** The numeric mechanisms whose sampling table is the server's. */
        val GRID = setOf("piecewise", "hybrid", "laplace", "gaussian")

        /** Registered mechanisms with no Kotlin encoder or privacy function yet. */
        val NOT_PORTED: Set<String> = emptySet()
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
        for ((id, spec) in Vectors.specs) {
            if (spec.mechanism !in Registry.ENCODED) continue
            @Suppress("UNCHECKED_CAST")
            val parts = spec.fields["attributes"] as? List<JsonObject> ?: emptyList()
            if (parts.any { it["mechanism"] !in Registry.ENCODED }) continue // a record's attribute not ported yet
            // a numeric grid spec's table, and a record's grid attributes' tables, as the collector serves them
            @Suppress("UNCHECKED_CAST")
            val tables = Vectors.cases("encodings").firstOrNull { it.str("spec") == id && it["tables"] != null }
                ?.let { it["tables"] as Map<String, JsonObject> } ?: emptyMap()
            val options = EncoderOptions(table = Vectors.numericTable(id), tables = tables)
            if (tables.isEmpty() && parts.any { it["mechanism"] in GRID }) {
                val e = assertFailsWith<SpecException> { Registry.makeEncoder(spec, options) }
                assertTrue("needs the server's sampling table" in e.message!!, e.message)
                continue
            }
            assertEquals(spec, Registry.makeEncoder(spec, options).spec)
        }
    }
}
