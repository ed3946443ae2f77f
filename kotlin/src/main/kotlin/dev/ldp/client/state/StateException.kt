package dev.ldp.client.state

/**
 * Persistent client state that cannot be used: a corrupt, foreign or
 * non-private file, a symbolic link, a directory other users may write, a
 * lock held too long, or an I/O failure. The message is one line naming the
 * file and what was wrong; nothing is ever replaced to "repair" state (a new
 * secret would break the longitudinal guarantee of memoized reports).
 */
public class StateException(message: String, cause: Throwable? = null) : RuntimeException(message, cause)
