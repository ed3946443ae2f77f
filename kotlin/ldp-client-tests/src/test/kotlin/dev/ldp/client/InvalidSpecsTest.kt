package dev.ldp.client

import java.math.BigInteger
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

/**
 * Specs Python refuses (the `invalid_specs` section of the shared vectors, one field out of range):
 * [Spec.load] refuses each one with a [SpecException] whose message is Python's `error` word for word,
 * as `js/test/invalid-specs.test.ts` requires of TypeScript.
 */
class InvalidSpecsTest {
    private val cases: List<JsonObject> = Vectors.cases("invalid_specs")

    /** The case's spec; with `domain_size`, its domain is the integers 0 … domain_size − 1. */
    private fun specOf(c: JsonObject): JsonObject {
        val data = LinkedHashMap(Json.parseObject(c.str("input_json"), c.str("id")))
        val size = c["domain_size"] as BigInteger?
        if (size != null) data["domain"] = (0 until size.toInt()).map { BigInteger.valueOf(it.toLong()) }
        return data
    }

    @Test
    fun hasCases() = assertTrue(cases.isNotEmpty())

    @TestFactory
    fun refusedAsPythonRefusesThem(): List<DynamicTest> = cases.map { c ->
        DynamicTest.dynamicTest(c.str("id")) {
            val e = assertFailsWith<SpecException>("${c.str("id")}: loaded") { Spec.load(specOf(c)) }
            assertEquals(c.str("error"), e.message, "${c.str("id")}: not Python's message")
        }
    }
}
