package dev.ldp.client.privacy

import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import java.math.BigInteger

private val KV_HALF = Fraction.of(1, 2)
private val MAX_KEYS = BigInteger.valueOf(65536)

private fun maxOf(a: Fraction, b: Fraction): Fraction = if (a >= b) a else b

private fun minOf(a: Fraction, b: Fraction): Fraction = if (a <= b) a else b

/** The number of keys d, and ℓ, in range as the Python constructor checks them. */
private fun keys(fields: JsonObject): BigInteger {
    val d = PrivacyFields.domainSize(fields)
    val mechanism = PrivacyFields.mechanism(fields)
    if (d < BigInteger.valueOf(2) || d > MAX_KEYS) throw SpecException("$mechanism needs between 2 and 65536 keys, got $d")
    val ell = PrivacyFields.int(fields, "ell")
    if (ell < BigInteger.ONE || ell > MAX_KEYS) throw SpecException("ell must be in [1, 65536], got $ell")
    return d
}

/** A probability in the open interval (0, 1). */
private fun open(fields: JsonObject, name: String): Fraction {
    val x = PrivacyFields.prob(fields, name)
    if (x.num.signum() <= 0 || x >= Fraction.ONE) throw SpecException("$name must be in (0, 1), got $x")
    return x
}

/** A probability below 1, in [0, 1). */
private fun belowOne(fields: JsonObject, name: String): Fraction {
    val x = PrivacyFields.prob(fields, name)
    if (x >= Fraction.ONE) throw SpecException("$name must be in [0, 1), got $x")
    return x
}

/** a, b and p of PCKV, checked as the Python constructor does (a > b, p > 1/2). */
private fun pckv(fields: JsonObject): Triple<Fraction, Fraction, Fraction> {
    val a = open(fields, "a")
    val b = open(fields, "b")
    val p = belowOne(fields, "p")
    if (a <= b || p <= KV_HALF) {
        throw SpecException("${PrivacyFields.mechanism(fields)}: needs a > b and p > 1/2 (got a=$a, b=$b, p=$p)")
    }
    return Triple(a, b, p)
}

/**
 * PCKV-UE (the port of `js/src/privacy/keyvalue.ts`; `ldp/specs/key_value.py`, docs/key-value.md):
 * one coordinate of each of two keys, max(2ap/b, (1 − a)/(1 − b)) / min(2a(1 − p)/b, (1 − a)/(1 − b)).
 *
 * @privacy pckv-ue
 */
public fun pckvUePrivacy(fields: JsonObject): MechanismPrivacy {
    keys(fields)
    val (a, b, p) = pckv(fields)
    val two = Fraction.of(BigInteger.valueOf(2))
    val zero = (Fraction.ONE - a) / (Fraction.ONE - b)
    val hi = two * (a * p) / b
    val lo = two * (a * (Fraction.ONE - p)) / b
    return MechanismPrivacy.fresh(maxOf(hi, zero) / minOf(lo, zero))
}

/**
 * PCKV-GRR with padding ℓ: ((ℓ − 1)q + max(ap, q)) / ((ℓ − 1)q + min(a(1 − p), q)), q = b/2,
 * b = (1 − a)/(d + ℓ − 1).
 *
 * @privacy pckv-grr
 */
public fun pckvGrrPrivacy(fields: JsonObject): MechanismPrivacy {
    val d = keys(fields)
    val ell = PrivacyFields.int(fields, "ell")
    val (a, b, p) = pckv(fields)
    val expected = (Fraction.ONE - a).divInt(d + ell - BigInteger.ONE)
    if (b != expected) throw SpecException("pckv-grr: b must be (1 - a)/(d + ell - 1) = $expected")
    val q = b * KV_HALF
    val shared = Fraction.of(ell - BigInteger.ONE) * q
    val top = maxOf(a * p, q)
    val bottom = minOf(a * (Fraction.ONE - p), q)
    return MechanismPrivacy.fresh((shared + top) / (shared + bottom))
}

/**
 * PrivKVM's single round: the drawn key's outputs ±1 and "absent",
 * max(max/min of (p₁p₂, p₁(1 − p₂), (1 − p₁)/2), p₁/(1 − p₁)).
 *
 * @privacy privkvm
 */
public fun privkvmPrivacy(fields: JsonObject): MechanismPrivacy {
    keys(fields)
    if (PrivacyFields.int(fields, "ell") != BigInteger.ONE) throw SpecException("privkvm samples one key uniformly and pads nothing: ell must be 1")
    val p1 = belowOne(fields, "p1")
    val p2 = belowOne(fields, "p2")
    if (p1 <= KV_HALF || p2 <= KV_HALF) throw SpecException("privkvm: needs p1 > 1/2 and p2 > 1/2 (got $p1, $p2)")
    val signs = listOf(p1 * p2, p1 * (Fraction.ONE - p2), (Fraction.ONE - p1) * KV_HALF)
    val hi = signs.reduce(::maxOf)
    val lo = signs.reduce(::minOf)
    return MechanismPrivacy.fresh(maxOf(hi / lo, PrivacyFields.odds(p1)))
}
