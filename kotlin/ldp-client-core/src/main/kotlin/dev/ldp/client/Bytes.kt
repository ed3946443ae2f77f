package dev.ldp.client

import java.math.BigInteger

/** Byte helpers: hex, UTF-8, base64, big-endian integers (the port of `js/src/bytes.ts`). */
public object Bytes {
    private val HEX = "0123456789abcdef".toCharArray()
    private val B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".toCharArray()

    /** The UTF-8 bytes of `text` (a lone surrogate is refused: see [Text.isWellFormed]). */
    @JvmStatic
    public fun utf8(text: String): ByteArray = text.toByteArray(Charsets.UTF_8)

    /** Lowercase hex of `bytes`. */
    @JvmStatic
    public fun toHex(bytes: ByteArray): String {
        val out = CharArray(2 * bytes.size)
        for (i in bytes.indices) {
            val b = bytes[i].toInt() and 0xff
            out[2 * i] = HEX[b ushr 4]
            out[2 * i + 1] = HEX[b and 15]
        }
        return String(out)
    }

    /** The bytes of a hex string (either case); an [LdpException] when it is not hex. */
    @JvmStatic
    public fun fromHex(hex: String): ByteArray {
        if (hex.length % 2 != 0) fail("not hex: ${Text.clip(hex)}")
        val out = ByteArray(hex.length / 2)
        for (i in out.indices) {
            val hi = Character.digit(hex[2 * i], 16)
            val lo = Character.digit(hex[2 * i + 1], 16)
            if (hi < 0 || lo < 0) fail("not hex: ${Text.clip(hex)}")
            out[i] = ((hi shl 4) or lo).toByte()
        }
        return out
    }

    /** The parts, concatenated. */
    @JvmStatic
    public fun concat(vararg parts: ByteArray): ByteArray {
        val out = ByteArray(parts.sumOf { it.size })
        var offset = 0
        for (p in parts) {
            System.arraycopy(p, 0, out, offset, p.size)
            offset += p.size
        }
        return out
    }

    /** Unsigned big-endian integer of the bytes. */
    @JvmStatic
    public fun toBigIntegerBE(bytes: ByteArray): BigInteger = BigInteger(1, bytes)

    /** Unsigned little-endian integer of the bytes. */
    @JvmStatic
    public fun toBigIntegerLE(bytes: ByteArray): BigInteger = BigInteger(1, bytes.reversedArray())

    /** `x` (0 ≤ x < 2^(8·length)) as `length` big-endian bytes; an [LdpException] when it does not fit. */
    @JvmStatic
    public fun toBytesBE(x: BigInteger, length: Int): ByteArray {
        if (x.signum() < 0 || x.bitLength() > 8 * length) fail("$x does not fit in $length bytes")
        val raw = x.toByteArray() // big-endian two's complement, maybe with a leading 0
        val out = ByteArray(length)
        val n = minOf(raw.size, length)
        System.arraycopy(raw, raw.size - n, out, length - n, n)
        return out
    }

    /** `x` (0 ≤ x < 2^(8·length), length ≤ 8) as `length` big-endian bytes. */
    @JvmStatic
    public fun toBytesBE(x: Long, length: Int): ByteArray {
        if (length < 8 && (x < 0 || x ushr (8 * length) != 0L)) fail("$x does not fit in $length bytes")
        val out = ByteArray(length)
        var v = x
        for (i in length - 1 downTo 0) {
            out[i] = v.toByte()
            v = v ushr 8
        }
        return out
    }

    /** Standard base64 with `=` padding. */
    @JvmStatic
    public fun toBase64(bytes: ByteArray): String {
        val out = StringBuilder((bytes.size + 2) / 3 * 4)
        val whole = bytes.size - bytes.size % 3
        var i = 0
        while (i < whole) {
            val n = ((bytes[i].toInt() and 0xff) shl 16) or ((bytes[i + 1].toInt() and 0xff) shl 8) or
                (bytes[i + 2].toInt() and 0xff)
            out.append(B64[n shr 18]).append(B64[(n shr 12) and 63]).append(B64[(n shr 6) and 63]).append(B64[n and 63])
            i += 3
        }
        if (whole < bytes.size) {
            val second = if (bytes.size - whole == 2) bytes[whole + 1].toInt() and 0xff else 0
            val n = ((bytes[whole].toInt() and 0xff) shl 16) or (second shl 8)
            out.append(B64[n shr 18]).append(B64[(n shr 12) and 63])
            out.append(if (bytes.size - whole == 2) B64[(n shr 6) and 63] else '=').append('=')
        }
        return out.toString()
    }

    /** The bytes of standard base64 text (with padding); an [LdpException] when it is not base64. */
    @JvmStatic
    public fun fromBase64(text: String): ByteArray =
        try {
            java.util.Base64.getDecoder().decode(text)
        } catch (e: IllegalArgumentException) {
            fail("not base64: ${Text.clip(text)}")
        }
}
