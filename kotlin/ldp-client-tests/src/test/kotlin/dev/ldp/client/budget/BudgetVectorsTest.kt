package dev.ldp.client.budget

import dev.ldp.client.ClientState
import dev.ldp.client.EncoderOptions
import dev.ldp.client.JsonObject
import dev.ldp.client.LdpException
import dev.ldp.client.PrivacyRegistry
import dev.ldp.client.Registry
import dev.ldp.client.Spec
import dev.ldp.client.Vectors
import dev.ldp.client.state.InMemoryStateStorage
import dev.ldp.client.state.StateKey
import dev.ldp.client.str
import java.math.BigInteger
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue
import kotlin.test.fail

/**
 * The budget against Python's decisions: every case of the `budget` section of
 * `tests/vectors/vectors.json` (tests/vectors/README.md, `budget`), read from the JSON. Here, with every
 * artifact, since the ledgers charge specs of every family; the `ledger_files` cases, which need only
 * ldp-client-state (and its internal file format), are `LedgerFileVectorsTest` in that module.
 */
class BudgetVectorsTest {
    private companion object {
        /**
         * Cases that need a mechanism not ported in this branch (other families are ported in parallel): the
         * lead empties this list when they merge. A listed case that can run fails the test, and so does an
         * unlisted one that cannot.
         */
        val SKIPPED: Map<String, String> = emptyMap()

        val budget: JsonObject get() = Vectors.section("budget")

        /** The mechanism of each spec id: the `specs` cases and the budget's own specs. */
        val mechanisms: Map<String, String> by lazy {
            @Suppress("UNCHECKED_CAST")
            val own = Vectors.obj(budget, "specs") as Map<String, String>
            Vectors.list(Vectors.section("specs"), "cases").associate { it.str("id") to it.str("mechanism") } +
                own.mapValues { (_, text) -> (dev.ldp.client.Json.parseObject(text)["mechanism"] as String) }
        }

        val specs: Map<String, Spec> by lazy {
            @Suppress("UNCHECKED_CAST")
            val own = Vectors.obj(budget, "specs") as Map<String, String>
            Vectors.specs + own.filterKeys { Vectors.loadable(mechanisms.getValue(it)) }.mapValues { Spec.load(it.value) }
        }

        /** Whether a spec can be loaded here, and a memoized one encoded (its memo keys). */
        fun usable(id: String, memoKeys: Boolean): Boolean {
            val mechanism = mechanisms[id] ?: fail("unknown spec id $id")
            if (mechanism !in PrivacyRegistry.CHECKED) return false
            val spec = specs.getValue(id)
            return !memoKeys || !Spending.isMemoized(spec) || mechanism in Registry.ENCODED
        }

        fun close(actual: Double, expected: Double, what: String) {
            assertTrue(Math.abs(actual - expected) <= 1e-9 * maxOf(1.0, Math.abs(expected)), "$what: $actual vs Python $expected")
        }

        fun double(v: Any?): Double = when (v) {
            is Double -> v
            is BigInteger -> v.toDouble()
            else -> fail("not a number: $v")
        }

        fun optDouble(v: Any?): Double? = if (v == null) null else double(v)
    }

    /** The skipped cases are exactly those this branch cannot run. */
    @Test
    fun skippedCasesAreExactlyTheOnesThatNeedAMechanismNotPortedHere() {
        val cannot = LinkedHashSet<String>()
        for (c in Vectors.list(budget, "rappor_epsilons")) {
            if (!usable(c.str("spec"), memoKeys = false)) cannot.add("rappor_epsilons/${c.str("spec")}")
        }
        for (c in Vectors.list(budget, "ledgers")) {
            if (!Vectors.list(c, "charges").all { usable(it.str("spec"), memoKeys = true) }) cannot.add("ledgers/${c.str("id")}")
        }
        assertEquals(SKIPPED.keys, cannot, "SKIPPED must list exactly the budget cases this branch cannot run (remove those that run)")
    }

    @Test
    fun memoizedEpsilonsAreExactlyPythonsDoubles() {
        for (c in Vectors.list(budget, "rappor_epsilons")) {
            if ("rappor_epsilons/${c.str("spec")}" in SKIPPED) continue
            val e = Spending.memoizedEpsilons(specs.getValue(c.str("spec")))
            assertEquals(double(c["epsilon_one"]), e.one, c.str("spec"))
            assertEquals(optDouble(c["epsilon_inf"]), e.inf, c.str("spec"))
            assertEquals(c["values"] as BigInteger?, Spending.streamParameters(specs.getValue(c.str("spec"))).values, c.str("spec"))
        }
    }

    @Test
    fun optimalCompositionOfPurePieces() {
        val cases = Vectors.list(budget, "compositions")
        assertTrue(cases.isNotEmpty())
        for (c in cases) {
            val pieces = ArrayList<Double>()
            for (run in c["runs"] as List<*>) {
                val (eps, n) = run as List<*>
                repeat((n as BigInteger).toInt()) { pieces.add(double(eps)) }
            }
            val delta = double(c["delta"])
            close(Composition.heterogeneousEpsilon(pieces.toDoubleArray(), delta), double(c["epsilon"]), "${c["runs"]} at delta $delta")
        }
    }

    @Test
    fun memoizedCostsAsPythonsMemoKeyCostAndWorstCase() {
        val cases = Vectors.list(budget, "memo_costs")
        assertTrue(cases.size > 100)
        for (c in cases) {
            val reports = (c["reports"] as BigInteger).toLong()
            val eps = double(c["epsilon_one"])
            val first = optDouble(c["epsilon_first"])
            val cap = optDouble(c["epsilon_inf"])
            val values = c["values"] as BigInteger?
            val linear = c["linear"] as Boolean
            val what = "$reports reports, eps $eps (first $first), cap $cap, $values keys, linear $linear"
            val cost = Spending.memoKeyCost(reports, eps, cap, linear, first)
            val worst = Spending.worstCaseMemoizedCost(reports, eps, cap, values, linear, first)
            if (c["key_cost"] == null) assertEquals(Double.POSITIVE_INFINITY, cost, what) else close(cost, double(c["key_cost"]), "$what key cost")
            if (c["worst_case"] == null) assertEquals(Double.POSITIVE_INFINITY, worst, what) else close(worst, double(c["worst_case"]), "$what worst case")
        }
    }

    @Test
    fun ledgersTakePythonsDecisions() {
        var ran = 0
        for (case in Vectors.list(budget, "ledgers")) {
            val id = case.str("id")
            if ("ledgers/$id" in SKIPPED) continue
            val b = Vectors.obj(case, "budget")
            val budget = Budget(double(b["epsilon"]), optDouble(b["delta"]) ?: 0.0, b["composition"] as String? ?: "basic")
            val ledger = PrivacyLedger(InMemoryStateStorage(), StateKey.ledger("client"), budget)
            Vectors.list(case, "charges").forEachIndexed { i, step ->
                val spec = specs.getValue(step.str("spec"))
                val value = step["value"]!!
                val outcome = try {
                    val memoKey = if (Spending.isMemoized(spec)) {
                        Registry.makeEncoder(spec, EncoderOptions(client = ClientState(ByteArray(32), 0))).memoKey(value)
                    } else {
                        null
                    }
                    ledger.charge(spec, memoKey)
                    "charged"
                } catch (e: BudgetExceededException) {
                    "refused"
                } catch (e: LdpException) {
                    "parameter_error"
                }
                val where = "$id charge ${i + 1} (${step.str("spec")} $value)"
                assertEquals(step.str("outcome"), outcome, where)
                close(ledger.committed(), double(step["committed"]), "$where committed")
                close(ledger.spent(), double(step["spent"]), "$where spent")
            }
            ran++
        }
        assertTrue(ran >= 4, "ran $ran ledger cases")
    }
}
