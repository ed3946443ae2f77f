package dev.ldp.client

import java.math.BigInteger

/**
 * Values to encode, in Python's types (the port of `js/src/values.ts`): a [String], an integer
 * ([BigInteger] of any size; [Int], [Long], [Short] and [Byte] are read as one), a float ([Double]:
 * `42.0` is hashed as `"42.0"`, as in Python) or a [Boolean]. Domain lookup accepts a float with an
 * integral value and the decimal text of an integer.
 */
public object Values {
    /** The value in the canonical types ([String], [BigInteger], [Double], [Boolean]); a [ValueException] for another type. */
    @JvmStatic
    public fun normalize(value: Any?): Any = when (value) {
        is String, is BigInteger, is Double, is Boolean -> value
        is Int -> BigInteger.valueOf(value.toLong())
        is Long -> BigInteger.valueOf(value)
        is Short -> BigInteger.valueOf(value.toLong())
        is Byte -> BigInteger.valueOf(value.toLong())
        null -> throw ValueException("value is null: encode a string, an integer, a float or a boolean")
        else -> throw ValueException("unsupported value type ${value.javaClass.simpleName}: encode a string, an integer, a float or a boolean")
    }

    /** Python's `str(value)`: the string, decimal integers, `repr` floats, `True`/`False`. */
    @JvmStatic
    public fun text(value: Any?): String = when (val v = normalize(value)) {
        is String -> v
        is BigInteger -> v.toString()
        is Double -> FloatText.of(v)
        is Boolean -> if (v) "True" else "False"
        else -> throw IllegalStateException("unreachable")
    }

    /** The bytes hashed for a value (Bloom filters, memo keys): the UTF-8 of [text]; a lone surrogate is refused. */
    @JvmStatic
    public fun bytes(value: Any?): ByteArray {
        val v = normalize(value)
        if (v is String && !Text.isWellFormed(v)) {
            throw ValueException("value ${Text.clip(v, 80, true)} has a lone surrogate: it is not text that UTF-8 can encode")
        }
        return Bytes.utf8(text(v))
    }
}

/**
 * Value → index of a categorical domain (strings and integers, as a loaded spec holds them). Integer
 * domains also accept the decimal text of their values (`"7"`, values read from files) and floats
 * with an integral value; booleans are refused (never read as 1/0).
 */
public class DomainIndex(domain: List<Any?>) {
    /** The domain values, in order ([String] or [BigInteger]). */
    public val domain: List<Any> = domain.map {
        when (it) {
            is String, is BigInteger -> it
            is Int, is Long -> BigInteger.valueOf((it as Number).toLong())
            else -> throw SpecException("domain values must be strings or integers, got ${Json.dump(it)}")
        }
    }
    private val byInteger = HashMap<BigInteger, Int>()
    private val byText = HashMap<String, Int>()

    init {
        this.domain.forEachIndexed { i, v -> if (v is BigInteger) byInteger.putIfAbsent(v, i) else byText.putIfAbsent(v as String, i) }
        // the decimal text of an integer value also finds it (a string value of the same text first)
        this.domain.forEachIndexed { i, v -> if (v is BigInteger) byText.putIfAbsent(v.toString(), i) }
    }

    /** The number of values. */
    public val size: Int get() = domain.size

    /** The index of `value`; a [ValueException] when it is not in the domain. */
    public fun indexOf(value: Any?): Int {
        val v = Values.normalize(value)
        val found = when (v) {
            is String -> byText[v]
            is BigInteger -> byInteger[v]
            is Double -> if (!v.isInfinite() && v == Math.floor(v)) byInteger[java.math.BigDecimal(v).toBigInteger()] else null
            else -> null
        }
        return found ?: throw ValueException("value ${Text.clip(Values.text(v), 80, true)} is not in the domain")
    }
}
