package dev.ldp.client.budget

import dev.ldp.client.Encoder
import dev.ldp.client.Report
import dev.ldp.client.Spec
import dev.ldp.client.state.StateKey
import dev.ldp.client.state.StateStorage

/**
 * An encoder whose every report is charged to a [PrivacyLedger] before it is returned (randomize,
 * charge, release; the port of `BudgetedEncoder` of `js/src/budget.ts`, Python's
 * `ldp.client.budgeted`). An invalid value fails in the encoder, before any charge; a charge that fails
 * ([BudgetExceededException], [AccountingException], a ledger that cannot be used) drops the report:
 * nothing is returned and nothing recorded.
 *
 * @property encoder the encoder of the reports
 * @property ledger the client's ledger
 */
public class BudgetedEncoder(public val encoder: Encoder, public val ledger: PrivacyLedger) : Encoder {
    override val spec: Spec get() = encoder.spec

    /**
     * A report of [value], charged to the ledger first.
     *
     * @throws BudgetExceededException when the report would exceed the budget (it is dropped)
     */
    override fun encode(value: Any): Report {
        val report = encoder.encode(value) // invalid values fail here, before any charge
        ledger.charge(encoder.spec, encoder.memoKey(value))
        return report
    }

    override fun memoKey(value: Any): ByteArray? = encoder.memoKey(value)

    public companion object {
        /**
         * The encoder of client [clientId]'s reports: [encoder] charging the client's ledger in [storage]
         * whenever the client has one (under its stored budget, with or without [budget]), or one [budget]
         * creates; [encoder] itself when the client has no ledger and no budget is given (nothing is
         * created). So a client with a ledger is never encoded unbudgeted (Python's `client_ledger`, the
         * TypeScript client's `openClientEncoder`). A [budget] other than the stored one is refused.
         */
        @JvmStatic
        @JvmOverloads
        public fun forClient(encoder: Encoder, storage: StateStorage, clientId: String, budget: Budget? = null): Encoder {
            val ledger = PrivacyLedger.open(storage, StateKey.ledger(clientId), budget) ?: return encoder
            return BudgetedEncoder(encoder, ledger)
        }
    }
}
