package dev.ldp.client.privacy

import dev.ldp.client.FloatText
import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields
import dev.ldp.client.SpecException
import dev.ldp.client.hashing.LH_PRIME
import java.math.BigInteger

/** The hash range g of local hashing (and of the prefix oracles), in [2, 2^31 − 2]. */
private fun hashRange(fields: JsonObject): BigInteger = PrivacyFields.intIn(fields, "g", 2L, LH_PRIME - 1)

/** Randomized response over the g hash buckets: ratio p/q, q = (1 − p)/(g − 1). */
private fun hashedPrivacy(fields: JsonObject, g: BigInteger): MechanismPrivacy =
    MechanismPrivacy.fresh(PrivacyFields.rrRatio(PrivacyFields.keep(fields, Fraction.of(BigInteger.ONE, g), "1/g = 1/$g"), g))

/**
 * Local hashing: randomized response over g hash buckets (BLH: g = 2), ratio p/q with
 * q = (1 − p)/(g − 1) (the port of `js/src/privacy/localhash.ts`; `ldp/specs/frequency.py` OLH, BLH).
 *
 * @privacy olh blh
 */
public fun localHashingPrivacy(fields: JsonObject): MechanismPrivacy {
    val mechanism = PrivacyFields.mechanism(fields)
    val d = PrivacyFields.domainSize(fields)
    if (d < BigInteger.valueOf(2)) throw SpecException("$mechanism needs a domain of at least 2 values, got $d")
    if (mechanism == "blh" && fields["g"] != BigInteger.valueOf(2)) {
        throw SpecException("blh has g = 2 by definition, got g=${fields["g"]}; use olh for other g")
    }
    val g = hashRange(fields)
    return hashedPrivacy(fields, g)
}

private fun bounded(fields: JsonObject, name: String, minimum: Long, maximum: Long): Long =
    PrivacyFields.intIn(fields, name, minimum, maximum).toLong()

/** The largest max_length, top_k, eta, candidates per round (PEM) and width (TreeHist) of `ldp/specs/heavy_hitters.py`. */
private const val PEM_MAX_LENGTH = 256L
private const val PEM_MAX_TOP_K = 4096L
private const val PEM_MAX_ETA = 12L
private const val PEM_MAX_CANDIDATES = 1L shl 20
private const val TREEHIST_MAX_WIDTH = 1L shl 16

/**
 * The range checks of Python's PEM and TreeHist constructors (`ldp/specs/heavy_hitters.py`), which the
 * encoder's rounds rely on: max_length in [1, 256], top_k in [1, 4096] and below 2^m; PEM: eta in
 * [1, 12], width in [top_k, 2^20], top_k·2^eta and width·2^eta at most 2^20 candidates per round;
 * TreeHist: width in [1, 2^16], beta in (0, 1).
 */
private fun checkPrefixFields(fields: JsonObject) {
    val mechanism = PrivacyFields.mechanism(fields)
    val maxLength = bounded(fields, "max_length", 1, PEM_MAX_LENGTH)
    val topK = bounded(fields, "top_k", 1, PEM_MAX_TOP_K)
    if (BigInteger.valueOf(topK) >= BigInteger.ONE.shiftLeft((8 * maxLength).toInt())) {
        throw SpecException("$mechanism: top_k=$topK must be below 2^m = 2^${8 * maxLength} (m = 8·max_length)")
    }
    if (mechanism == "pem") {
        val eta = bounded(fields, "eta", 1, PEM_MAX_ETA)
        val limit = PrivacyFields.grouped(PEM_MAX_CANDIDATES)
        val why = "(the aggregator evaluates each against every report of its round)"
        if (topK shl eta.toInt() > PEM_MAX_CANDIDATES) {
            throw SpecException("pem: top_k * 2^eta = ${PrivacyFields.grouped(topK shl eta.toInt())} candidates per round is above the limit of $limit $why")
        }
        val width = bounded(fields, "width", topK, PEM_MAX_CANDIDATES)
        if (width shl eta.toInt() > PEM_MAX_CANDIDATES) {
            throw SpecException("pem: width * 2^eta = ${PrivacyFields.grouped(width shl eta.toInt())} candidates per round is above the limit of $limit $why")
        }
    } else {
        bounded(fields, "width", 1, TREEHIST_MAX_WIDTH)
        val beta = fields["beta"]
        if (beta !is Double || !(beta > 0 && beta < 1)) {
            throw SpecException("treehist: beta must be a number in (0, 1), got ${if (beta is Double) FloatText.of(beta) else beta.toString()}")
        }
    }
}

/**
 * The prefix oracles: each report is one local-hashing report of a prefix, the round independent of
 * the value, so the ratio is local hashing's p/q (the port of `prefixPrivacy` of
 * `js/src/privacy/localhash.ts`; `ldp/specs/heavy_hitters.py` PEM, TreeHist), after the range checks
 * of the Python constructors, with their messages.
 *
 * @privacy pem treehist
 */
public fun prefixPrivacy(fields: JsonObject): MechanismPrivacy {
    checkPrefixFields(fields)
    return hashedPrivacy(fields, hashRange(fields))
}

/** PEM's default width factor (Python's `PEM_DEFAULT_WIDTH_FACTOR`). */
private val PEM_DEFAULT_WIDTH_FACTOR: BigInteger = BigInteger.valueOf(4)

/**
 * A prefix oracle's spec without a width takes the default width, as the Python constructors do (it
 * follows from top_k, and PEM's eta, not from ε): PEM max(top_k, min(4·top_k, 2^20 >> eta)), TreeHist
 * 4·top_k (the port of `prefixFields` of `js/src/privacy/localhash.ts`).
 *
 * @canonical pem treehist
 */
public fun prefixFields(out: MutableMap<String, Any?>) {
    if (out["width"] != null) return
    val k = out["top_k"] as? BigInteger ?: throw SpecException("${out["mechanism"]} spec has no integer top_k")
    if (out["mechanism"] == "treehist") {
        out["width"] = PEM_DEFAULT_WIDTH_FACTOR * k
        return
    }
    val eta = out["eta"] as? BigInteger ?: throw SpecException("pem spec has no integer eta")
    // eta is checked with the other fields: here only a shift that stays in range
    val candidates = BigInteger.valueOf(PEM_MAX_CANDIDATES)
    val room = if (eta.signum() >= 0 && eta <= BigInteger.valueOf(PEM_MAX_ETA)) candidates.shiftRight(eta.toInt()) else candidates
    out["width"] = k.max((PEM_DEFAULT_WIDTH_FACTOR * k).min(room))
}
