package dev.ldp.client

import java.math.BigInteger
import java.security.MessageDigest

/**
 * A loaded mechanism spec: its canonical fields, canonical JSON and fingerprint (the port of
 * `js/src/spec.ts`). Only [Spec.load] makes one, so every spec an encoder sees has had its fields
 * checked and its privacy claim certified against its exact probabilities.
 *
 * The client never calibrates probabilities from ε (that uses libm's `exp`; one ulp changes the
 * fingerprint): it reads the server's spec, with its exact fractions, and checks the fingerprint. A
 * spec file that leaves out a field the server calibrates (`p`, `q`, `g`) is refused with a
 * [SpecException] saying so.
 *
 * How a mechanism family reads its fields: [domain], [fraction], [int], [float], [string], or
 * [fields] (canonical JSON values: [BigInteger] integers, [Double] floats, fraction strings,
 * [String], lists, maps; immutable).
 */
public class Spec private constructor(
    /** The registered mechanism name (lowercase, `-` not `_`). */
    public val mechanism: String,
    /** The canonical fields, with `mechanism` and `format` (immutable). */
    public val fields: JsonObject,
    /** The canonical JSON: sorted keys, no whitespace, Python's float text. */
    public val canonicalJson: String,
    /** The first 16 hex digits of SHA-256 of [canonicalJson]. */
    public val fingerprint: String,
) {
    /** The categorical domain (frequency oracles, basic RAPPOR): [String] or [BigInteger] values. */
    @Suppress("UNCHECKED_CAST")
    public fun domain(): List<Any> = fields["domain"] as? List<Any> ?: specFail("$mechanism spec has no domain")

    /** A probability field as an exact fraction. */
    public fun fraction(name: String): Fraction {
        val v = fields[name]
        return if (v is String) Fraction.parse(v) else specFail("$mechanism spec has no probability $name")
    }

    /** An integer field. */
    public fun int(name: String): BigInteger = fields[name] as? BigInteger ?: specFail("$mechanism spec has no integer $name")

    /** An integer field that must fit an [Int] (sizes, counts). */
    public fun intValue(name: String): Int {
        val v = int(name)
        if (v.bitLength() > 31) specFail("$mechanism: $name=$v is too large for this client")
        return v.toInt()
    }

    /** A float field. */
    public fun float(name: String): Double = fields[name] as? Double ?: specFail("$mechanism spec has no number $name")

    /** A text field. */
    public fun string(name: String): String = fields[name] as? String ?: specFail("$mechanism spec has no text field $name")

    override fun toString(): String = canonicalJson

    override fun equals(other: Any?): Boolean = other is Spec && canonicalJson == other.canonicalJson

    override fun hashCode(): Int = canonicalJson.hashCode()

    public companion object {
        /** The layout version of spec JSON (`"format": 1`). */
        @JvmField public val FORMAT: BigInteger = BigInteger.ONE

        private const val CALIBRATION =
            "is calibrated from epsilon by the server: load the server's spec (this client does not calibrate)"

        /**
         * Load a spec from JSON text: known fields, canonical form, fingerprint, and the privacy claim
         * checked against the exact probabilities. With `expectedFingerprint` (16 hex digits; an ETag's
         * quotes and `W/` are removed), refuse a spec whose canonical form does not have it; pass null
         * only when the spec's origin is trusted otherwise (a spec file shipped with the app). A
         * [SpecException] (or [LdpException] for text that is not JSON) names what is wrong.
         */
        @JvmStatic
        @JvmOverloads
        public fun load(text: String, expectedFingerprint: String? = null): Spec =
            load(Json.parse(text) as? JsonObject ?: specFail("a spec must be a JSON object"), expectedFingerprint)

        /** Load a spec from a parsed JSON object ([Json.parse]'s types), as [load] of text. */
        @JvmStatic
        @JvmOverloads
        public fun load(data: JsonObject, expectedFingerprint: String? = null): Spec {
            val expected = expectedFingerprint?.let { fingerprintOfTag(it) }
            val fields = frozen(canonicalFields(data))
            val canonicalJson = Json.dump(fields)
            val spec = Spec(fields["mechanism"] as String, fields, canonicalJson, fingerprintOf(canonicalJson))
            if (expected != null && expected != spec.fingerprint) {
                specFail(
                    "spec fingerprint ${spec.fingerprint} is not the expected $expected: this is not the task's spec " +
                        "(or it was changed on the way); load the spec the collector serves",
                )
            }
            return spec
        }

        /** The registered mechanism name of `name` (case-insensitive, `_` or `-`); a [SpecException] for an unknown one. */
        @JvmStatic
        public fun mechanismName(name: String): String {
            val key = name.trim().lowercase().replace('_', '-')
            if (!SpecFields.FIELDS.containsKey(key)) specFail("unknown mechanism ${Json.quote(Text.clip(name), true)}")
            return key
        }

        /** Canonical fields of a spec object: known fields, their types, derived fields, and the privacy claim. */
        @JvmStatic
        public fun canonicalFields(data: JsonObject): MutableMap<String, Any?> {
            val given = data["mechanism"] as? String ?: specFail("spec has no 'mechanism' field")
            val mechanism = mechanismName(given)
            Families.checkPresent(mechanism) // its artifact on the class path, before its fields are read
            val fields = SpecFields.FIELDS.getValue(mechanism)
            if (data.containsKey("format") && data["format"] != FORMAT) specFail("spec format ${Json.dump(data["format"])} is not supported")
            val known = fields.map { it.name }.toSet()
            val unknown = data.keys.filter { it != "mechanism" && it != "format" && it !in known }
            if (unknown.isNotEmpty()) specFail("$mechanism spec has unknown fields: ${unknown.joinToString(", ") { Text.clip(it) }}")
            val out = LinkedHashMap<String, Any?>()
            out["mechanism"] = mechanism
            out["format"] = FORMAT
            for (field in fields) {
                val value = data[field.name]
                if (!data.containsKey(field.name) || (value == null && field.hasDefault && field.default == null)) {
                    if (!field.hasDefault) {
                        val calibrated = SpecFields.CALIBRATED[mechanism]?.contains(field.name) == true
                        specFail("$mechanism: ${field.name} ${if (calibrated) CALIBRATION else "is required"}")
                    }
                    out[field.name] = field.default
                } else {
                    out[field.name] = normalize(field.kind, value, field.name)
                }
            }
            PrivacyRegistry.completeFields(out) // a mechanism's derived fields (RAPPOR's sizes)
            Claim.check(out)
            return out
        }

        private fun normalize(kind: String, v: Any?, name: String): Any? = when (kind) {
            "probability" -> {
                val f = when (v) {
                    is String -> Fraction.parse(v)
                    is BigInteger -> Fraction.of(v)
                    is Double -> if (v.isNaN() || v.isInfinite()) specFail("$name must be a finite number, got ${Json.dump(v)}") else Fraction.ofDouble(v)
                    else -> specFail("$name must be a number or a fraction string, got ${clipJson(v)}")
                }
                if (f.num.signum() < 0 || f > Fraction.ONE) specFail("$name must be in [0, 1], got $f")
                f.toString()
            }
            "float" -> when {
                v is BigInteger -> v.toDouble()
                v is Double && !v.isNaN() && !v.isInfinite() -> v
                else -> specFail("$name must be a finite number, got ${clipJson(v)}")
            }
            "integer" -> when {
                v is BigInteger -> v
                v is Double && !v.isInfinite() && v == Math.floor(v) -> java.math.BigDecimal(v).toBigInteger()
                else -> specFail("$name must be an integer, got ${clipJson(v)}")
            }
            "lowercase" -> (v as? String)?.lowercase() ?: specFail("$name must be a string")
            "domain" -> domain(v, name)
            "parts" -> parts(v, name)
            else -> throw IllegalStateException("unknown field kind $kind")
        }

        private fun clipJson(v: Any?): String = Text.clip(Json.dump(v))

        private fun domain(v: Any?, name: String): Any? {
            if (v == null) return null
            if (v !is List<*> || v.isEmpty()) specFail("$name must be a non-empty list")
            val seen = HashSet<String>()
            for (item in v) {
                if (item !is String && item !is BigInteger) specFail("$name values must be strings or integers")
                if (!seen.add(item.toString())) specFail("$name has duplicate values (or values that print the same)")
            }
            return v
        }

        /**
         * The parts of a composite spec (a multi-attribute record's attributes): a non-empty list of
         * objects, each a spec of its own with a `name`, kept in order; each held as its canonical
         * fields with its `name`, without `format`.
         */
        private fun parts(v: Any?, name: String): Any {
            if (v !is List<*> || v.isEmpty()) specFail("$name must be a non-empty list of spec objects")
            return v.mapIndexed { i, item ->
                if (item !is Map<*, *>) specFail("$name[$i] must be an object with 'name' and 'mechanism'")
                @Suppress("UNCHECKED_CAST")
                val obj = item as JsonObject
                val label = obj["name"]
                if (label !is String || label.trim().isEmpty()) specFail("$name[$i] needs a non-empty 'name'")
                val out = try {
                    canonicalFields(obj.filterKeys { it != "name" })
                } catch (e: SpecException) {
                    // as Python's MultiAttribute names the attribute whose spec is refused
                    specFail("multi-attribute: attribute '${label.trim()}': ${e.message}")
                }
                out.remove("format")
                out["name"] = label.trim()
                out
            }
        }

        /** Fingerprint: the first 16 hex digits of SHA-256 of the UTF-8 of the canonical JSON. */
        @JvmStatic
        public fun fingerprintOf(canonicalJson: String): String =
            Bytes.toHex(MessageDigest.getInstance("SHA-256").digest(Bytes.utf8(canonicalJson))).substring(0, 16)

        private val HEX16 = Regex("^[0-9a-f]{16}$")

        /**
         * The spec fingerprint an ETag (or a task description's `fingerprint`) holds: quotes and a weak
         * `W/` prefix removed, lowercase, 16 hex digits; a [SpecException] otherwise.
         */
        @JvmStatic
        public fun fingerprintOfTag(tag: String): String {
            var t = tag.trim()
            if (t.startsWith("W/")) t = t.substring(2)
            if (t.length >= 2 && t.startsWith("\"") && t.endsWith("\"")) t = t.substring(1, t.length - 1)
            t = t.lowercase()
            if (!HEX16.matches(t)) {
                specFail("expected spec fingerprint ${Json.quote(Text.clip(tag, 40), true)} is not 16 hex digits (an ETag such as \"7d94b1758a32a30d\")")
            }
            return t
        }

        /** A deep immutable copy of canonical JSON values. */
        private fun frozen(value: Map<String, Any?>): JsonObject =
            java.util.Collections.unmodifiableMap(LinkedHashMap<String, Any?>().also { m -> value.forEach { (k, v) -> m[k] = frozenValue(v) } })

        private fun frozenValue(v: Any?): Any? = when (v) {
            is List<*> -> java.util.Collections.unmodifiableList(v.map { frozenValue(it) })
            is Map<*, *> -> {
                @Suppress("UNCHECKED_CAST")
                frozen(v as Map<String, Any?>)
            }
            else -> v
        }
    }
}
