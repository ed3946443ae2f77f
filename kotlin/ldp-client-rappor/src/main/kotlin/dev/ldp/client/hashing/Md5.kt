@file:JvmName("Md5")

package dev.ldp.client.hashing

import java.security.MessageDigest

/**
 * MD5 of [data] (`java.security`, present on every JVM and Android): the
 * Bloom hash of Google's RAPPOR, never used for security here.
 */
public fun md5(data: ByteArray): ByteArray = MessageDigest.getInstance("MD5").digest(data)
