package dev.ldp.client.budget

import dev.ldp.client.Encoder
import dev.ldp.client.Report
import dev.ldp.client.Spec

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
}
