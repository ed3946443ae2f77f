package dev.ldp.client

import java.math.BigInteger

/** A declared report field holding a float (a record's numeric attribute): written as the `value` field writes a float. */
public class FloatField(public val value: Double) {
    override fun equals(other: Any?): Boolean = other is FloatField && value.toRawBits() == other.value.toRawBits()

    override fun hashCode(): Int = value.hashCode()

    override fun toString(): String = FloatText.of(value)
}

/**
 * One report (the port of `js/src/report.ts`), with its JSON line ([toJson]) and binary form
 * ([toBinary]) byte for byte as the Python library writes them.
 *
 * @property spec the spec's fingerprint (16 lowercase hex digits)
 * @property cohort RAPPOR's cohort (an unsigned 32-bit integer)
 * @property seed a hashing mechanism's seed (an unsigned 64-bit integer)
 * @property value a domain value or bucket ([String], [BigInteger]) or a numeric output ([Double])
 * @property extra fields a spec's report schema declares, in schema order: integers ([Long],
 *   [BigInteger], [Int]), text ([String]), bytes ([ByteArray], written as base64) or [FloatField]
 * @property bits a bit vector, packed ([Packing])
 * @property client a client id
 * @property group a report group (version 2 reports)
 */
public class Report @JvmOverloads constructor(
    public val spec: String,
    public val value: Any? = null,
    public val bits: ByteArray? = null,
    public val seed: BigInteger? = null,
    public val cohort: Long? = null,
    public val extra: List<Pair<String, Any>> = emptyList(),
    public val client: String? = null,
    public val group: String? = null,
) {
    init {
        if (value != null && value !is String && value !is BigInteger && value !is Double) {
            fail("a report value must be a String, a BigInteger or a Double, got a ${value.javaClass.simpleName}")
        }
    }

    /** 1, or 2 when the report carries a group. */
    public val version: Int get() = if (group == null) 1 else 2

    /** The JSON line: keys v, spec, cohort, seed, value, the declared fields, bits, client, group (absent ones omitted). */
    public fun toJson(): String {
        val out = StringBuilder(64 + 2 * (bits?.size ?: 0)).append("{\"v\":").append(version).append(",\"spec\":")
        Json.quoteTo(out, spec, true)
        if (cohort != null) out.append(",\"cohort\":").append(cohort)
        if (seed != null) out.append(",\"seed\":").also { Json.write(it, seed, false, true) }
        if (value != null) out.append(",\"value\":").also { Json.write(it, value, false, true) }
        for ((name, field) in extra) out.append(',').append(Json.quote(name, true)).append(':').append(extraJson(field))
        if (bits != null) out.append(",\"bits\":\"").append(Bytes.toBase64(bits)).append('"')
        if (client != null) out.append(",\"client\":").append(Json.quote(client, true))
        if (group != null) out.append(",\"group\":").append(Json.quote(group, true))
        return out.append('}').toString()
    }

    private fun extraJson(field: Any): String = when (field) {
        is ByteArray -> "\"${Bytes.toBase64(field)}\""
        is String -> Json.dump(field, false, true)
        is FloatField -> Json.dump(field.value, false, true)
        is Long, is Int, is BigInteger -> field.toString()
        else -> fail("report field of type ${field.javaClass.simpleName} has no JSON form")
    }

    /** The binary form: v, presence mask, fingerprint (8 bytes), then the present fields, big-endian; an [LdpException] for a report with declared fields. */
    public fun toBinary(): ByteArray {
        if (extra.isNotEmpty()) fail("report field ${extra[0].first} has no binary form")
        var mask = 0
        val body = ArrayList<ByteArray>()
        if (value != null) { mask = mask or 1; body.add(valueField(value)) }
        if (seed != null) { mask = mask or 2; body.add(Bytes.toBytesBE(seed, 8)) }
        if (bits != null) {
            if (bits.size > 0xffff) fail("report bits longer than 65535 bytes")
            mask = mask or 4
            body.add(Bytes.concat(Bytes.toBytesBE(bits.size.toLong(), 2), bits))
        }
        if (cohort != null) { mask = mask or 8; body.add(Bytes.toBytesBE(cohort, 4)) }
        if (client != null) { mask = mask or 16; body.add(text(client)) }
        if (group != null) { mask = mask or 32; body.add(text(group)) }
        return Bytes.concat(byteArrayOf(version.toByte(), mask.toByte()), Bytes.fromHex(spec), *body.toTypedArray())
    }

    private fun text(value: String): ByteArray {
        val raw = Bytes.utf8(value)
        if (raw.size > 0xffff) fail("report text longer than 65535 bytes")
        return Bytes.concat(Bytes.toBytesBE(raw.size.toLong(), 2), raw)
    }

    private fun valueField(value: Any): ByteArray = when (value) {
        is BigInteger -> {
            if (value.bitLength() > 63) fail("report integer outside int64: $value")
            Bytes.concat(byteArrayOf(0), Bytes.toBytesBE(value.toLong(), 8))
        }
        is Double -> Bytes.concat(byteArrayOf(1), Bytes.toBytesBE(value.toRawBits(), 8))
        else -> Bytes.concat(byteArrayOf(2), text(value as String))
    }

    override fun toString(): String = toJson()

    override fun equals(other: Any?): Boolean = other is Report && toJson() == other.toJson()

    override fun hashCode(): Int = toJson().hashCode()
}
