package dev.ldp.client.budget

import dev.ldp.client.LdpException

/**
 * A report that would take the privacy committed over the client's budget (Python's
 * `BudgetExceededError`): nothing was recorded, and [BudgetedEncoder] released nothing. The decision
 * depends only on how many reports were sent under each spec, never on the values.
 */
public class BudgetExceededException(message: String) : IllegalStateException(message)

/**
 * The ledger refuses a question (Python's `AccountingError`): a budget out of range, a spec it cannot
 * account for (an (ε, δ) mechanism such as Gaussian), a memoized report charged without its memo key.
 * Nothing was recorded.
 */
public class AccountingException(message: String) : LdpException(message)
