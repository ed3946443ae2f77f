package dev.ldp.client

import java.io.File
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/** Rules of the main sources of every module: every privacy coin from java.security.SecureRandom, through a ByteSource. */
class SourceRulesTest {
    private val kotlin = File(Vectors.repo, "kotlin")

    /** The main sources of each published module (`kotlin/ldp-client-*`; the testkit's are test helpers). */
    private val mains: List<File> = (kotlin.listFiles() ?: emptyArray())
        .filter { it.name.startsWith("ldp-client-") && it.name != "ldp-client-testkit" }
        .map { File(it, "src/main/kotlin") }
        .filter { it.isDirectory }
        .sortedBy { it.path }

    private fun sources(): List<File> = mains.flatMap { main -> main.walk().filter { it.isFile && it.name.endsWith(".kt") }.toList() }

    @Test
    fun everyLibraryModuleIsScanned() {
        val names = mains.map { it.parentFile.parentFile.parentFile.name } // kotlin/<module>/src/main/kotlin
        assertTrue(names.containsAll(listOf("ldp-client-core", "ldp-client-numeric", "ldp-client-upload", "ldp-client-cli")), names.toString())
    }

    @Test
    fun noOtherRandomGeneratorAppearsInTheMainSources() {
        val forbidden = Regex("""kotlin\.random|java\.util\.Random\b|\bRandom\s*\(|Math\.random|ThreadLocalRandom|SplittableRandom|\.shuffled\(\)|\.random\(\)""")
        val files = sources()
        assertTrue(files.size > 10, "main sources not found in $kotlin")
        val found = files.flatMap { f ->
            f.readLines().mapIndexedNotNull { i, line -> if (forbidden.containsMatchIn(line)) "${f.relativeTo(kotlin)}:${i + 1}: ${line.trim()}" else null }
        }
        assertEquals(emptyList(), found, "a generator other than SecureRandom")
    }

    @Test
    fun secureRandomIsCreatedInOnePlace() {
        val users = sources().filter { "SecureRandom()" in it.readText() }.map { it.name }
        assertEquals(listOf("Random.kt"), users)
    }
}
