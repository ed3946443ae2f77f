package dev.ldp.client.privacy

import dev.ldp.client.FloatText
import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import java.math.BigInteger

/** RS+FD methods: every attribute's oracle, and the fake data of a non-sampled one. */
private val RSFD: Map<String, Pair<String, String>> = linkedMapOf(
    "rsfd-grr" to ("grr" to "uniform"),
    "rsfd-sue-z" to ("sue" to "zero"),
    "rsfd-sue-r" to ("sue" to "random"),
    "rsfd-oue-z" to ("oue" to "zero"),
    "rsfd-oue-r" to ("oue" to "random"),
)
private val METHODS = listOf("smp", "spl") + RSFD.keys

/**
 * The pairs (t_j(y, x_j), t_j(y, x′_j)) attribute j's outputs give, t_j = P_j(y | x)/F_j(y) with F_j the
 * fake distribution (`MultiAttribute.rsfd_pairs`; `rsfdPairs` in TypeScript): `differ` when x_j ≠ x′_j.
 * Only the extremes of each family of outputs are listed, the only ones a ratio of sums can pick.
 */
private fun rsfdPairs(attribute: JsonObject, fake: String, differ: Boolean): List<Pair<Fraction, Fraction>> {
    val k = PrivacyFields.domainSize(attribute)
    val p = PrivacyFields.prob(attribute, "p")
    val q = if (fake == "uniform") (Fraction.ONE - p).divInt(k - BigInteger.ONE) else PrivacyFields.prob(attribute, "q")
    val kk = Fraction.of(k)
    if (fake == "uniform") {
        val high = kk * p
        val low = kk * q
        if (!differ) return listOf(high to high, low to low)
        return if (k > BigInteger.valueOf(2)) listOf(high to low, low to high, low to low) else listOf(high to low, low to high)
    }
    val alpha = p / q
    val beta = (Fraction.ONE - p) / (Fraction.ONE - q)
    if (fake == "zero") {
        if (!differ) return listOf(alpha to alpha, beta to beta)
        return listOf(alpha to beta, beta to alpha, alpha to alpha, beta to beta)
    }
    fun t(one: Boolean, m: BigInteger): Fraction = kk * (if (one) alpha else beta) / (Fraction.of(m) * alpha + Fraction.of(k - m) * beta)
    val km1 = k - BigInteger.ONE
    if (!differ) {
        return listOf(t(true, BigInteger.ONE), t(true, k), t(false, BigInteger.ZERO), t(false, km1)).map { it to it }
    }
    val out = ArrayList<Pair<Fraction, Fraction>>()
    for (m in linkedSetOf(BigInteger.ONE, km1)) {
        out.add(t(true, m) to t(false, m))
        out.add(t(false, m) to t(true, m))
    }
    for (m in linkedSetOf(BigInteger.valueOf(2), k)) out.add(t(true, m) to t(true, m))
    for (m in linkedSetOf(BigInteger.ZERO, k - BigInteger.valueOf(2))) out.add(t(false, m) to t(false, m))
    return out
}

/** max over one pair (u_j, w_j) of each part of Σ u_j / Σ w_j, exactly (Dinkelbach; Python's `max_ratio_of_sums`). */
public fun maxRatioOfSums(options: List<List<Pair<Fraction, Fraction>>>): Fraction {
    fun ratioOf(choice: List<Pair<Fraction, Fraction>>): Fraction =
        choice.fold(Fraction.ZERO) { s, pair -> s + pair.first } / choice.fold(Fraction.ZERO) { s, pair -> s + pair.second }
    var ratio = ratioOf(options.map { it.first() })
    while (true) {
        val current = ratio
        fun score(pair: Pair<Fraction, Fraction>): Fraction = pair.first - current * pair.second
        val choice = options.map { part -> part.reduce { best, pair -> if (score(pair) > score(best)) pair else best } }
        val gain = choice.fold(Fraction.ZERO) { s, pair -> s + score(pair) }
        if (gain <= Fraction.ZERO) return ratio
        ratio = ratioOf(choice)
    }
}

/**
 * A record's exact worst-case ratio over any two records (the port of `js/src/privacy/multiattr.ts`;
 * `ldp/specs/multiattr.py` MultiAttribute): the product of the k largest attribute ratios (`smp`, k
 * sampled; `spl`, k = d), or for RS+FD the exact maximum of Σ_j t_j(y_j, x_j) / Σ_j t_j(y_j, x′_j) over the
 * outputs ([maxRatioOfSums]; Σ k_j p_j / Σ k_j q_j for GRR). Each
 * attribute's own facts come from `parts` (the dispatcher); when an attribute's ratio is not in its spec
 * (a numeric grid table, checked against its stated ε when its encoder gets the table), the record's
 * stated ε must cover the k largest attributes' stated ε by composition, and the ratio is null. An
 * attribute must be pure ε-LDP with fresh randomness per report (no memoized mechanism, no δ), as in
 * Python.
 *
 * @privacy multi-attribute
 */
public fun multiAttributePrivacy(fields: JsonObject, parts: (JsonObject) -> MechanismPrivacy?): MechanismPrivacy {
    @Suppress("UNCHECKED_CAST")
    val attributes = fields["attributes"] as? List<JsonObject> ?: throw SpecException("multi-attribute: attributes must be a list of attribute objects")
    val d = attributes.size
    if (d < 2) throw SpecException("multi-attribute: give at least two attributes, got $d")
    val names = attributes.map { it["name"].toString() }
    if (names.toSet().size != d) throw SpecException("multi-attribute: attribute names must be distinct, got ${names.joinToString(", ")}")
    val method = fields["method"].toString()
    if (method !in METHODS) {
        throw SpecException("multi-attribute: method must be one of (${METHODS.joinToString(", ") { "'$it'" }}), got '$method'")
    }
    val k = PrivacyFields.int(fields, "sample")
    val dBig = BigInteger.valueOf(d.toLong())
    if (k < BigInteger.ONE) throw SpecException("sample must be >= 1, got $k")
    if (method == "smp" && k > dBig) throw SpecException("multi-attribute: sample ($k) cannot exceed the $d attributes")
    if (method == "spl" && k != dBig) throw SpecException("multi-attribute: spl reports every attribute (sample=$d)")
    if (method in RSFD && k != BigInteger.ONE) throw SpecException("multi-attribute: $method samples exactly one attribute (sample=1)")
    val ratios = ArrayList<Fraction>()
    var unknown = false
    attributes.forEachIndexed { j, attribute ->
        val mechanism = attribute["mechanism"]
        val label = "'${names[j]}' ($mechanism)"
        val facts = parts(attribute) ?: throw SpecException("multi-attribute: attribute $label has no privacy module here")
        if (facts.memoized || attribute["delta"] != null) {
            // as Python's MultiAttribute: the record's ε composes its attributes' pure ε, one fresh report each
            throw SpecException(
                "multi-attribute: attribute $label must be a pure epsilon-LDP mechanism with fresh randomness per report " +
                    "and an exact probability ratio",
            )
        }
        val oracle = RSFD[method]?.first
        if (oracle != null && mechanism != oracle) {
            throw SpecException("multi-attribute: $method takes ${oracle.uppercase()} attributes; '${names[j]}' is $mechanism")
        }
        val ratio = facts.ratio
        if (ratio == null) unknown = true else ratios.add(ratio)
    }
    if (unknown) {
        // an attribute's ratio is not in its spec (a numeric grid table, checked against its stated ε by the
        // server): the record's stated ε must still cover the k largest attributes' stated ε, by composition
        val stated = attributes.map { (it["epsilon"] as? Double) ?: Double.NaN }.sortedDescending()
        val needed = stated.take(if (method == "spl") d else k.toInt()).sum()
        val epsilon = fields["epsilon"] as? Double ?: Double.NaN
        if (!(epsilon >= needed * (1 - 1e-12))) {
            throw SpecException("multi-attribute claims epsilon=${FloatText.of(epsilon)} but its attributes' epsilon add up to ${FloatText.of(needed)}: load the server's spec")
        }
        // and must not exceed it: Python's record states e^ε within a relative 1e-9 of the product of the exact
        // ratios, each at most its stated e^ε_j, so a record above their sum (+ ln(1 + 1e-9)) is refused there too
        if (epsilon > needed * (1 + 1e-12) + 2e-9) {
            throw SpecException("multi-attribute states epsilon=${FloatText.of(epsilon)} but its attributes' epsilon add up to ${FloatText.of(needed)}: load the server's spec")
        }
        return MechanismPrivacy.fresh(null)
    }
    val rsfd = RSFD[method]
    if (rsfd != null) return MechanismPrivacy.fresh(maxRatioOfSums(attributes.map { rsfdPairs(it, rsfd.second, true) }))
    ratios.sortDescending()
    return MechanismPrivacy.fresh(ratios.take(k.toInt()).fold(Fraction.ONE) { product, r -> product * r })
}
