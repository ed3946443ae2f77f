package dev.ldp.client.budget

import dev.ldp.client.Spec
import dev.ldp.client.state.FileStateStorage
import dev.ldp.client.state.StateKey
import dev.ldp.client.state.StateStorage
import org.junit.jupiter.api.io.TempDir
import java.io.File
import java.nio.file.Files
import java.nio.file.Path
import java.util.concurrent.CountDownLatch
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/**
 * Threads and separate JVM processes charging one client's ledger at once (several encoders of an app,
 * an app and its service process): one transaction per charge, so together they never exceed the
 * budget and never lose a charge. Each report costs ε = 1, so exactly `budget` of the attempts must be
 * charged and recorded, and every other one refused.
 */
class LedgerConcurrencyTest {
    @TempDir
    lateinit var temp: Path

    companion object {
        /** GRR at ε = 1, as the server writes it. */
        const val GRR_TEXT = """{"domain":["a","b","c"],"epsilon":1.0,"format":1,"mechanism":"grr","p":"10627480729818062551/18446744073709551616"}"""

        /** Open the ledger (creating it with [budget] if no one has) and try [attempts] charges: (charged, refused). */
        fun chargeMany(storage: StateStorage, key: StateKey, budget: Budget, spec: Spec, attempts: Int): Pair<Int, Int> {
            val ledger = PrivacyLedger.open(storage, key, budget)!!
            var charged = 0
            var refused = 0
            repeat(attempts) {
                try {
                    ledger.charge(spec, null)
                    charged++
                } catch (_: BudgetExceededException) {
                    refused++
                }
            }
            return Pair(charged, refused)
        }
    }

    private val grr = Spec.load(GRR_TEXT)

    /** The reports recorded in the stored ledger (read as a new opener would). */
    private fun recorded(storage: StateStorage, key: StateKey): Long =
        PrivacyLedger.open(storage, key)!!.streams().values.sumOf { it.reports }

    @Test
    fun threadsOpeningAndChargingOneLedgerNeverExceedTheBudgetNorLoseACharge() {
        val storage = FileStateStorage(temp.resolve("state"))
        val key = StateKey.ledger("alice")
        val budget = Budget(30.0)
        val threads = 8
        val start = CountDownLatch(1)
        val pool = Executors.newFixedThreadPool(threads)
        try {
            // every thread opens the ledger itself: racing creators share one (one key, one budget)
            val results = (0 until threads).map { pool.submit<Pair<Int, Int>> { start.await(); chargeMany(storage, key, budget, grr, 8) } }
            start.countDown()
            val outcomes = results.map { it.get(60, TimeUnit.SECONDS) }
            assertEquals(30, outcomes.sumOf { it.first }, "charged: $outcomes")
            assertEquals(threads * 8 - 30, outcomes.sumOf { it.second }, "refused: $outcomes")
        } finally {
            pool.shutdownNow()
        }
        assertEquals(30L, recorded(storage, key))
        assertEquals(30.0, PrivacyLedger.open(storage, key)!!.committed())
    }

    @Test
    fun threadsSharingOneLedgerObjectCountEveryMemoizedAndFreshCharge() {
        val storage = FileStateStorage(temp.resolve("state"))
        val key = StateKey.ledger("bob")
        val ledger = PrivacyLedger.open(storage, key, Budget(1000.0))!!
        val params = StreamParameters(0.5, null, true, null) // linear, unbounded keys: each report 0.5
        val pool = Executors.newFixedThreadPool(6)
        try {
            val jobs = (0 until 6).map { t ->
                pool.submit {
                    repeat(10) { i ->
                        if ((t + i) % 2 == 0) ledger.charge(grr, null) else ledger.chargeStream("0123456789abcdef", "rappor", params, byteArrayOf(t.toByte()))
                    }
                }
            }
            jobs.forEach { it.get(60, TimeUnit.SECONDS) }
        } finally {
            pool.shutdownNow()
        }
        val streams = ledger.streams()
        assertEquals(30L, streams.getValue("fresh:${grr.fingerprint}").reports)
        assertEquals(30L, streams.values.filter { it.memoized }.sumOf { it.reports })
        assertEquals(6, streams.size - 1, "one stream per memo key")
        assertEquals(45.0, ledger.committed())
    }

    private fun spawn(vararg args: String): Process {
        val java = File(System.getProperty("java.home"), "bin/java").path
        val classpath = System.getProperty("surefire.test.class.path") ?: System.getProperty("java.class.path")
        return ProcessBuilder(java, "-cp", classpath, LedgerRaceMain::class.java.name, *args).redirectErrorStream(true).start()
    }

    @Test
    fun twoProcessesAndThisOneChargingOneLedgerFileNeverExceedTheBudgetNorLoseACharge() {
        val dir = temp.resolve("state")
        val go = temp.resolve("go")
        val processes = (0 until 2).map { spawn(dir.toString(), go.toString(), "carol", "30", "40") }
        val storage = FileStateStorage(dir)
        val key = StateKey.ledger("carol")
        val pool = Executors.newFixedThreadPool(2)
        try {
            Thread.sleep(500) // let them start and wait on the go file
            val local = (0 until 2).map { pool.submit<Pair<Int, Int>> { chargeMany(storage, key, Budget(40.0), grr, 10) } }
            Files.createFile(go)
            val outcomes = processes.map { process ->
                assertTrue(process.waitFor(120, TimeUnit.SECONDS), "a charging JVM did not finish")
                val out = process.inputStream.readBytes().toString(Charsets.UTF_8).trim()
                assertEquals(0, process.exitValue(), out)
                val match = Regex("charged (\\d+) refused (\\d+)").matchEntire(out) ?: error("unexpected output: $out")
                Pair(match.groupValues[1].toInt(), match.groupValues[2].toInt())
            } + local.map { it.get(120, TimeUnit.SECONDS) }
            assertEquals(40, outcomes.sumOf { it.first }, "charged: $outcomes")
            assertEquals(2 * 30 + 2 * 10 - 40, outcomes.sumOf { it.second }, "refused: $outcomes")
        } finally {
            pool.shutdownNow()
            processes.forEach { it.destroy() }
        }
        assertEquals(40L, recorded(storage, key))
        assertEquals(40.0, PrivacyLedger.open(storage, key)!!.committed())
    }
}
