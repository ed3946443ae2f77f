package dev.ldp.client.privacy

import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import java.math.BigInteger

private fun pow(a: Fraction, k: BigInteger): Fraction = Fraction.of(a.num.pow(k.intValueExact()), a.den.pow(k.intValueExact()))

/**
 * RAPPOR (the port of `js/src/privacy/rappor.ts`; `ldp/specs/rappor.py`): per Bloom bit,
 * P[S=1 | B=1] = q* = ½f(p+q) + (1−f)q and P[S=1 | B=0] = p* = ½f(p+q) + (1−f)p. One report's ratio
 * is the larger bit ratio (boolean) or (q*·(1−p*) / (p*·(1−q*)))^h over the 2h bits two values'
 * filters differ in; the permanent response's is ((1 − f/2)/(f/2))^(2h) (one bit for boolean),
 * unbounded when f = 0. The memo holds one key per domain value (2 for boolean), unboundedly many for
 * a Bloom filter. r reports of one value are (r·ε₁)-DP (`memoLinear`: per bit the log-likelihood
 * ratio is odd and concave beyond 0 in the IRR log ratio, hence subadditive).
 *
 * @privacy rappor
 */
public fun rapporPrivacy(fields: JsonObject): MechanismPrivacy {
    val f = PrivacyFields.prob(fields, "f")
    val p = PrivacyFields.prob(fields, "p")
    val q = PrivacyFields.prob(fields, "q")
    val encoding = fields["encoding"]
    val boolean = encoding == "boolean"
    val h = if (encoding == "bloom") PrivacyFields.int(fields, "num_hashes") else BigInteger.ONE
    val two = BigInteger.valueOf(2)
    val halfFpq = (f * (p + q)).divInt(two)
    val one = halfFpq + (Fraction.ONE - f) * q // q*: P[S=1 | B=1]
    val zero = halfFpq + (Fraction.ONE - f) * p // p*: P[S=1 | B=0]
    if (zero.num.signum() == 0 || one.compareTo(Fraction.ONE) == 0) {
        throw SpecException(
            "rappor parameters give no single-report privacy (a reported bit can be certain); got f=$f, p=$p, q=$q",
        )
    }
    val up = one / zero // a bit the input sets
    val down = (Fraction.ONE - zero) / (Fraction.ONE - one) // a bit the other input sets
    val ratio = if (boolean) maxOf(up, down) else pow(up * down, h)
    val halfF = f.divInt(two)
    val permanentRatio = if (f.num.signum() == 0) null else pow((Fraction.ONE - halfF) / halfF, if (boolean) BigInteger.ONE else two * h)
    val memoValues = when (encoding) {
        "boolean" -> two
        "basic" -> PrivacyFields.domainSize(fields)
        else -> null
    }
    return MechanismPrivacy.memoized(ratio, permanentRatio, memoValues).copy(memoLinear = true)
}

/**
 * RAPPOR's derived fields, completed in the canonical fields before the claim is checked: basic and
 * boolean fix num_bits, num_hashes and hash; a Bloom filter needs its sizes (Python's
 * `Rappor.__post_init__`).
 *
 * @canonical rappor
 */
public fun rapporFields(out: MutableMap<String, Any?>) {
    val encoding = out["encoding"]
    if (encoding == "bloom") {
        if (out["domain"] != null) throw SpecException("rappor with encoding 'bloom' takes no domain")
        if (out["num_bits"] == null || out["num_hashes"] == null) throw SpecException("rappor needs num_bits and num_hashes")
        val hash = out["hash"]
        if (hash != "mmh3" && hash != "md5") throw SpecException("rappor hash must be mmh3 or md5, got $hash")
        return
    }
    if (encoding != "basic" && encoding != "boolean") throw SpecException("unknown rappor encoding $encoding")
    val bits = if (encoding == "basic") {
        BigInteger.valueOf(((out["domain"] as List<*>?) ?: throw SpecException("basic rappor needs a domain")).size.toLong())
    } else {
        BigInteger.ONE
    }
    if (encoding == "boolean" && out["domain"] != null) throw SpecException("boolean rappor takes no domain")
    if (out["num_bits"] != null && out["num_bits"] != bits) throw SpecException("$encoding rappor has num_bits = $bits")
    if (out["num_hashes"] != null && out["num_hashes"] != BigInteger.ONE) throw SpecException("$encoding rappor has num_hashes = 1")
    out["num_bits"] = bits
    out["num_hashes"] = BigInteger.ONE
    out["hash"] = "none"
}
