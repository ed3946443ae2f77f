package dev.ldp.client.budget

import dev.ldp.client.JsonObject
import dev.ldp.client.Vectors
import dev.ldp.client.state.InMemoryStateStorage
import dev.ldp.client.state.StateException
import dev.ldp.client.state.StateKey
import dev.ldp.client.str
import java.math.BigInteger
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue
import kotlin.test.fail

/**
 * The `ledger_files` cases of the `budget` vectors: ledger files as Python writes them, read and written
 * back by this client (the ledgers' charges, which need every family, are `BudgetVectorsTest` in
 * ldp-client-tests).
 */
class LedgerFileVectorsTest {
    private companion object {
        val budget: JsonObject get() = Vectors.section("budget")

        fun close(actual: Double, expected: Double, what: String) {
            assertTrue(Math.abs(actual - expected) <= 1e-9 * maxOf(1.0, Math.abs(expected)), "$what: $actual vs Python $expected")
        }

        fun double(v: Any?): Double = when (v) {
            is Double -> v
            is BigInteger -> v.toDouble()
            else -> fail("not a number: $v")
        }
    }

    @Test
    fun ledgerFilesAsPythonWritesThem() {
        for (c in Vectors.list(budget, "ledger_files")) {
            val storage = InMemoryStateStorage()
            val key = StateKey.ledger("client")
            storage.put(key, PythonJson.dump(c["file"]).toByteArray(Charsets.UTF_8))
            if (c["committed"] == null) {
                val e = assertFailsWith<StateException>(c.str("id")) { PrivacyLedger.open(storage, key) }
                assertTrue(e.message!!.endsWith("which this client does not compute yet; charge it with the Python client"), e.message)
                continue
            }
            val ledger = PrivacyLedger.open(storage, key)!!
            close(ledger.committed(), double(c["committed"]), "${c.str("id")} committed")
            close(ledger.spent(), double(c["spent"]), "${c.str("id")} spent")
        }
    }

    @Test
    fun aVersion2FileIsWrittenBackAsPythonWroteIt() {
        val c = Vectors.list(budget, "ledger_files").first { it.str("id") == "v2/capped-stream" }
        val text = PythonJson.dump(c["file"]) + "\n" // json.dumps(file, sort_keys=True, indent=1), as Python writes it
        val data = LedgerFile.parse(text.toByteArray(Charsets.UTF_8), "privacy ledger")
        assertEquals(text, String(LedgerFile.write(data), Charsets.UTF_8))
    }
}
