package dev.ldp.client.privacy

import dev.ldp.client.FloatText
import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import java.math.BigInteger

private val METHODS = listOf("smp", "spl", "rsfd-grr")

/**
 * A record's exact worst-case ratio over any two records (the port of `js/src/privacy/multiattr.ts`;
 * `ldp/specs/multiattr.py` MultiAttribute): the product of the k largest attribute ratios (`smp`, k
 * sampled; `spl`, k = d), or Σ k_j p_j / Σ k_j q_j over the GRR attributes (`rsfd-grr`). Each
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
    if (method == "rsfd-grr" && k != BigInteger.ONE) throw SpecException("multi-attribute: rsfd-grr samples exactly one attribute (sample=1)")
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
        if (method == "rsfd-grr" && mechanism != "grr") throw SpecException("multi-attribute: rsfd-grr takes GRR attributes; '${names[j]}' is $mechanism")
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
    if (method == "rsfd-grr") {
        var top = Fraction.ZERO
        var bottom = Fraction.ZERO
        for (attribute in attributes) {
            val size = PrivacyFields.domainSize(attribute)
            val p = PrivacyFields.prob(attribute, "p")
            top += p * Fraction.of(size)
            bottom += (Fraction.ONE - p).divInt(size - BigInteger.ONE) * Fraction.of(size)
        }
        return MechanismPrivacy.fresh(top / bottom)
    }
    ratios.sortDescending()
    return MechanismPrivacy.fresh(ratios.take(k.toInt()).fold(Fraction.ONE) { product, r -> product * r })
}
