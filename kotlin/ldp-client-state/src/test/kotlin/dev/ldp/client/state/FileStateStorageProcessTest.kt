package dev.ldp.client.state

import org.junit.jupiter.api.io.TempDir
import java.io.File
import java.nio.file.Files
import java.nio.file.Path
import java.util.concurrent.TimeUnit
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/** Separate JVM processes racing on one state directory (what two app processes, or two services, do). */
class FileStateStorageProcessTest {
    @TempDir
    lateinit var temp: Path

    private fun spawn(vararg args: String): Process {
        val java = File(System.getProperty("java.home"), "bin/java").path
        val classpath = System.getProperty("surefire.test.class.path") ?: System.getProperty("java.class.path")
        return ProcessBuilder(java, "-cp", classpath, StateRaceMain::class.java.name, *args)
            .redirectErrorStream(true)
            .start()
    }

    private fun outputOf(process: Process): String {
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), "a racing JVM did not finish")
        val out = process.inputStream.readBytes().toString(Charsets.UTF_8).trim()
        assertEquals(0, process.exitValue(), out)
        return out
    }

    @Test
    fun exactlyOneProcessCreatesTheClient() {
        val dir = temp.resolve("state")
        val go = temp.resolve("go")
        val processes = (0 until 4).map { spawn("create", dir.toString(), go.toString(), "client-7") }
        Thread.sleep(300) // let them start and wait on the go file
        Files.createFile(go)
        val lines = processes.map { outputOf(it) }
        assertEquals(1, lines.count { it.startsWith("won ") }, lines.joinToString("\n"))
        assertEquals(1, lines.map { it.substringAfter(' ') }.toSet().size, "every process uses the winner's secret")
        val stored = FileStateStorage(dir).get(StateKey.state("client-7"))!!
        assertEquals(lines.first().substringAfter(' '), stored.joinToString("") { "%02x".format(it.toInt() and 0xff) })
    }

    @Test
    fun updatesFromTwoProcessesAreNeverLost() {
        val dir = temp.resolve("state")
        val go = temp.resolve("go")
        val processes = (0 until 2).map { spawn("count", dir.toString(), go.toString(), "c", "150") }
        Thread.sleep(300)
        Files.createFile(go)
        processes.forEach { assertEquals("done", outputOf(it)) }
        val count = FileStateStorage(dir).get(StateKey.of("c", "counter"))!!.toString(Charsets.US_ASCII)
        assertEquals("300", count)
    }
}
