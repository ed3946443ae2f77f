package dev.ldp.client.state

import org.junit.jupiter.api.io.TempDir
import java.nio.file.Files
import java.nio.file.Path
import java.nio.file.attribute.PosixFilePermissions
import java.util.concurrent.CountDownLatch
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertNull
import kotlin.test.assertTrue

class FileStateStorageTest {
    @TempDir
    lateinit var temp: Path

    private fun storage() = FileStateStorage(temp.resolve("clients"))

    private fun mode(path: Path) = PosixFilePermissions.toString(Files.getPosixFilePermissions(path))

    @Test
    fun createGetPutWithPrivateModes() {
        val s = storage()
        val key = StateKey.state("alice")
        assertNull(s.get(key))
        assertTrue(s.create(key, byteArrayOf(1, 2, 3)))
        assertFalse(s.create(key, byteArrayOf(9)), "an existing record is never replaced")
        assertContentEquals(byteArrayOf(1, 2, 3), s.get(key))
        s.put(key, byteArrayOf(4))
        assertContentEquals(byteArrayOf(4), s.get(key))
        assertEquals("rwx------", mode(s.directory))
        assertEquals("rw-------", mode(s.fileOf(key)))
        Files.list(s.directory).use { files ->
            assertTrue(files.noneMatch { it.fileName.toString().contains(PrivateFiles.TEMP_MARK) }, "no temporary file left")
        }
    }

    @Test
    fun filesAreNamedAsPythonNamesThem() {
        // names from Python's ldp.client.state_paths.state_path / ledger_path
        val s = storage()
        assertEquals("2bd806c97f0e00af1a1fc3328fa763a9.json", s.fileOf(StateKey.state("alice")).fileName.toString())
        assertEquals("2bd806c97f0e00af1a1fc3328fa763a9.ledger.json", s.fileOf(StateKey.ledger("alice")).fileName.toString())
        assertEquals("6b86b273ff34fce19d6b804eff5a3f57.json", s.fileOf(StateKey.state("1.0")).fileName.toString())
        assertEquals(s.fileOf(StateKey.state(1L)), s.fileOf(StateKey.state("1")))
        assertEquals("3754d6cb3a38e1185e5b382d5f3ef3f1.json", s.fileOf(StateKey.state("../../etc/passwd")).fileName.toString())
        assertEquals("f86fd89de87a848a45bfe77708d91a5d.json", s.fileOf(StateKey.state("na\u00efve")).fileName.toString())
        assertEquals("74a7e4a2ddd5cec74090929ce28641ce.json", s.fileOf(StateKey.state("\ud800x")).fileName.toString())
        assertEquals("6c7ab654925d69c073c24cd42cefd11f.json", s.fileOf(StateKey.state("-07.000")).fileName.toString())
        assertEquals(s.directory, s.fileOf(StateKey.state("../../etc/passwd")).parent, "an id never becomes a path")
    }

    @Test
    fun badIdsAndRecordNamesAreRefused() {
        assertEquals("client id is empty", assertFailsWith<IllegalArgumentException> { StateKey.state("") }.message)
        assertFailsWith<IllegalArgumentException> { StateKey.of("a", "../x") }
        assertFailsWith<IllegalArgumentException> { StateKey.of("a", "Ledger") }
    }

    @Test
    fun compareAndSetAndUpdate() {
        val s = storage()
        val key = StateKey.ledger("bob")
        assertFalse(s.compareAndSet(key, byteArrayOf(1), byteArrayOf(2)))
        assertTrue(s.compareAndSet(key, null, byteArrayOf(1)))
        assertFalse(s.compareAndSet(key, null, byteArrayOf(2)))
        assertTrue(s.compareAndSet(key, byteArrayOf(1), byteArrayOf(2)))
        assertContentEquals(byteArrayOf(2), s.get(key))
        val result = s.update(key) { current -> StateUpdate.write(byteArrayOf((current!![0] + 1).toByte()), "ok") }
        assertEquals("ok", result)
        assertContentEquals(byteArrayOf(3), s.get(key))
        assertEquals(3, s.update(key) { current -> StateUpdate.keep(current!![0].toInt()) })
    }

    @Test
    fun symbolicLinksAreRefusedNeverFollowed() {
        val s = storage()
        val key = StateKey.state("eve")
        val target = temp.resolve("elsewhere")
        Files.write(target, byteArrayOf(7))
        Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rw-------"))
        Files.createSymbolicLink(s.fileOf(key), target)
        val e = assertFailsWith<StateException> { s.get(key) }
        assertTrue(e.message!!.contains("symbolic link"), e.message)
        assertFalse(s.create(key, byteArrayOf(1)), "a link (even to a file) is an existing name")
        Files.delete(target)
        assertFalse(s.create(key, byteArrayOf(1)), "a dangling link is an existing name too")
        assertTrue(Files.isSymbolicLink(s.fileOf(key)))
    }

    @Test
    fun filesOthersMayReadAreRefused() {
        val s = storage()
        val key = StateKey.state("carol")
        assertTrue(s.create(key, byteArrayOf(1)))
        Files.setPosixFilePermissions(s.fileOf(key), PosixFilePermissions.fromString("rw-r--r--"))
        val e = assertFailsWith<StateException> { s.get(key) }
        assertTrue(e.message!!.contains("other users"), e.message)
        Files.delete(s.fileOf(key))
        Files.createDirectory(s.fileOf(key))
        assertTrue(assertFailsWith<StateException> { s.get(key) }.message!!.contains("not a regular file"))
    }

    @Test
    fun aDirectoryOthersMayWriteIsRefused() {
        val dir = temp.resolve("open")
        Files.createDirectory(dir)
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"))
        val e = assertFailsWith<StateException> { FileStateStorage(dir) }
        assertTrue(e.message!!.contains("other users can write"), e.message)
        val file = temp.resolve("plain")
        Files.createFile(file)
        assertFailsWith<StateException> { FileStateStorage(file) }
    }

    @Test
    fun threadsRacingToCreateOneClientShareOneSecret() {
        val s = storage()
        val key = StateKey.state("racer")
        val threads = 16
        val start = CountDownLatch(1)
        val pool = Executors.newFixedThreadPool(threads)
        val results = (0 until threads).map { i ->
            pool.submit<Pair<Boolean, ByteArray>> {
                start.await()
                val mine = ByteArray(32) { i.toByte() }
                Pair(s.create(key, mine), s.get(key)!!)
            }
        }
        start.countDown()
        val outcomes = results.map { it.get(30, TimeUnit.SECONDS) }
        pool.shutdown()
        assertEquals(1, outcomes.count { it.first }, "exactly one creator wins")
        val winner = outcomes.first { it.first }.second
        outcomes.forEach { assertContentEquals(winner, it.second) }
    }

    @Test
    fun concurrentUpdatesAreNeverLost() {
        val s = storage()
        val key = StateKey.of("shared", "counter")
        val pool = Executors.newFixedThreadPool(8)
        val tasks = (0 until 8).map {
            pool.submit {
                repeat(20) {
                    s.update(key) { current ->
                        val n = current?.toString(Charsets.US_ASCII)?.toInt() ?: 0
                        StateUpdate.write((n + 1).toString().toByteArray(Charsets.US_ASCII), Unit)
                    }
                }
            }
        }
        tasks.forEach { it.get(60, TimeUnit.SECONDS) }
        pool.shutdown()
        assertEquals("160", s.get(key)!!.toString(Charsets.US_ASCII))
    }

    @Test
    fun temporariesOfKilledWritersAreSweptOnlyWhenStaleAndOurs() {
        val dir = temp.resolve("sweep")
        Files.createDirectory(dir)
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"))
        val stale = dir.resolve(".2bd806c97f0e00af1a1fc3328fa763a9.json.0123456789ab.ldp-tmp.json")
        val staleLedger = dir.resolve(".2bd806c97f0e00af1a1fc3328fa763a9.ledger.json.0123456789ab.ldp-tmp.ledger.json")
        val fresh = dir.resolve(".2bd806c97f0e00af1a1fc3328fa763a9.json.ba9876543210.ldp-tmp.json")
        val foreign = dir.resolve(".report.csv.0123456789ab.ldp-tmp.csv")
        val old = java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - 2 * PrivateFiles.STALE_AFTER_MILLIS)
        for (f in listOf(stale, staleLedger, fresh, foreign)) Files.write(f, byteArrayOf(1))
        for (f in listOf(stale, staleLedger, foreign)) Files.setLastModifiedTime(f, old)
        FileStateStorage(dir)
        assertFalse(Files.exists(stale))
        assertFalse(Files.exists(staleLedger))
        assertTrue(Files.exists(fresh), "a live writer's temporary is kept")
        assertTrue(Files.exists(foreign), "only client files' temporaries are swept")
        assertEquals(1, PrivateFiles.removeStaleTemporaries(dir, "report.csv"))
    }

    @Test
    fun theLockIsReentrantForItsThreadAndExcludesOthers() {
        val dir = storage().directory
        val lock = dir.resolve("x.jvmlock")
        val inside = CountDownLatch(1)
        val release = CountDownLatch(1)
        val order = java.util.Collections.synchronizedList(ArrayList<String>())
        val holder = Thread {
            PrivateFiles.withLock(lock, "test") {
                PrivateFiles.withLock(lock, "test") { order.add("nested") } // re-entrant: no self-deadlock
                inside.countDown()
                release.await()
                order.add("first released")
            }
        }
        holder.start()
        inside.await()
        val waiter = Thread { PrivateFiles.withLock(lock, "test") { order.add("second") } }
        waiter.start()
        Thread.sleep(200)
        assertEquals(listOf("nested"), order.toList(), "the second thread waits")
        release.countDown()
        holder.join(10_000)
        waiter.join(10_000)
        assertEquals(listOf("nested", "first released", "second"), order.toList())
    }

    @Test
    fun inMemoryStorageHasTheSameContract() {
        val s = InMemoryStateStorage()
        val key = StateKey.state("m")
        assertTrue(s.create(key, byteArrayOf(1)))
        assertFalse(s.create(key, byteArrayOf(2)))
        assertTrue(s.compareAndSet(key, byteArrayOf(1), byteArrayOf(3)))
        assertEquals(3, s.update(key) { StateUpdate.keep(it!![0].toInt()) })
    }
}
