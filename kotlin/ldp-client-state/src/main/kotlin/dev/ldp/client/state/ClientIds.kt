@file:JvmName("ClientIds")

package dev.ldp.client.state

import java.security.MessageDigest

private val ZERO_FRACTION = Regex("([+-]?[0-9]+)\\.0+")

/**
 * The canonical text of a client id, as Python's `canonical_client_id`: the
 * text exactly as given (no trimming, no case folding), except that the zero
 * fraction of a decimal integer is dropped (`"12.0"` and `"12.000"` are
 * `"12"`, how a spreadsheet writes an integer id); leading zeros and signs
 * stay (`"007"` is not `"7"`). So `1`, `"1"` and `"1.0"` are one client,
 * with one secret and one budget.
 *
 * @throws dev.ldp.client.LdpException if [id] is empty.
 */
public fun canonicalClientId(id: String): String {
    if (id.isEmpty()) throw dev.ldp.client.LdpException("client id is empty")
    return ZERO_FRACTION.matchEntire(id)?.groupValues?.get(1) ?: id
}

/** The canonical text of an integer client id: its decimal form. */
public fun canonicalClientId(id: Long): String = id.toString()

/**
 * The base name (without extension) of a client's files: the first 32 hex
 * digits of SHA-256 of its canonical id, as Python's `state_path` names them
 * (so a state directory is one set of clients for both). An id never becomes
 * a path: `"../../etc/passwd"` is just another hash.
 */
public fun clientFileStem(canonicalId: String): String {
    val digest = MessageDigest.getInstance("SHA-256").digest(utf8SurrogatePass(canonicalId))
    return dev.ldp.client.Bytes.toHex(digest).substring(0, 32)
}

/**
 * UTF-8 of [text], writing a lone surrogate as its own 3-byte form (Python's
 * `"surrogatepass"`), where `String.toByteArray` would write `?`: two
 * different ids must never share a file.
 */
internal fun utf8SurrogatePass(text: String): ByteArray {
    val out = java.io.ByteArrayOutputStream(text.length + 8)
    var i = 0
    while (i < text.length) {
        val c = text[i]
        val cp: Int
        if (Character.isHighSurrogate(c) && i + 1 < text.length && Character.isLowSurrogate(text[i + 1])) {
            cp = Character.toCodePoint(c, text[i + 1])
            i += 2
        } else {
            cp = c.code
            i += 1
        }
        when {
            cp < 0x80 -> out.write(cp)
            cp < 0x800 -> {
                out.write(0xc0 or (cp shr 6))
                out.write(0x80 or (cp and 0x3f))
            }
            cp < 0x10000 -> {
                out.write(0xe0 or (cp shr 12))
                out.write(0x80 or ((cp shr 6) and 0x3f))
                out.write(0x80 or (cp and 0x3f))
            }
            else -> {
                out.write(0xf0 or (cp shr 18))
                out.write(0x80 or ((cp shr 12) and 0x3f))
                out.write(0x80 or ((cp shr 6) and 0x3f))
                out.write(0x80 or (cp and 0x3f))
            }
        }
    }
    return out.toByteArray()
}
