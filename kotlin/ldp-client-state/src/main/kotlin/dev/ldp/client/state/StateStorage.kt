package dev.ldp.client.state

/**
 * What a client keeps between runs, by client and record: `state` (a
 * memoized mechanism's secret and cohort, `ldp-client-state/1`), `ledger`
 * (its privacy ledger), or another lowercase record name.
 *
 * The client id is canonicalized ([canonicalClientId]): `"1"`, `"1.0"` and
 * `1L` are one key.
 */
public class StateKey private constructor(
    /** The canonical client id. */
    public val clientId: String,
    /** The record's name: `state`, `ledger`, or another `[a-z][a-z0-9]*` name. */
    public val record: String,
) {
    override fun equals(other: Any?): Boolean = other is StateKey && other.clientId == clientId && other.record == record

    override fun hashCode(): Int = 31 * clientId.hashCode() + record.hashCode()

    override fun toString(): String = "$record of client '$clientId'"

    public companion object {
        private val RECORD = Regex("[a-z][a-z0-9]*")

        /** The record [record] of client [clientId]. */
        @JvmStatic
        public fun of(clientId: String, record: String): StateKey {
            if (!RECORD.matches(record)) throw dev.ldp.client.LdpException("state record name must match [a-z][a-z0-9]*, got '$record'")
            return StateKey(canonicalClientId(clientId), record)
        }

        /** The client state (secret and cohort) of [clientId]. */
        @JvmStatic
        public fun state(clientId: String): StateKey = of(clientId, "state")

        /** The client state of the integer id [clientId]. */
        @JvmStatic
        public fun state(clientId: Long): StateKey = of(canonicalClientId(clientId), "state")

        /** The privacy ledger of [clientId]. */
        @JvmStatic
        public fun ledger(clientId: String): StateKey = of(clientId, "ledger")

        /** The privacy ledger of the integer id [clientId]. */
        @JvmStatic
        public fun ledger(clientId: Long): StateKey = of(canonicalClientId(clientId), "ledger")
    }
}

/** What [StateStorage.update] decides: the new bytes ([data]; null leaves the record as it is) and a [result]. */
public class StateUpdate<out T>(public val data: ByteArray?, public val result: T) {
    public companion object {
        /** Leave the record unchanged and return [result]. */
        @JvmStatic
        public fun <T> keep(result: T): StateUpdate<T> = StateUpdate(null, result)

        /** Write [data] and return [result]. */
        @JvmStatic
        public fun <T> write(data: ByteArray, result: T): StateUpdate<T> = StateUpdate(data, result)
    }
}

/** A change of one record, given its current bytes (null when it has none). */
public fun interface StateChange<T> {
    /** The update to make, from the [current] bytes (null: no record yet). */
    public fun apply(current: ByteArray?): StateUpdate<T>
}

/**
 * Small persistent records of clients, each a byte string, with the
 * operations the client needs to be safe under concurrent threads and
 * processes and under crashes:
 *
 * - [create]: exclusive creation. Of several threads or processes starting
 *   one new client, exactly one secret is stored and every one of them uses
 *   it ([create] returns false to the losers, who then [get] the winner's).
 *   An existing record is never replaced.
 * - [put]: replace atomically (a crash leaves the old bytes or the new).
 * - [compareAndSet] and [update]: read-decide-write with nothing in between
 *   (the privacy ledger: a charge is decided on the current spending).
 *
 * Implementations: [FileStateStorage] (the JVM, and Android's app-private
 * files), [InMemoryStateStorage] (tests, clients that keep nothing). An
 * Android app may implement it over `SharedPreferences` or DataStore
 * (docs/kotlin.md, "State on Android"). Every method is thread-safe.
 */
public interface StateStorage {
    /** How [key]'s record is named in messages (a file storage: its path). */
    public fun describe(key: StateKey): String = key.toString()

    /** The bytes of [key], or null when there is no such record. */
    public fun get(key: StateKey): ByteArray?

    /**
     * Store [data] as [key] only if no record exists: true if this call
     * created it, false if one existed (it is left untouched).
     */
    public fun create(key: StateKey, data: ByteArray): Boolean

    /** Store [data] as [key], replacing any record atomically. */
    public fun put(key: StateKey, data: ByteArray)

    /**
     * Store [data] as [key] only if its current bytes equal [expected]
     * (null: only if there is no record); true if it was stored.
     */
    public fun compareAndSet(key: StateKey, expected: ByteArray?, data: ByteArray): Boolean

    /**
     * Apply [change] to [key]'s current bytes and store what it returns, with
     * no other change to [key] in between (by this or any other process
     * using the same storage); returns the change's result. [change] may run
     * more than once (it must have no side effects but its result).
     */
    public fun <T> update(key: StateKey, change: StateChange<T>): T {
        while (true) {
            val current = get(key)
            val decided = change.apply(current)
            val data = decided.data ?: return decided.result
            if (current != null && current.contentEquals(data)) return decided.result
            if (compareAndSet(key, current, data)) return decided.result
        }
    }
}

/**
 * A [StateStorage] in memory: nothing survives the process. For tests and
 * for clients that must not keep state (then every run is a new client:
 * memoized mechanisms lose their longitudinal guarantee across runs).
 */
public class InMemoryStateStorage : StateStorage {
    private val records = HashMap<StateKey, ByteArray>()

    @Synchronized
    override fun get(key: StateKey): ByteArray? = records[key]?.copyOf()

    @Synchronized
    override fun create(key: StateKey, data: ByteArray): Boolean {
        if (key in records) return false
        records[key] = data.copyOf()
        return true
    }

    @Synchronized
    override fun put(key: StateKey, data: ByteArray) {
        records[key] = data.copyOf()
    }

    @Synchronized
    override fun compareAndSet(key: StateKey, expected: ByteArray?, data: ByteArray): Boolean {
        val current = records[key]
        val same = if (expected == null) current == null else current != null && current.contentEquals(expected)
        if (same) records[key] = data.copyOf()
        return same
    }

    @Synchronized
    override fun <T> update(key: StateKey, change: StateChange<T>): T {
        val decided = change.apply(records[key]?.copyOf())
        decided.data?.let { records[key] = it.copyOf() }
        return decided.result
    }
}
