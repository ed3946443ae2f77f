@file:JvmName("Shake256")

package dev.ldp.client.hashing

import org.bouncycastle.crypto.digests.SHAKEDigest

/**
 * The output of SHAKE-256 of one input, read in order: the keyed stream of
 * RAPPOR's permanent randomized response and of the memoized mechanisms'
 * PRFs (see [prfInput]). Successive [read]s continue the one XOF output, so
 * `read(3)` then `read(5)` gives the same 8 bytes as `read(8)`.
 *
 * Bouncy Castle's `SHAKEDigest(256)` computes it: `java.security` has no
 * SHAKE before Java 25, and Android has none. Not thread-safe: one stream per
 * thread (a stream is cheap).
 */
public class Shake256Stream(input: ByteArray) {
    private val xof = SHAKEDigest(256).apply { update(input, 0, input.size) }

    /** The next [n] bytes of the output. */
    public fun read(n: Int): ByteArray {
        require(n >= 0) { "cannot read $n bytes" }
        val out = ByteArray(n)
        if (n > 0) xof.doOutput(out, 0, n)
        return out
    }
}

/** The first [n] bytes of SHAKE-256 of [input]. */
public fun shake256(input: ByteArray, n: Int): ByteArray = Shake256Stream(input).read(n)

/**
 * The input of a keyed PRF stream: each part in order, prefixed by its length
 * as 4 big-endian bytes (RAPPOR: the label `"ldp-rappor-prr-v1"`, the client
 * secret, the spec fingerprint as ASCII hex, the memo key).
 */
public fun prfInput(vararg parts: ByteArray): ByteArray {
    val out = ByteArray(parts.sumOf { 4 + it.size })
    var at = 0
    for (part in parts) {
        val n = part.size
        out[at] = (n ushr 24).toByte()
        out[at + 1] = (n ushr 16).toByte()
        out[at + 2] = (n ushr 8).toByte()
        out[at + 3] = n.toByte()
        part.copyInto(out, at + 4)
        at += 4 + n
    }
    return out
}

/** The keyed PRF stream: SHAKE-256 of [prfInput] of [parts], read in order. */
public fun prfStream(vararg parts: ByteArray): Shake256Stream = Shake256Stream(prfInput(*parts))
