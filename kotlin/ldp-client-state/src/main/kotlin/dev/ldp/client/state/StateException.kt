package dev.ldp.client.state

import dev.ldp.client.LdpException

/**
 * Persistent client state that cannot be used: a corrupt, foreign or
 * non-private file, a symbolic link, a directory other users may write, a
 * lock that cannot be taken, or an I/O failure. The message is one line
 * naming the file and what was wrong; nothing is ever replaced to "repair"
 * state (a new secret would break the longitudinal guarantee of memoized
 * reports). An [LdpException], like every error of the client.
 */
public class StateException @JvmOverloads constructor(message: String, cause: Throwable? = null) : LdpException(message) {
    init {
        if (cause != null) initCause(cause)
    }
}
