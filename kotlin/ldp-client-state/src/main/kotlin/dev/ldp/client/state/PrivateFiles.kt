package dev.ldp.client.state

import dev.ldp.client.ByteSources
import dev.ldp.client.Bytes

import java.io.IOException
import java.nio.ByteBuffer
import java.nio.channels.FileChannel
import java.nio.channels.OverlappingFileLockException
import java.nio.file.AtomicMoveNotSupportedException
import java.nio.file.FileAlreadyExistsException
import java.nio.file.FileSystemException
import java.nio.file.Files
import java.nio.file.LinkOption
import java.nio.file.NoSuchFileException
import java.nio.file.OpenOption
import java.nio.file.Path
import java.nio.file.StandardCopyOption
import java.nio.file.StandardOpenOption
import java.nio.file.attribute.BasicFileAttributes
import java.nio.file.attribute.FileAttribute
import java.nio.file.attribute.PosixFilePermission
import java.nio.file.attribute.PosixFilePermissions
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.locks.ReentrantLock

/**
 * Files that survive crashes, races and hostile paths: the operations every
 * writer of client state, ledgers and spools goes through (the Python
 * client's `ldp.atomic`, on `java.nio.file`, present on Android API 26+).
 *
 * - [create]: exclusive creation. The content is written to a temporary file
 *   (mode 0600) and fsync'ed, then hard-linked to its name, which fails if the
 *   name exists in any form (a file, a directory, a symbolic link, even a
 *   dangling one): of two racing creators exactly one wins, in this JVM or
 *   another process. Where the file system has no hard links, the name is
 *   given by a rename under [withLock] after checking it is free (exclusive
 *   among processes using this library).
 * - [replace]: atomic replacement (temporary file, fsync, rename, fsync of
 *   the directory): a crash leaves the old content or the new one.
 * - [read]: never through a symbolic link, only a regular file, and never one
 *   other users may read or write (mode looser than 0600).
 * - [withLock]: excludes other threads of this JVM (a lock per file) and other
 *   processes (a `FileChannel` lock on a lock file that is never deleted;
 *   released by the OS when a process dies, `kill -9` included).
 *
 * Temporary files are named `.<name>.<12 hex digits>.ldp-tmp<suffixes>` as
 * Python names them. Limits: `FileChannel` locks are POSIX record locks,
 * which do not exclude Python's `flock` nor the TypeScript client's lock
 * files, so JVM, Python and Node clients may share a state directory in turn,
 * never at the same moment; exclusive creation ([create]) is safe between
 * all of them.
 */
public object PrivateFiles {
    /** Every temporary file written here has this in its name (as in Python). */
    public const val TEMP_MARK: String = ".ldp-tmp"

    private val OWNER_ONLY = PosixFilePermissions.fromString("rw-------")
    private val OWNER_DIRECTORY = PosixFilePermissions.fromString("rwx------")
    private val GROUP_OR_OTHER = setOf(
        PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE,
        PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE,
    )
    /**
     * The in-JVM side of [withLock]: a fixed set of stripes (a lock per file would grow with the
     * number of clients a server ever saw), and the lock files each thread holds (re-entrancy).
     */
    private val stripes = Array(256) { ReentrantLock() }
    private val held: ThreadLocal<MutableSet<String>> = ThreadLocal.withInitial { HashSet<String>() }

    private fun posix(path: Path): Boolean =
        path.fileSystem.supportedFileAttributeViews().contains("posix")

    private fun fileAttributes(path: Path, directory: Boolean): Array<FileAttribute<*>> =
        if (posix(path)) arrayOf(PosixFilePermissions.asFileAttribute(if (directory) OWNER_DIRECTORY else OWNER_ONLY)) else emptyArray()

    private fun modeText(permissions: Set<PosixFilePermission>): String = PosixFilePermissions.toString(permissions)

    /**
     * Create [directory] and its missing parents with mode 0700, or check an existing one.
     *
     * @throws StateException if the path is not a directory, or other users may write to it
     *   (group- or world-writable without the sticky bit): they could plant or swap files.
     */
    @JvmStatic
    public fun ensurePrivateDirectory(directory: Path): Path {
        try {
            if (!Files.exists(directory, LinkOption.NOFOLLOW_LINKS)) {
                val missing = ArrayList<Path>()
                var p: Path? = directory.toAbsolutePath()
                while (p != null && !Files.exists(p)) {
                    missing.add(p)
                    p = p.parent
                }
                for (m in missing.asReversed()) {
                    try {
                        Files.createDirectory(m, *fileAttributes(m, directory = true))
                    } catch (_: FileAlreadyExistsException) {
                        // made by a concurrent process: checked below like any existing directory
                    }
                }
            }
            if (!Files.isDirectory(directory)) throw StateException("state directory '$directory' exists and is not a directory")
            if (posix(directory)) {
                val mode = Files.getPosixFilePermissions(directory)
                val writable = PosixFilePermission.GROUP_WRITE in mode || PosixFilePermission.OTHERS_WRITE in mode
                if (writable && !sticky(directory)) {
                    throw StateException(
                        "state directory '$directory' has mode ${modeText(mode)}: other users can write to it and could " +
                            "replace client state or ledgers; run 'chmod 700 $directory' (or use a private directory)",
                    )
                }
            }
            return directory
        } catch (e: IOException) {
            throw StateException("cannot use state directory '$directory': ${reason(e)}", e)
        }
    }

    private fun sticky(directory: Path): Boolean = try {
        (Files.getAttribute(directory, "unix:mode") as Int) and 0x200 != 0
    } catch (_: Exception) {
        false // no unix view (Android may lack it): treat as not sticky, the safe answer
    }

    /**
     * The bytes of the private file [path], or null when nothing exists at that name.
     *
     * @param what what the file is, for messages ("client state", "privacy ledger").
     * @throws StateException if [path] is a symbolic link, not a regular file, readable or
     *   writable by other users (its secret may be known), or unreadable.
     */
    @JvmStatic
    public fun read(path: Path, what: String): ByteArray? {
        repeat(3) {
            val before = try {
                Files.readAttributes(path, BasicFileAttributes::class.java, LinkOption.NOFOLLOW_LINKS)
            } catch (_: NoSuchFileException) {
                return null
            } catch (e: IOException) {
                throw StateException("cannot read $what '$path': ${reason(e)}", e)
            }
            if (before.isSymbolicLink) {
                throw StateException(
                    "$what '$path' is a symbolic link; client state is never read or replaced through a link " +
                        "(it could point anywhere): move the real file to this path",
                )
            }
            if (!before.isRegularFile) throw StateException("$what '$path' is not a regular file")
            if (posix(path)) {
                val mode = Files.getPosixFilePermissions(path, LinkOption.NOFOLLOW_LINKS)
                if (mode.any { it in GROUP_OR_OTHER }) {
                    throw StateException(
                        "$what '$path' has mode ${modeText(mode)}: other users can read or change it, so its secret " +
                            "may be known; if you are sure it was not, run 'chmod 600 $path', otherwise move it away",
                    )
                }
            }
            val bytes = try {
                Files.newByteChannel(path, setOf(StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)).use { ch ->
                    val out = java.io.ByteArrayOutputStream()
                    val buffer = ByteBuffer.allocate(8192)
                    while (ch.read(buffer) >= 0) {
                        out.write(buffer.array(), 0, buffer.position())
                        buffer.clear()
                    }
                    out.toByteArray()
                }
            } catch (_: NoSuchFileException) {
                return null // removed meanwhile
            } catch (e: IOException) {
                throw StateException("cannot read $what '$path': ${reason(e)}", e)
            }
            // the file checked is the file read (not swapped in between), else look again
            val after = try {
                Files.readAttributes(path, BasicFileAttributes::class.java, LinkOption.NOFOLLOW_LINKS)
            } catch (_: NoSuchFileException) {
                null
            }
            if (after != null && after.fileKey() == before.fileKey()) return bytes
        }
        throw StateException("$what '$path' keeps changing while being read")
    }

    /**
     * Create [path] holding [data] (mode 0600) only if nothing exists at that name; the
     * directory must exist. True if this call created it, false if the name existed in any
     * form. The file appears complete or not at all, and is durable when this returns.
     */
    @JvmStatic
    public fun create(path: Path, data: ByteArray): Boolean {
        val directory = directoryOf(path)
        val temp = writeTemporary(directory, path.fileName.toString(), data)
        try {
            try {
                Files.createLink(path, temp)
            } catch (_: FileAlreadyExistsException) {
                return false
            } catch (e: UnsupportedOperationException) {
                return createByRename(path, temp)
            } catch (e: FileSystemException) {
                if (Files.exists(path, LinkOption.NOFOLLOW_LINKS)) return false
                return createByRename(path, temp) // a file system without hard links (FAT, some FUSE)
            }
            syncDirectory(directory)
            return true
        } catch (e: IOException) {
            throw StateException("cannot create '$path': ${reason(e)}", e)
        } finally {
            Files.deleteIfExists(temp)
        }
    }

    private fun createByRename(path: Path, temp: Path): Boolean = withLock(lockFileOf(path), "file '$path'") {
        if (Files.exists(path, LinkOption.NOFOLLOW_LINKS)) return@withLock false
        Files.move(temp, path, StandardCopyOption.ATOMIC_MOVE)
        syncDirectory(directoryOf(path))
        true
    }

    /**
     * Replace [path] by [data] atomically (temporary file, fsync, rename, fsync of the
     * directory), mode 0600. A symbolic link at [path] is replaced, never written through.
     */
    @JvmStatic
    public fun replace(path: Path, data: ByteArray) {
        val directory = directoryOf(path)
        val temp = writeTemporary(directory, path.fileName.toString(), data)
        try {
            try {
                Files.move(temp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING)
            } catch (_: AtomicMoveNotSupportedException) {
                Files.move(temp, path, StandardCopyOption.REPLACE_EXISTING)
            }
            syncDirectory(directory)
        } catch (e: IOException) {
            throw StateException("cannot write '$path': ${reason(e)}", e)
        } finally {
            Files.deleteIfExists(temp)
        }
    }

    /** A temporary file younger than this is never treated as stale (milliseconds; Python's `STALE_AFTER`). */
    public const val STALE_AFTER_MILLIS: Long = 60_000

    /** Temporaries of a client's files ([FileStateStorage]'s names): `.<32 hex>[.<record>].json.<12 hex>.ldp-tmp...`. */
    private val CLIENT_TEMPORARY = Regex("""\.[0-9a-f]{32}(\.[a-z][a-z0-9]*)?\.json\.[0-9a-f]{12}\.ldp-tmp(\.[A-Za-z0-9]+)*""")
    private val swept: MutableSet<String> = ConcurrentHashMap.newKeySet()

    /**
     * Delete the temporary files a killed writer left in [directory]: those of the file [name]
     * (`.<name>.<12 hex digits>.ldp-tmp...`), or with no [name] those of client files
     * ([FileStateStorage]'s), and only when older than [STALE_AFTER_MILLIS] (a live writer's
     * temporary exists for milliseconds). Other files are never touched, nor symbolic links; errors
     * (an entry vanishing) are ignored. Returns how many were deleted.
     */
    @JvmStatic
    @JvmOverloads
    public fun removeStaleTemporaries(directory: Path, name: String? = null): Int {
        val prefix = name?.let { ".$it." }
        val now = System.currentTimeMillis()
        var removed = 0
        val entries = try {
            Files.newDirectoryStream(directory).use { it.toList() }
        } catch (_: IOException) {
            return 0
        }
        for (entry in entries) {
            val file = entry.fileName.toString()
            val ours = if (prefix != null) {
                file.startsWith(prefix) && Regex("""[0-9a-f]{12}\.ldp-tmp(\.[A-Za-z0-9]+)*""").matches(file.substring(prefix.length))
            } else {
                CLIENT_TEMPORARY.matches(file)
            }
            if (!ours) continue
            try {
                val attributes = Files.readAttributes(entry, BasicFileAttributes::class.java, LinkOption.NOFOLLOW_LINKS)
                if (!attributes.isRegularFile || now - attributes.lastModifiedTime().toMillis() < STALE_AFTER_MILLIS) continue
                Files.delete(entry)
                removed++
            } catch (_: IOException) {
                // gone meanwhile, or not ours to delete
            }
        }
        return removed
    }

    /** [removeStaleTemporaries] of [directory] (and [name]) at most once per process. */
    @JvmStatic
    @JvmOverloads
    public fun removeStaleTemporariesOnce(directory: Path, name: String? = null) {
        val key = try {
            directory.toRealPath().toString() + "\u0000" + (name ?: "")
        } catch (_: IOException) {
            return
        }
        if (swept.add(key)) removeStaleTemporaries(directory, name)
    }

    /** The lock file of [path] for [withLock]: `<path>.jvmlock`, beside it (never deleted). */
    @JvmStatic
    public fun lockFileOf(path: Path): Path = path.resolveSibling(path.fileName.toString() + ".jvmlock")

    /**
     * Run [block] holding the lock [lockFile]: other threads of this JVM wait on a
     * [ReentrantLock] (one of a fixed set of stripes, by the file's real path), other processes on
     * a `FileChannel` lock of the file. A thread already holding it runs [block] directly
     * (re-entrant). Do not take a second lock file inside [block]: two stripes taken in opposite
     * orders by two threads would deadlock (nothing here nests different lock files). The lock file is created 0600 and
     * never deleted (deleting it would let two processes lock two different files).
     *
     * @param what what is locked, for messages.
     */
    @JvmStatic
    public fun <T> withLock(lockFile: Path, what: String, block: () -> T): T {
        val key = try {
            directoryOf(lockFile).toRealPath().resolve(lockFile.fileName).toString()
        } catch (e: IOException) {
            throw StateException("cannot lock the $what: ${reason(e)}", e)
        }
        val mine = held.get()
        if (key in mine) return block() // this thread holds it already
        val lock = stripes[(key.hashCode() and 0x7fffffff) % stripes.size]
        lock.lock()
        mine.add(key)
        try {
            val options: Set<OpenOption> = setOf(StandardOpenOption.CREATE, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)
            val channel = try {
                FileChannel.open(lockFile, options, *fileAttributes(lockFile, directory = false))
            } catch (e: IOException) {
                throw StateException("cannot open the lock file '$lockFile' of the $what: ${reason(e)}", e)
            }
            channel.use {
                try {
                    it.lock()
                } catch (e: OverlappingFileLockException) {
                    throw StateException("lock file '$lockFile' of the $what is already locked by this JVM", e)
                } catch (e: IOException) {
                    throw StateException("cannot lock '$lockFile' of the $what: ${reason(e)}", e)
                }
                return block() // closing the channel releases the lock
            }
        } finally {
            mine.remove(key)
            lock.unlock()
        }
    }

    private fun directoryOf(path: Path): Path = path.toAbsolutePath().parent

    /** A new temporary file in [directory] holding [data], fsync'ed, mode 0600; the caller renames or links it. */
    private fun writeTemporary(directory: Path, name: String, data: ByteArray): Path {
        val dot = name.indexOf('.', 1)
        val suffixes = if (dot < 0) "" else name.substring(dot)
        for (attempt in 0 until 100) {
            val tag = Bytes.toHex(ByteSources.secure.read(6))
            val temp = directory.resolve(".$name.$tag$TEMP_MARK$suffixes")
            val options: Set<OpenOption> = setOf(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)
            val channel = try {
                FileChannel.open(temp, options, *fileAttributes(temp, directory = false))
            } catch (_: FileAlreadyExistsException) {
                continue
            } catch (e: IOException) {
                throw StateException("cannot write in '$directory': ${reason(e)}", e)
            }
            try {
                channel.use {
                    val buffer = ByteBuffer.wrap(data)
                    while (buffer.hasRemaining()) it.write(buffer)
                    it.force(true)
                }
            } catch (e: IOException) {
                Files.deleteIfExists(temp)
                throw StateException("cannot write in '$directory': ${reason(e)}", e)
            }
            return temp
        }
        throw StateException("cannot create a temporary file in '$directory'")
    }

    /** fsync of a directory (its new names are durable); a platform that cannot open directories skips it. */
    private fun syncDirectory(directory: Path) {
        val channel = try {
            FileChannel.open(directory, StandardOpenOption.READ)
        } catch (_: IOException) {
            return // Windows cannot open a directory; Linux and Android can
        }
        channel.use { it.force(true) }
    }

    private fun reason(e: IOException): String = when (e) {
        is FileSystemException -> e.reason ?: e.javaClass.simpleName
        else -> e.message ?: e.javaClass.simpleName
    }
}
