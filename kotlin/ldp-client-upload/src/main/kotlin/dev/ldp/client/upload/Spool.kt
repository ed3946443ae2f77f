package dev.ldp.client.upload

/** Why the collector (or the client) refused a record: `reason` is a code (`wrong_spec`, `invalid_report`, ...). */
public class Rejection(public val reason: String, public val detail: String) {
    override fun equals(other: Any?): Boolean = other is Rejection && other.reason == reason && other.detail == detail

    override fun hashCode(): Int = 31 * reason.hashCode() + detail.hashCode()

    override fun toString(): String = "$reason: $detail"
}

/**
 * A spool record the collector refused (or that could not be sent to its
 * task), kept for the app to read until it removes it ([Spool.removeDeadLetters]).
 *
 * @property record the spool record exactly as spooled (its task, id, time and report)
 * @property reason the collector's reason (`wrong_spec`, `invalid_report`, `report_dropped`, ...) or the client's
 * @property detail the human-readable explanation
 */
public class DeadLetter(public val record: String, public val reason: String, public val detail: String) {
    override fun equals(other: Any?): Boolean =
        other is DeadLetter && other.record == record && other.reason == reason && other.detail == detail

    override fun hashCode(): Int = (record.hashCode() * 31 + reason.hashCode()) * 31 + detail.hashCode()

    override fun toString(): String = "DeadLetter($reason: $detail; $record)"
}

/**
 * Durable store of unsent spool records (exact bytes, one record per
 * string, no line breaks) and of the dead-letter list: records the collector
 * rejected, kept until the app removes them. [Uploader.enqueue] appends
 * before any request, so a report charged to a budget is stored before the
 * collector is asked anything. Every method is atomic and thread-safe.
 *
 * Implementations: [FileSpool] (private files, safe across processes),
 * [MemorySpool] (tests: lost on exit).
 */
public interface Spool {
    /** The unsent records, oldest first. */
    public fun load(): List<String>

    /** Append [lines] (records) durably. */
    public fun append(lines: List<String>)

    /** Remove the records whose envelope ids are in [ids]. */
    public fun remove(ids: Set<String>)

    /**
     * Move the records with these ids from the spool to the dead-letter list,
     * with why (the dead-letter list is written before they leave the spool:
     * a crash in between leaves a record in both, never in neither).
     */
    public fun deadLetter(rejected: Map<String, Rejection>)

    /** The dead-letter list, oldest first. */
    public fun deadLetters(): List<DeadLetter>

    /** Forget the dead letters the app has dealt with, by the ids of their records. */
    public fun removeDeadLetters(ids: Set<String>)
}

/** The dead letters of [old] plus those records of [lines] named by [rejected], each id once. */
public fun addDeadLetters(old: List<DeadLetter>, lines: List<String>, rejected: Map<String, Rejection>): List<DeadLetter> {
    val have = old.mapTo(HashSet()) { recordId(it.record) }
    val out = ArrayList(old)
    for (line in lines) {
        val id = recordId(line)
        val why = rejected[id] ?: continue
        if (have.add(id)) out.add(DeadLetter(line, why.reason, why.detail))
    }
    return out
}

/** A spool in memory: lost on exit (tests). */
public class MemorySpool : Spool {
    private val lines = ArrayList<String>()
    private var dead: List<DeadLetter> = emptyList()

    @Synchronized
    override fun load(): List<String> = ArrayList(lines)

    @Synchronized
    override fun append(lines: List<String>) {
        this.lines.addAll(lines)
    }

    @Synchronized
    override fun remove(ids: Set<String>) {
        lines.removeAll { recordId(it) in ids }
    }

    @Synchronized
    override fun deadLetter(rejected: Map<String, Rejection>) {
        dead = addDeadLetters(dead, lines, rejected)
        remove(rejected.keys)
    }

    @Synchronized
    override fun deadLetters(): List<DeadLetter> = ArrayList(dead)

    @Synchronized
    override fun removeDeadLetters(ids: Set<String>) {
        dead = dead.filter { recordId(it.record) !in ids }
    }
}
