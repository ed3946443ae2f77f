package dev.ldp.client.upload

import dev.ldp.client.state.PrivateFiles
import dev.ldp.client.state.StateException
import dev.ldp.client.Json
import dev.ldp.client.LdpException
import java.io.File
import java.nio.file.Path

/**
 * Unsent spool records as a JSON Lines file (one record's exact bytes per
 * line), mode 0600 in a private directory, with the same durability rules as
 * the client state ([PrivateFiles]): every change rewrites the file
 * atomically (temporary file, fsync, rename, fsync of the directory) under a
 * lock that excludes this JVM's threads and other processes
 * (`<file>.jvmlock`). The dead-letter list is beside it,
 * `<file>.rejected.jsonl` (one `{"record","reason","detail"}` per line).
 *
 * A torn last line (a crash of a writer that does not replace atomically,
 * e.g. an older client appending) is dropped on reading: it was never
 * acknowledged as spooled.
 *
 * @param file the spool file (its directory is created 0700 when missing).
 */
public class FileSpool(file: Path) : Spool {
    /** The spool file. */
    public val file: Path = file.toAbsolutePath()

    /** The dead-letter list. */
    public val deadFile: Path = this.file.resolveSibling(this.file.fileName.toString() + ".rejected.jsonl")

    private val lockFile = PrivateFiles.lockFileOf(this.file)

    init {
        PrivateFiles.ensurePrivateDirectory(this.file.parent)
        PrivateFiles.removeStaleTemporariesOnce(this.file.parent, this.file.fileName.toString())
        PrivateFiles.removeStaleTemporariesOnce(this.file.parent, deadFile.fileName.toString())
    }

    /** A spool at [file] (a `java.io.File`, as Android's `Context.getNoBackupFilesDir()` gives a directory). */
    public constructor(file: File) : this(file.toPath())

    private fun <T> locked(block: () -> T): T = PrivateFiles.withLock(lockFile, "upload spool '$file'", block)

    private fun readRecords(): List<String> = linesOf(file, "upload spool")

    private fun readDead(): List<DeadLetter> = linesOf(deadFile, "dead-letter list").map { line ->
        val o = try {
            Json.parse(line) as? Map<*, *>
        } catch (_: LdpException) {
            null
        }
        val record = o?.get("record") as? String
        val reason = o?.get("reason") as? String
        val detail = o?.get("detail") as? String
        if (record == null || reason == null || detail == null) throw StateException("dead-letter list '$deadFile' is corrupt: $line")
        DeadLetter(record, reason, detail)
    }

    private fun write(path: Path, lines: List<String>) {
        val text = StringBuilder()
        for (line in lines) text.append(line).append('\n')
        PrivateFiles.replace(path, text.toString().toByteArray(Charsets.UTF_8))
    }

    override fun load(): List<String> = locked { readRecords() }

    override fun append(lines: List<String>) {
        if (lines.isEmpty()) return
        for (line in lines) if ('\n' in line || '\r' in line) throw LdpException("a spool record must be one line")
        locked { write(file, readRecords() + lines) } // drops a torn tail before appending
    }

    override fun remove(ids: Set<String>) {
        if (ids.isEmpty()) return
        locked { write(file, readRecords().filter { recordId(it) !in ids }) }
    }

    override fun deadLetter(rejected: Map<String, Rejection>) {
        if (rejected.isEmpty()) return
        locked {
            val lines = readRecords()
            // the dead-letter file first: a crash between the two writes leaves a record in both, never in neither
            write(deadFile, addDeadLetters(readDead(), lines, rejected).map { deadLetterLine(it) })
            write(file, lines.filter { recordId(it) !in rejected })
        }
    }

    override fun deadLetters(): List<DeadLetter> = locked { readDead() }

    override fun removeDeadLetters(ids: Set<String>) {
        if (ids.isEmpty()) return
        locked { write(deadFile, readDead().filter { recordId(it.record) !in ids }.map { deadLetterLine(it) }) }
    }

    override fun toString(): String = "FileSpool($file)"

    private companion object {
        fun deadLetterLine(d: DeadLetter): String =
            "{\"record\":${Json.quote(d.record)},\"reason\":${Json.quote(d.reason)},\"detail\":${Json.quote(d.detail)}}"

        /** The complete lines of a private JSON Lines file (none when absent); a torn last line is dropped. */
        fun linesOf(path: Path, what: String): List<String> {
            val bytes = PrivateFiles.read(path, what) ?: return emptyList()
            val text = bytes.toString(Charsets.UTF_8)
            val lines = text.split('\n').toMutableList()
            lines.removeAt(lines.size - 1) // the text after the last newline: empty, or a torn write (never acknowledged)
            return lines.filter { it.isNotEmpty() }
        }
    }
}
