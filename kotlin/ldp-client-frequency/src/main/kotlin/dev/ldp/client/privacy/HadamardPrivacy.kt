package dev.ldp.client.privacy

import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import dev.ldp.client.mechanisms.HrLayout
import java.math.BigInteger

/**
 * Hadamard response over B blocks of b outputs: each output of C_x has probability 2p/b, each other
 * output (1 − p)/(Bb − b/2), ratio their quotient (the port of `js/src/privacy/hadamard.ts`;
 * `ldp/specs/hadamard.py`).
 *
 * @privacy hr
 */
public fun hadamardPrivacy(fields: JsonObject): MechanismPrivacy {
    val d = PrivacyFields.domainSize(fields)
    if (d < TWO) throw SpecException("hr needs a domain of at least 2 values, got $d")
    val blocks = PrivacyFields.intIn(fields, "blocks", BigInteger.ONE, BigInteger.ONE.shiftLeft(22))
    if (blocks.and(blocks - BigInteger.ONE).signum() != 0) throw SpecException("hr: blocks must be a power of two, got $blocks")
    if (blocks > TWO * d) throw SpecException("hr: blocks must be at most 2d = ${TWO * d}, got $blocks")
    val twoB = TWO * blocks
    val p = PrivacyFields.keep(fields, Fraction.of(BigInteger.ONE, twoB), "1/(2B) = 1/$twoB")
    val b = BigInteger.valueOf(HrLayout.blockSize(d.toInt(), blocks.toInt()).toLong())
    val inside = Fraction.of(TWO * p.num, p.den * b) // each output of C_x
    val outside = (Fraction.ONE - p).divInt(blocks * b - b / TWO) // each other output
    return MechanismPrivacy.fresh(inside / outside)
}

private val TWO: BigInteger = BigInteger.valueOf(2) // BigInteger.TWO is Java 9+, not on every Android
