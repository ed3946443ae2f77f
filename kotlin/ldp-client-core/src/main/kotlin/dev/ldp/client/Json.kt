package dev.ldp.client

import java.math.BigInteger

/** A JSON object as [Json] reads it: keys in document order. */
public typealias JsonObject = Map<String, Any?>

/**
 * JSON with Python's number model (the port of `js/src/json.ts`). Reading gives `null`, [Boolean],
 * [String], [BigInteger] for integers (any size, never rounded through a double), [Double] for numbers
 * with a fraction or an exponent (Python floats), [List] and [JsonObject] (a [LinkedHashMap]).
 * Writing follows `json.dumps(..., ensure_ascii=False)` with `,`/`:` separators: floats as
 * [FloatText], [Int] and [Long] as integers too.
 */
public object Json {
    /** Parse JSON text; an [LdpException] naming the position when it is not JSON. */
    @JvmStatic
    public fun parse(text: String): Any? {
        val parser = Parser(text)
        parser.space()
        val value = parser.value()
        parser.space()
        if (parser.pos != text.length) parser.fail("trailing characters")
        return value
    }

    /** Parse JSON text that must be an object. */
    @JvmStatic
    public fun parseObject(text: String, what: String = "JSON text"): JsonObject {
        val v = parse(text)
        @Suppress("UNCHECKED_CAST")
        return v as? JsonObject ?: fail("$what must be a JSON object")
    }

    private class Parser(val text: String) {
        var pos = 0

        fun fail(why: String): Nothing = throw LdpException("JSON: $why at position $pos")

        fun space() {
            while (pos < text.length && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n' || text[pos] == '\r')) pos++
        }

        fun value(): Any? {
            if (pos >= text.length) fail("unexpected end")
            val c = text[pos]
            return when {
                c == '{' -> obj()
                c == '[' -> array()
                c == '"' -> string()
                c == '-' || c in '0'..'9' -> number()
                text.startsWith("true", pos) -> { pos += 4; true }
                text.startsWith("false", pos) -> { pos += 5; false }
                text.startsWith("null", pos) -> { pos += 4; null }
                else -> fail("unexpected character")
            }
        }

        fun obj(): JsonObject {
            val out = LinkedHashMap<String, Any?>()
            pos++
            space()
            if (pos < text.length && text[pos] == '}') {
                pos++
                return out
            }
            while (true) {
                space()
                if (pos >= text.length || text[pos] != '"') fail("expected a key")
                val key = string()
                space()
                if (pos >= text.length || text[pos++] != ':') fail("expected ':'")
                space()
                out[key] = value()
                space()
                if (pos >= text.length) fail("expected ',' or '}'")
                when (text[pos++]) {
                    '}' -> return out
                    ',' -> {}
                    else -> fail("expected ',' or '}'")
                }
            }
        }

        fun array(): List<Any?> {
            val out = ArrayList<Any?>()
            pos++
            space()
            if (pos < text.length && text[pos] == ']') {
                pos++
                return out
            }
            while (true) {
                space()
                out.add(value())
                space()
                if (pos >= text.length) fail("expected ',' or ']'")
                when (text[pos++]) {
                    ']' -> return out
                    ',' -> {}
                    else -> fail("expected ',' or ']'")
                }
            }
        }

        fun string(): String {
            pos++ // the opening quote
            val out = StringBuilder()
            while (true) {
                if (pos >= text.length) fail("unterminated string")
                val c = text[pos++]
                when {
                    c == '"' -> return out.toString()
                    c < ' ' -> { pos--; fail("bad string (a raw control character)") }
                    c != '\\' -> out.append(c)
                    else -> {
                        if (pos >= text.length) fail("bad string")
                        when (val e = text[pos++]) {
                            '"', '\\', '/' -> out.append(e)
                            'b' -> out.append('\b')
                            'f' -> out.append('\u000c')
                            'n' -> out.append('\n')
                            'r' -> out.append('\r')
                            't' -> out.append('\t')
                            'u' -> {
                                if (pos + 4 > text.length) fail("bad string escape")
                                var code = 0
                                for (i in 0 until 4) {
                                    val d = Character.digit(text[pos + i], 16)
                                    if (d < 0) fail("bad string escape")
                                    code = code * 16 + d
                                }
                                pos += 4
                                out.append(code.toChar())
                            }
                            else -> { pos--; fail("bad string escape") }
                        }
                    }
                }
            }
        }

        fun number(): Any {
            val start = pos
            if (text[pos] == '-') pos++
            if (pos >= text.length) fail("bad number")
            if (text[pos] == '0') pos++ else if (text[pos] in '1'..'9') { while (pos < text.length && text[pos] in '0'..'9') pos++ } else fail("bad number")
            var isFloat = false
            if (pos < text.length && text[pos] == '.') {
                pos++
                val digits = pos
                while (pos < text.length && text[pos] in '0'..'9') pos++
                if (pos == digits) fail("bad number")
                isFloat = true
            }
            if (pos < text.length && (text[pos] == 'e' || text[pos] == 'E')) {
                pos++
                if (pos < text.length && (text[pos] == '+' || text[pos] == '-')) pos++
                val digits = pos
                while (pos < text.length && text[pos] in '0'..'9') pos++
                if (pos == digits) fail("bad number")
                isFloat = true
            }
            val literal = text.substring(start, pos)
            return if (isFloat) literal.toDouble() else BigInteger(literal)
        }
    }

    /**
     * A JSON string as Python writes it with ensure_ascii=False: `"`, `\` and the C0 controls escaped;
     * with `lineSeparators`, also U+0085, U+2028, U+2029 (report lines), never in spec JSON.
     */
    @JvmStatic
    @JvmOverloads
    public fun quote(text: String, lineSeparators: Boolean = false): String =
        quoteTo(StringBuilder(text.length + 2), text, lineSeparators).toString()

    /** [quote] of `text` appended to `out` (no intermediate string); returns `out`. */
    internal fun quoteTo(out: StringBuilder, text: String, lineSeparators: Boolean, asciiOnly: Boolean = false): StringBuilder {
        out.append('"')
        for (c in text) {
            when {
                c == '"' -> out.append("\\\"")
                c == '\\' -> out.append("\\\\")
                c == '\n' -> out.append("\\n")
                c == '\r' -> out.append("\\r")
                c == '\t' -> out.append("\\t")
                c == '\b' -> out.append("\\b")
                c == '\u000c' -> out.append("\\f")
                c < ' ' || (asciiOnly && c.code >= 0x80) ||
                    (lineSeparators && (c == '\u0085' || c == '\u2028' || c == '\u2029')) ->
                    out.append("\\u").append(Integer.toHexString(c.code).padStart(4, '0'))
                else -> out.append(c)
            }
        }
        return out.append('"')
    }

    /**
     * Compact JSON (`,` and `:`), keys sorted by code point when `sortKeys`; floats as Python writes
     * them; integers ([BigInteger], [Long], [Int]) in decimal. An [LdpException] for another type.
     */
    @JvmStatic
    @JvmOverloads
    public fun dump(value: Any?, sortKeys: Boolean = true, lineSeparators: Boolean = false): String {
        val out = StringBuilder()
        write(out, value, sortKeys, lineSeparators)
        return out.toString()
    }

    /** [dump] of `value` appended to `out`. */
    internal fun write(out: StringBuilder, value: Any?, sortKeys: Boolean, lineSeparators: Boolean) {
        when (value) {
            null -> out.append("null")
            is Boolean -> out.append(if (value) "true" else "false")
            is String -> quoteTo(out, value, lineSeparators)
            is BigInteger -> if (value.bitLength() < 64) out.append(value.toLong()) else out.append(value.toString()) // the same digits
            is Long, is Int -> out.append(value.toString())
            is Double -> out.append(FloatText.of(value))
            is List<*> -> {
                out.append('[')
                value.forEachIndexed { i, v ->
                    if (i > 0) out.append(',')
                    write(out, v, sortKeys, lineSeparators)
                }
                out.append(']')
            }
            is Map<*, *> -> {
                val keys = value.keys.map { it as? String ?: fail("a JSON object key must be a string") }
                out.append('{')
                (if (sortKeys) keys.sortedWith(CODE_POINT_ORDER) else keys).forEachIndexed { i, k ->
                    if (i > 0) out.append(',')
                    quoteTo(out, k, lineSeparators).append(':')
                    write(out, value[k], sortKeys, lineSeparators)
                }
                out.append('}')
            }
            else -> fail("no JSON form for a ${value.javaClass.simpleName}")
        }
    }

    /** Strings ordered by code point (Python's order; UTF-16 order differs above U+D7FF). */
    @JvmField
    public val CODE_POINT_ORDER: Comparator<String> = Comparator { a, b ->
        var i = 0
        var j = 0
        while (i < a.length && j < b.length) {
            val x = a.codePointAt(i)
            val y = b.codePointAt(j)
            if (x != y) return@Comparator x.compareTo(y)
            i += Character.charCount(x)
            j += Character.charCount(y)
        }
        (a.length - i).compareTo(b.length - j)
    }
}
