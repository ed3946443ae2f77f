package dev.ldp.client

import java.io.File
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/** Rules of the main sources: every privacy coin from java.security.SecureRandom, through a ByteSource. */
class SourceRulesTest {
    private val main = File(Vectors.repo, "kotlin/src/main/kotlin")

    @Test
    fun noOtherRandomGeneratorAppearsInTheMainSources() {
        val forbidden = Regex("""kotlin\.random|java\.util\.Random\b|\bRandom\s*\(|Math\.random|ThreadLocalRandom|SplittableRandom|\.shuffled\(\)|\.random\(\)""")
        val files = main.walk().filter { it.isFile && it.name.endsWith(".kt") }.toList()
        assertTrue(files.size > 10, "main sources not found in $main")
        val found = files.flatMap { f ->
            f.readLines().mapIndexedNotNull { i, line -> if (forbidden.containsMatchIn(line)) "${f.relativeTo(main)}:${i + 1}: ${line.trim()}" else null }
        }
        assertEquals(emptyList(), found, "a generator other than SecureRandom")
    }

    @Test
    fun secureRandomIsCreatedInOnePlace() {
        val users = main.walk().filter { it.isFile && it.name.endsWith(".kt") && "SecureRandom()" in it.readText() }.map { it.name }.toList()
        assertEquals(listOf("Random.kt"), users)
    }
}
