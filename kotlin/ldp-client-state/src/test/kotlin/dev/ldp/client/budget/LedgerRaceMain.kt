package dev.ldp.client.budget

import dev.ldp.client.Spec
import dev.ldp.client.state.FileStateStorage
import dev.ldp.client.state.StateKey
import java.nio.file.Files
import java.nio.file.Paths

/**
 * A separate JVM charging one client's ledger while others do (spawned by [LedgerConcurrencyTest]):
 * `DIR GO CLIENT ATTEMPTS BUDGET` waits for the go file, opens the ledger of CLIENT in the
 * [FileStateStorage] DIR with the budget ε = BUDGET (created by whichever process comes first), tries
 * ATTEMPTS charges of [LedgerConcurrencyTest.GRR_TEXT] (ε = 1 each) and prints `charged C refused R`.
 */
object LedgerRaceMain {
    @JvmStatic
    fun main(args: Array<String>) {
        val storage = FileStateStorage(Paths.get(args[0]))
        val go = Paths.get(args[1])
        while (!Files.exists(go)) Thread.sleep(1)
        val (charged, refused) = LedgerConcurrencyTest.chargeMany(
            storage, StateKey.ledger(args[2]), Budget(args[4].toDouble()), Spec.load(LedgerConcurrencyTest.GRR_TEXT), args[3].toInt(),
        )
        println("charged $charged refused $refused")
    }
}
