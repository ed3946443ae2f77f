package dev.ldp.client.state

import java.io.File
import java.nio.file.Path

/**
 * A [StateStorage] of private files in one directory: the JVM's, and an
 * Android app's (on its app-private `filesDir`).
 *
 * A client's files are named by a hash of its canonical id, exactly as
 * Python's `ldp encode --state DIR` and `ClientStateStore` name them: the
 * `state` record is `<stem>.json`, any other record `<stem>.<record>.json`
 * (`ledger`: `<stem>.ledger.json`, Python's `ledger_beside`), with `<stem>`
 * = [clientFileStem]. An id never becomes a path.
 *
 * Files are mode 0600 in a directory created 0700 (one other users may write
 * is refused); [create] is exclusive (a hard link of a fsync'ed temporary
 * file: one winner among threads and processes); [put], [compareAndSet] and
 * [update] replace atomically (temporary file, fsync, rename, fsync of the
 * directory) under a lock that excludes the threads of this JVM and other
 * processes ([PrivateFiles.withLock] on `<file>.jvmlock`). A symbolic link,
 * a non-regular file or a file others may read is refused with a
 * [StateException], never replaced. Temporary files that killed writers left
 * are deleted when a storage first opens the directory in a process
 * ([PrivateFiles.removeStaleTemporaries]).
 *
 * @param directory where the files live (created with mode 0700 when missing).
 */
public class FileStateStorage(directory: Path) : StateStorage {
    /** The state directory. */
    public val directory: Path = PrivateFiles.ensurePrivateDirectory(directory)

    init {
        PrivateFiles.removeStaleTemporariesOnce(this.directory) // temporaries of writers killed mid-write
    }

    /** A storage in [directory] (a `java.io.File`, as Android's `Context.getFilesDir()` gives). */
    public constructor(directory: File) : this(directory.toPath())

    /** The file of [key] (whether or not it exists). */
    public fun fileOf(key: StateKey): Path {
        val stem = clientFileStem(key.clientId)
        return directory.resolve(if (key.record == "state") "$stem.json" else "$stem.${key.record}.json")
    }

    private fun what(key: StateKey): String = if (key.record == "state") "client state" else "client ${key.record}"

    override fun describe(key: StateKey): String = "${what(key)} '${fileOf(key)}'"

    override fun get(key: StateKey): ByteArray? = PrivateFiles.read(fileOf(key), what(key))

    override fun create(key: StateKey, data: ByteArray): Boolean = PrivateFiles.create(fileOf(key), data)

    override fun put(key: StateKey, data: ByteArray) {
        val file = fileOf(key)
        PrivateFiles.withLock(PrivateFiles.lockFileOf(file), what(key)) { PrivateFiles.replace(file, data) }
    }

    override fun compareAndSet(key: StateKey, expected: ByteArray?, data: ByteArray): Boolean {
        val file = fileOf(key)
        return PrivateFiles.withLock(PrivateFiles.lockFileOf(file), what(key)) {
            val current = PrivateFiles.read(file, what(key))
            when {
                expected == null -> current == null && PrivateFiles.create(file, data)
                current == null || !current.contentEquals(expected) -> false
                else -> {
                    PrivateFiles.replace(file, data)
                    true
                }
            }
        }
    }

    override fun <T> update(key: StateKey, change: StateChange<T>): T {
        val file = fileOf(key)
        return PrivateFiles.withLock(PrivateFiles.lockFileOf(file), what(key)) { updateLocked(file, key, change) }
    }

    private fun <T> updateLocked(file: Path, key: StateKey, change: StateChange<T>): T {
        while (true) {
            val current = PrivateFiles.read(file, what(key))
            val decided = change.apply(current)
            val data = decided.data ?: return decided.result
            if (current != null) {
                if (!current.contentEquals(data)) PrivateFiles.replace(file, data)
                return decided.result
            }
            if (PrivateFiles.create(file, data)) return decided.result
            // an exclusive creation outside the lock (a new client's state) won: decide again on its bytes
        }
    }

    override fun toString(): String = "FileStateStorage($directory)"
}
