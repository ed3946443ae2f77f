package dev.ldp.client.budget

import dev.ldp.client.ByteSources
import dev.ldp.client.Bytes
import dev.ldp.client.Spec
import dev.ldp.client.state.FileStateStorage
import dev.ldp.client.state.StateException
import dev.ldp.client.state.StateKey
import dev.ldp.client.state.StateStorage
import dev.ldp.client.state.StateUpdate
import java.util.Locale
import javax.crypto.Mac
import javax.crypto.spec.SecretKeySpec

/**
 * A client's privacy ledger (the port of `PrivacyLedger` of `js/src/budget.ts`, with the Python ledger's
 * rules, `ldp/privacy/budget.py`): it records what the client spent, per stream ([Spending]), and
 * refuses with a [BudgetExceededException], recording nothing, any report that would take the committed
 * total over its [budget].
 *
 * The ledger is one record of a [StateStorage] ([StateKey.ledger] of the client; in a
 * [FileStateStorage], the file `<stem>.ledger.json` beside the client's state, as Python names it), in
 * the Python ledger's file format (versions 1 and 2). Every charge is one [StateStorage.update]
 * transaction: read, decide, write, with no other change in between by any thread or process using the
 * storage, so concurrent charges are never lost and never exceed the budget together.
 *
 * Memoized streams are named by HMAC-SHA256, under the ledger's own random 32-byte key, of the spec
 * fingerprint, a zero byte and the value's memo key (the encoder's [dev.ldp.client.Encoder.memoKey]): the
 * ledger never holds a value. Whoever can read the ledger (its storage is private, like the client's
 * secret) can test candidate values against it; nobody else can.
 *
 * A budget is set once, when its ledger is created, and never changed: [open] applies that rule. The
 * constructor takes the budget as given and creates the ledger (with a fresh key) at the first charge; a
 * stored ledger with another budget is refused at each use, and a ledger that disappears or is replaced
 * after this object has seen it is refused, never recreated (that would reset the budget).
 *
 * @property storage where the ledger lives
 * @property key the ledger's record ([StateKey.ledger])
 * @property budget the budget enforced
 */
public class PrivacyLedger(
    public val storage: StateStorage,
    public val key: StateKey,
    public val budget: Budget,
) {
    /** What messages call the ledger: `privacy ledger '<file>'` in a file storage. */
    private val label: String = labelOf(storage, key)

    /** The HMAC key (hex) of the ledger this object has seen: it must stay the one stored. */
    @Volatile
    private var seen: String? = null

    private class Outcome<T>(val result: T, val keyHex: String?)

    /** Run one transaction on the stored ledger (null: none yet); [change] returns the ledger to write (or null: keep) and a result. */
    private fun <T> transaction(change: (LedgerData?) -> Pair<LedgerData?, T>): T {
        val outcome = storage.update(key) { current ->
            val data = if (current == null) null else check(LedgerFile.parse(current, label))
            val known = seen
            if (known != null) {
                if (data == null) {
                    throw StateException("$label has disappeared; it is never recreated silently (that would reset the budget)")
                }
                if (data.keyHex != known) throw StateException("$label was replaced by another ledger while open")
            }
            val (next, result) = change(data)
            val write = if (next == null) null else LedgerFile.write(next)
            StateUpdate(write, Outcome(result, (next ?: data)?.keyHex))
        }
        if (outcome.keyHex != null) seen = outcome.keyHex
        return outcome.result
    }

    private fun check(data: LedgerData): LedgerData {
        if (data.budget != budget) throw StateException(budgetChangeMessage(label, data.budget, budget))
        return data
    }

    private fun fresh(): LedgerData = freshLedger(budget)

    /** The stream of a report under the spec [fingerprint]: `fresh:<fingerprint>`, or `value:<HMAC>` of its memo key. */
    private fun streamName(data: LedgerData, fingerprint: String, memoKey: ByteArray?): String {
        if (memoKey == null) return "fresh:$fingerprint"
        val mac = Mac.getInstance("HmacSHA256")
        mac.init(SecretKeySpec(data.key, "HmacSHA256"))
        mac.update(fingerprint.toByteArray(Charsets.US_ASCII))
        mac.update(0)
        return "value:" + Bytes.toHex(mac.doFinal(memoKey))
    }

    /**
     * Record one report under [spec], or throw [BudgetExceededException] recording nothing. [memoKey]:
     * a memoized mechanism's memo key of the value (the encoder's `memoKey(value)`), required; ignored
     * for fresh mechanisms. Returns the spent ε after it ([spent]).
     *
     * @throws BudgetExceededException when the committed ε after this report would exceed the budget
     * @throws AccountingException for a spec the ledger cannot account for ((ε, δ) mechanisms), or a
     *   memoized spec without [memoKey]
     * @throws StateException when the stored ledger is corrupt, holds another budget, or was removed or
     *   replaced since this object saw it
     */
    public fun charge(spec: Spec, memoKey: ByteArray?): Double {
        return chargeStream(spec.fingerprint, spec.mechanism, Spending.streamParameters(spec), memoKey)
    }

    /** [charge] of a report under the spec [fingerprint] of [mechanism], charged as [params]. */
    internal fun chargeStream(fingerprint: String, mechanism: String, params: StreamParameters, memoKey: ByteArray?): Double {
        if (params.memoized && memoKey == null) {
            throw AccountingException("$mechanism is memoized: a report is charged with its value's memo key (the encoder's memoKey)")
        }
        return transaction { stored -> charged(stored ?: fresh(), fingerprint, params, if (params.memoized) memoKey else null) }
    }

    private fun charged(data: LedgerData, fingerprint: String, params: StreamParameters, memoKey: ByteArray?): Pair<LedgerData, Double> {
        val name = streamName(data, fingerprint, memoKey)
        val streams = LinkedHashMap(data.streams)
        val old = data.streams[name]
        streams[name] = params.stream(fingerprint, (old?.reports ?: 0L) + 1, old?.loss) // atoms a Python ledger recorded stay
        val committed = Spending.committedEpsilon(streams.values, budget)
        if (!Spending.fitsBudget(committed, budget)) {
            val before = Spending.committedEpsilon(data.streams.values, budget)
            throw BudgetExceededException(
                "this report would bring the privacy committed to epsilon=${g6(committed)}, over the budget " +
                    "epsilon=${g6(budget.epsilon)} (${budget.composition.text} composition); already committed " +
                    "${g6(before)}. Nothing was sent or recorded.",
            )
        }
        return Pair(LedgerData(data.key, data.budget, streams), Spending.spentEpsilon(streams.values, budget))
    }

    /** The spent ε so far, given the values (informational; 0 for a ledger not created yet, which this does not create). */
    public fun spent(): Double = transaction { data -> Pair(null, if (data == null) 0.0 else Spending.spentEpsilon(data.streams.values, budget)) }

    /** The committed ε so far, on which the budget is enforced (0 for a ledger not created yet). */
    public fun committed(): Double =
        transaction { data -> Pair(null, if (data == null) 0.0 else Spending.committedEpsilon(data.streams.values, budget)) }

    /** The budget's ε minus [committed] (never negative). */
    public fun remaining(): Double = maxOf(0.0, budget.epsilon - committed())

    /** A copy of the stored streams by name (names are `fresh:<fingerprint>` or keyed hashes, never values). */
    public fun streams(): Map<String, Stream> = transaction { data -> Pair(null, LinkedHashMap(data?.streams ?: emptyMap())) }

    override fun toString(): String = "PrivacyLedger($label, budget=${budget.text()})"

    public companion object {
        /** The layout version of a ledger that needs nothing beyond version 1. */
        public const val FORMAT: String = LedgerFile.FORMAT

        /** Version 2: written when a stream is not linear (every stream then states `linear`). */
        public const val FORMAT_V2: String = LedgerFile.FORMAT_V2

        /**
         * The ledger [key] in [storage] under its stored budget; created (exclusively, in one
         * transaction: of racing openers one creates it, the others use it) with [budget] when there is
         * none; null when there is none and no budget (nothing is created). A [budget] other than the
         * stored one is refused with a [StateException]: a budget is set once, when its ledger is
         * created, and never changed. Python's `PrivacyLedger.load_or_create` and `client_ledger`.
         */
        @JvmStatic
        @JvmOverloads
        public fun open(storage: StateStorage, key: StateKey, budget: Budget? = null): PrivacyLedger? {
            val label = labelOf(storage, key)
            val opened = storage.update(key) { current ->
                if (current == null) {
                    if (budget == null) {
                        StateUpdate.keep(null)
                    } else {
                        val data = freshLedger(budget)
                        StateUpdate.write(LedgerFile.write(data), Pair(budget, data.keyHex))
                    }
                } else {
                    val data = LedgerFile.parse(current, label)
                    if (budget != null && data.budget != budget) throw StateException(budgetChangeMessage(label, data.budget, budget))
                    StateUpdate.keep(Pair(data.budget, data.keyHex))
                }
            } ?: return null
            return PrivacyLedger(storage, key, opened.first).also { it.seen = opened.second }
        }

        private fun labelOf(storage: StateStorage, key: StateKey): String =
            if (storage is FileStateStorage) "privacy ledger '${storage.fileOf(key)}'" else "privacy ledger of client '${key.clientId}'"

        private fun freshLedger(budget: Budget): LedgerData = LedgerData(ByteSources.secure.read(32), budget, LinkedHashMap())

        private fun budgetChangeMessage(label: String, held: Budget, asked: Budget): String =
            "$label holds the budget ${held.text()}, not ${asked.text()}: a budget is set once, when its ledger is " +
                "created, and never changed; give the stored budget or none (it is enforced either way)"

        /** Python's `format(x, ".6g")`: 6 significant digits, trailing zeros dropped, exponent from 1e-4 below or 1e6 up. */
        internal fun g6(x: Double): String {
            if (x.isNaN()) return "nan"
            if (x.isInfinite()) return if (x > 0) "inf" else "-inf"
            if (x == 0.0) return if (1.0 / x < 0) "-0" else "0"
            val rounded = java.math.BigDecimal(x).round(java.math.MathContext(6, java.math.RoundingMode.HALF_EVEN))
            val exponent = rounded.precision() - rounded.scale() - 1
            if (exponent < -4 || exponent >= 6) {
                val digits = rounded.unscaledValue().abs().toString().trimEnd('0').ifEmpty { "0" }
                val mantissa = if (digits.length > 1) digits[0] + "." + digits.substring(1) else digits
                val sign = if (x < 0) "-" else ""
                return String.format(Locale.ROOT, "%s%se%s%02d", sign, mantissa, if (exponent < 0) "-" else "+", Math.abs(exponent))
            }
            val plain = rounded.toPlainString()
            return if (plain.contains('.')) plain.trimEnd('0').trimEnd('.') else plain
        }
    }
}
