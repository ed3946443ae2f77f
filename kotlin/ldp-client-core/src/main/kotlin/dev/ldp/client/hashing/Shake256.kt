@file:JvmName("Shake256")

package dev.ldp.client.hashing

import dev.ldp.client.BouncyCastleShake256

/**
 * The first [n] bytes of SHAKE-256 of [input] (Bouncy Castle's `SHAKEDigest(256)`, through the core's
 * [BouncyCastleShake256]: `java.security` has no SHAKE before Java 25, and Android has none). The keyed
 * PRF streams of the memoized mechanisms are the core's `PrfStream` over `prfInput`.
 */
public fun shake256(input: ByteArray, n: Int): ByteArray = BouncyCastleShake256.stream(input).read(n)
