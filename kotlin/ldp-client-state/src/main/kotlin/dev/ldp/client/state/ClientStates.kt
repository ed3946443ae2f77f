package dev.ldp.client.state

import dev.ldp.client.ByteSource
import dev.ldp.client.ByteSources
import dev.ldp.client.Bytes
import dev.ldp.client.ClientState
import dev.ldp.client.Json
import dev.ldp.client.JsonObject
import dev.ldp.client.LdpException
import dev.ldp.client.Spec
import java.math.BigInteger

/**
 * A memoized mechanism's client state (secret and cohort) kept in a
 * [StateStorage], in the Python client's file format `ldp-client-state/1`
 * (`{"cohort": 5, "format": "ldp-client-state/1", "secret": "<64 hex>",
 * "spec": "<fingerprint>"}` and a newline), so a state written by either
 * client is read by the other.
 *
 * [open] creates a client's state exclusively: of several threads or
 * processes starting one new client, one secret is stored and every one of
 * them uses it. An existing record is never replaced, whatever it holds
 * (corrupt, another spec's): a new secret would break the longitudinal
 * guarantee, so that is a [StateException] for the app to resolve.
 */
public object ClientStates {
    /** The `format` of a client state record. */
    public const val STATE_FORMAT: String = "ldp-client-state/1"

    /**
     * The state of [clientId] for [spec] in [storage]: loaded, or created
     * (exclusively) with a fresh secret and cohort from [source] when there
     * is none. The cohort is uniform over the spec's `num_cohorts` (1 when it
     * has none).
     *
     * @throws StateException if a record exists that is not a valid state of [spec].
     * @throws LdpException if [clientId] is empty.
     */
    @JvmStatic
    @JvmOverloads
    public fun open(storage: StateStorage, clientId: String, spec: Spec, source: ByteSource = ByteSources.secure): ClientState {
        val key = StateKey.state(clientId)
        storage.get(key)?.let { return decode(it, spec, storage.describe(key)) }
        val fresh = ClientState.create(spec, source)
        if (storage.create(key, encode(fresh, spec))) return fresh
        // another thread or process created it first: use its secret
        val stored = storage.get(key) ?: throw StateException("${storage.describe(key)} vanished while being created")
        return decode(stored, spec, storage.describe(key))
    }

    /**
     * The stored state of [clientId] for [spec].
     *
     * @throws StateException if there is none, or it is not a valid state of [spec].
     */
    @JvmStatic
    public fun load(storage: StateStorage, clientId: String, spec: Spec): ClientState {
        val key = StateKey.state(clientId)
        val stored = storage.get(key) ?: throw StateException("no client state: ${storage.describe(key)}")
        return decode(stored, spec, storage.describe(key))
    }

    /** The record of [state] for [spec], byte for byte as Python's `ClientState` writes its file. */
    @JvmStatic
    public fun encode(state: ClientState, spec: Spec): ByteArray {
        val text = "{\"cohort\": ${state.cohort}, \"format\": \"$STATE_FORMAT\", " +
            "\"secret\": \"${Bytes.toHex(state.secret)}\", \"spec\": \"${spec.fingerprint}\"}\n"
        return Bytes.utf8(text)
    }

    /**
     * The state a record holds, checked as Python checks a state file: its
     * format, a 32-byte secret, the spec it belongs to, a cohort below the
     * spec's `num_cohorts`.
     *
     * @param what the record, for messages (`client state '/path/x.json'`).
     * @throws StateException for a record that is corrupt or for another spec.
     */
    @JvmStatic
    public fun decode(data: ByteArray, spec: Spec, what: String): ClientState {
        val text = try {
            Charsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(data)).toString()
        } catch (_: java.nio.charset.CharacterCodingException) {
            throw StateException("$what is not UTF-8 text (corrupt); it was left untouched")
        }
        val doc = try {
            Json.parse(text)
        } catch (_: LdpException) {
            throw StateException("$what is corrupt or truncated (not valid JSON); it was left untouched")
        }
        if (doc !is Map<*, *> || doc["format"] != STATE_FORMAT) {
            throw StateException("$what is not an ldp client state file (format $STATE_FORMAT)")
        }
        @Suppress("UNCHECKED_CAST")
        val fields = doc as JsonObject
        val secretHex = fields["secret"] as? String
        val owner = fields["spec"] as? String
        val cohort = fields["cohort"]
        if (secretHex == null || owner == null || !SECRET.matches(secretHex)) {
            throw StateException("$what is corrupt: missing or malformed fields")
        }
        if (owner != spec.fingerprint) {
            throw StateException("$what belongs to spec $owner, not ${spec.fingerprint}; use a separate state for each spec")
        }
        val cohorts = ClientState.cohortsOf(spec)
        if (cohort !is BigInteger || cohort.signum() < 0 || cohort >= cohorts) {
            throw StateException("$what has cohort ${Json.dump(cohort)}, outside [0, $cohorts)")
        }
        return ClientState(Bytes.fromHex(secretHex.lowercase()), cohort.toLong())
    }

    private val SECRET = Regex("[0-9a-fA-F]{64}")
}
