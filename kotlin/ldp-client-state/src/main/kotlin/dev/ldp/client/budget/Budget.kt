package dev.ldp.client.budget

import dev.ldp.client.FloatText

/**
 * How a client's reports combine into its total ε (Python's `COMPOSITION_RULES`, less `exact`, which
 * this client does not compute: a ledger holding it is refused).
 */
public enum class CompositionRule(
    /** The rule's name in ledger files and messages. */
    public val text: String,
) {
    /** The exactly rounded sum of the pieces' ε (`math.fsum`). */
    BASIC("basic"),

    /** The exact composition of the pure pieces at the budget's δ, never above the sum (KOV). */
    OPTIMAL("optimal"),
    ;

    public companion object {
        /** The rule named [name] (any case); an [AccountingException] for another name. */
        @JvmStatic
        public fun of(name: String): CompositionRule =
            values().firstOrNull { it.text == name.lowercase() }
                ?: throw AccountingException(
                    "budget composition must be one of basic, optimal, got \"$name\"" +
                        if (name.lowercase() == "exact") " (exact composition is computed by the Python client)" else "",
                )
    }
}

/**
 * A client's total privacy budget (Python's `Budget`, an ε budget): ε > 0 finite, δ in [0, 1) at
 * which the total is measured (the `optimal` rule; 0 for pure ε), and the composition rule.
 *
 * @property epsilon the total ε the client may spend
 * @property delta δ of the `optimal` rule (0: every rule is the sum)
 * @property composition how reports combine
 */
public class Budget @JvmOverloads constructor(
    public val epsilon: Double,
    public val delta: Double = 0.0,
    public val composition: CompositionRule = CompositionRule.BASIC,
) {
    init {
        if (epsilon.isNaN() || epsilon.isInfinite() || epsilon <= 0) {
            throw AccountingException("budget epsilon must be a finite number > 0, got ${FloatText.of(epsilon)}")
        }
        if (!(delta >= 0 && delta < 1)) throw AccountingException("budget delta must be in [0, 1), got ${FloatText.of(delta)}")
    }

    /** A budget with the rule named [composition] (`basic` or `optimal`, any case). */
    public constructor(epsilon: Double, delta: Double, composition: String) : this(epsilon, delta, CompositionRule.of(composition))

    /** `epsilon=3.0`, or `epsilon=1.0, delta=1e-06, optimal composition` (Python's `budget_text`). */
    public fun text(): String {
        val d = if (delta != 0.0) ", delta=${FloatText.of(delta)}" else ""
        val rule = if (composition == CompositionRule.BASIC) "" else ", ${composition.text} composition"
        return "epsilon=${FloatText.of(epsilon)}$d$rule"
    }

    override fun equals(other: Any?): Boolean =
        other is Budget && other.epsilon == epsilon && other.delta == delta && other.composition == composition

    override fun hashCode(): Int = (epsilon.hashCode() * 31 + delta.hashCode()) * 31 + composition.hashCode()

    override fun toString(): String = "Budget(${text()})"
}
