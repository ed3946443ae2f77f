package dev.ldp.client.budget

import dev.ldp.client.Bytes
import dev.ldp.client.FloatText
import dev.ldp.client.Json
import dev.ldp.client.JsonObject
import dev.ldp.client.LdpException
import dev.ldp.client.state.StateException
import java.math.BigInteger

/**
 * A privacy ledger as stored: its HMAC key (32 bytes naming memoized streams), its budget and its
 * streams by name (`fresh:<fingerprint>` or `value:<HMAC-SHA256 hex>`), in the Python ledger's layout.
 */
internal class LedgerData(val key: ByteArray, val budget: Budget, val streams: LinkedHashMap<String, Stream>) {
    val keyHex: String get() = Bytes.toHex(key)
}

/**
 * The ledger file format, versions 1 and 2, exactly as Python's `PrivacyLedger` reads and writes it
 * (`ldp/privacy/budget.py`): UTF-8 JSON with sorted keys and an indent of one space
 * (`json.dumps(..., sort_keys=True, indent=1)`, ASCII only, Python's float text), then a newline.
 *
 * `ldp-privacy-ledger/1` unless a stream is charged ε∞ from its second report (`linear: false`) or holds
 * privacy-loss atoms: then `ldp-privacy-ledger/2`, every stream stating `linear`, which an older client
 * refuses instead of undercharging. A ledger whose budget composes exact curves (`exact`) or is a GDP μ
 * is refused with one line: this client does not compute those.
 */
internal object LedgerFile {
    const val FORMAT = "ldp-privacy-ledger/1"
    const val FORMAT_V2 = "ldp-privacy-ledger/2"

    private val BUDGET_FIELDS = setOf("epsilon", "delta", "composition", "mu")
    private val HEX64 = Regex("^[0-9a-fA-F]{64}$")

    /** The stored ledger of [bytes], checked; a [StateException] naming [label] when it is not one. */
    fun parse(bytes: ByteArray, label: String): LedgerData {
        val data = try {
            Json.parse(String(bytes, Charsets.UTF_8))
        } catch (_: LdpException) {
            throw StateException("$label is corrupt or truncated (not valid JSON); it was left untouched")
        }
        val format = (data as? Map<*, *>)?.get("format")
        if (format != FORMAT && format != FORMAT_V2) {
            throw StateException("$label is not an ldp privacy ledger (format $FORMAT or $FORMAT_V2)")
        }
        @Suppress("UNCHECKED_CAST")
        val doc = data as JsonObject
        val version2 = format == FORMAT_V2
        val corrupt = "$label is corrupt: missing or malformed fields"
        val budgetData = doc["budget"] as? Map<*, *> ?: throw StateException(corrupt)
        val exact = budgetData["composition"] == "exact"
        if (version2 && (budgetData.containsKey("mu") || exact)) {
            throw StateException(
                "$label holds a budget composed by the mechanisms' exact curves " +
                    "(${if (budgetData.containsKey("mu")) "a GDP mu" else "exact composition"}), " +
                    "which this client does not compute yet; charge it with the Python client",
            )
        }
        if (budgetData.keys.any { it !in BUDGET_FIELDS } || budgetData.containsKey("mu") || exact) throw StateException(corrupt)
        val budget = try {
            val epsilon = number(budgetData["epsilon"]) ?: throw StateException(corrupt)
            val delta = if (!budgetData.containsKey("delta")) 0.0 else number(budgetData["delta"]) ?: throw StateException(corrupt)
            val rule = budgetData["composition"] ?: "basic"
            Budget(epsilon, delta, rule as? String ?: throw StateException(corrupt))
        } catch (e: AccountingException) {
            throw StateException("$label is corrupt: its ${e.message}")
        }
        val keyText = doc["key"] as? String
        if (keyText == null || !HEX64.matches(keyText)) throw StateException(corrupt)
        val streamsData = doc["streams"] as? Map<*, *> ?: throw StateException(corrupt)
        val streams = LinkedHashMap<String, Stream>()
        for ((name, item) in streamsData) {
            streams[name as String] = stream(name, item as? Map<*, *> ?: throw StateException(corrupt), version2)
                ?: throw StateException(corrupt)
        }
        return LedgerData(Bytes.fromHex(keyText), budget, streams)
    }

    /** A finite JSON number as a double (an integer too; never a boolean). */
    private fun number(v: Any?): Double? {
        val x = when (v) {
            is Double -> v
            is BigInteger -> v.toDouble()
            else -> return null
        }
        return if (x.isNaN() || x.isInfinite()) null else x
    }

    /** A stream's record as Python reads it (`PrivacyLedger._parse`), or null when malformed. */
    private fun stream(name: String, item: Map<*, *>, version2: Boolean): Stream? {
        val spec = item["spec"] as? String ?: return null
        val epsilon = number(item["epsilon"]) ?: return null
        if (epsilon < 0) return null
        if (!item.containsKey("epsilon_cap")) return null
        val cap = if (item["epsilon_cap"] == null) null else number(item["epsilon_cap"]) ?: return null
        val reports = item["reports"] as? BigInteger ?: return null
        if (reports.signum() < 0 || reports.bitLength() > 62) return null
        val memoized = if (item.containsKey("memoized")) item["memoized"] as? Boolean ?: return null else name.startsWith("value:")
        val values = item["values"]?.let { it as? BigInteger ?: return null }
        if (values != null && values.signum() < 1) return null
        // version 2 states linear on every stream; in version 1 (every memoized stream RAPPOR's) it is true and absent
        val linear = if (version2) item["linear"] as? Boolean ?: return null else if (item.containsKey("linear")) return null else true
        val first = item["epsilon_first"]?.let { number(it) ?: return null }
        if (first != null && !(first >= 0 && first <= epsilon)) return null
        val loss = if (version2 && item["loss"] != null) loss(item["loss"]) ?: return null else null
        return Stream(spec, epsilon, cap, reports.toLong(), memoized, values, linear, first, loss)
    }

    /** Privacy-loss atoms as Python checks them: finite log-masses, as many of P as of Q, each side summing to 1. */
    private fun loss(item: Any?): StreamLoss? {
        val map = item as? Map<*, *> ?: return null
        val sides = listOf(map["log_p"], map["log_q"]).map { side ->
            val list = side as? List<*> ?: return null
            if (list.isEmpty()) return null
            list.map { number(it) ?: return null }
        }
        if (sides[0].size != sides[1].size) return null
        for (side in sides) {
            if (Math.abs(Composition.fsum(side.map { StrictMath.exp(minOf(it, 0.0)) }) - 1.0) > 1e-9) return null
        }
        return StreamLoss(sides[0], sides[1])
    }

    /** The file's bytes: version 2 when a stream is not linear or holds atoms, else version 1 (Python's `_to_json`). */
    fun write(data: LedgerData): ByteArray {
        val version2 = data.streams.values.any { !it.linear || it.loss != null }
        val streams = LinkedHashMap<String, Any?>()
        for ((name, s) in data.streams) {
            val item = LinkedHashMap<String, Any?>()
            item["spec"] = s.spec
            item["epsilon"] = s.epsilon
            item["epsilon_cap"] = s.epsilonCap
            item["reports"] = BigInteger.valueOf(s.reports)
            item["memoized"] = s.memoized
            item["values"] = s.values
            if (s.epsilonFirst != null) item["epsilon_first"] = s.epsilonFirst
            if (version2) {
                item["linear"] = s.linear
                if (s.loss != null) item["loss"] = mapOf("log_p" to s.loss.logP, "log_q" to s.loss.logQ)
            }
            streams[name] = item
        }
        val budget = mapOf(
            "epsilon" to data.budget.epsilon,
            "delta" to data.budget.delta,
            "composition" to data.budget.composition.text,
        )
        val doc = mapOf("format" to if (version2) FORMAT_V2 else FORMAT, "key" to data.keyHex, "budget" to budget, "streams" to streams)
        val out = StringBuilder()
        PythonJson.write(out, doc, 0)
        out.append('\n')
        return out.toString().toByteArray(Charsets.UTF_8)
    }
}

/** Python's `json.dumps(value, sort_keys=True, indent=1)` (ASCII output, `", "`/`": "` separators, float repr). */
internal object PythonJson {
    fun dump(value: Any?): String = StringBuilder().also { write(it, value, 0) }.toString()

    fun write(out: StringBuilder, value: Any?, level: Int) {
        when (value) {
            null -> out.append("null")
            is Boolean -> out.append(if (value) "true" else "false")
            is String -> quote(out, value)
            is Double -> out.append(FloatText.of(value))
            is BigInteger, is Long, is Int -> out.append(value.toString())
            is Map<*, *> -> {
                if (value.isEmpty()) {
                    out.append("{}")
                    return
                }
                out.append('{')
                val keys = value.keys.map { it as String }.sorted()
                keys.forEachIndexed { i, k ->
                    if (i > 0) out.append(',')
                    newline(out, level + 1)
                    quote(out, k)
                    out.append(": ")
                    write(out, value[k], level + 1)
                }
                newline(out, level)
                out.append('}')
            }
            is List<*> -> {
                if (value.isEmpty()) {
                    out.append("[]")
                    return
                }
                out.append('[')
                value.forEachIndexed { i, v ->
                    if (i > 0) out.append(',')
                    newline(out, level + 1)
                    write(out, v, level + 1)
                }
                newline(out, level)
                out.append(']')
            }
            else -> throw IllegalArgumentException("cannot write ${value.javaClass.name} as JSON")
        }
    }

    private fun newline(out: StringBuilder, level: Int) {
        out.append('\n')
        repeat(level) { out.append(' ') }
    }

    /** A JSON string as Python's `ensure_ascii=True` writes it (every character from U+0080 as `\uXXXX`). */
    private fun quote(out: StringBuilder, s: String) {
        Json.quoteTo(out, s, lineSeparators = false, asciiOnly = true)
    }
}
