package dev.ldp.client

/**
 * The client's error for bad input (a spec, a value, a table, a byte source used up): one line naming
 * what was wrong. It is an [IllegalArgumentException], so Java callers may catch either.
 */
public open class LdpException(message: String) : IllegalArgumentException(message)

/** A spec that cannot be loaded: unknown mechanism or field, a field of the wrong type, a claim its probabilities do not honour. */
public class SpecException(message: String) : LdpException(message)

/** A value an encoder cannot encode (not in the domain, of the wrong type, not encodable as UTF-8). */
public class ValueException(message: String) : LdpException(message)

/** Throw an [LdpException] with `message` (the TS client's `fail`). */
internal fun fail(message: String): Nothing = throw LdpException(message)

/** Throw a [SpecException] with `message`. */
internal fun specFail(message: String): Nothing = throw SpecException(message)
