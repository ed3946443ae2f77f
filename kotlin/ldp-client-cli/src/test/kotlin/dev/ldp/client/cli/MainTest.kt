package dev.ldp.client.cli

import dev.ldp.client.Json
import dev.ldp.client.Registry
import dev.ldp.client.Values
import dev.ldp.client.Vectors
import dev.ldp.client.state.FileStateStorage
import dev.ldp.client.state.StateKey
import java.io.ByteArrayInputStream
import java.io.ByteArrayOutputStream
import java.io.File
import java.io.PrintStream
import java.nio.file.Files
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/** The command-line encoder: reports per line, exit status and one-line errors (`ldp-encode`'s contract). */
class MainTest {
    private val grr = Vectors.specs.getValue("grr/str")
    private val dir: File = Files.createTempDirectory("ldp-main-test").toFile().apply { deleteOnExit() }
    private val specFile = File(dir, "spec.json").apply { writeText(grr.canonicalJson) }

    private class Run(val status: Int, val out: String, val err: String)

    private fun run(vararg args: String, stdin: ByteArray = ByteArray(0)): Run {
        val out = ByteArrayOutputStream()
        val err = ByteArrayOutputStream()
        val status = Main.run(arrayOf(*args), ByteArrayInputStream(stdin), PrintStream(out, true, "UTF-8"), PrintStream(err, true, "UTF-8"))
        return Run(status, out.toString("UTF-8"), err.toString("UTF-8"))
    }

    private fun failsWithOneLine(run: Run, vararg words: String) {
        assertEquals(2, run.status, run.err)
        val lines = run.err.trimEnd('\n').split('\n')
        assertEquals(1, lines.size, run.err)
        assertTrue(lines[0].startsWith("ldp-encode: "), run.err)
        for (w in words) assertTrue(w in lines[0], "'$w' not in: ${lines[0]}")
    }

    @Test
    fun eachLineOfStandardInputGivesOneReportOfTheSpecInOrder() {
        val domain = grr.domain().map { Values.text(it) }
        val text = "\uFEFF" + domain.joinToString("\r\n") + "\r\n" // a byte-order mark and CR LF, as Python reads them
        val run = run("--spec", specFile.path, stdin = text.toByteArray())
        assertEquals(0, run.status, run.err)
        val reports = run.out.trimEnd('\n').split('\n').map { Json.parseObject(it) }
        assertEquals(domain.size, reports.size)
        for (r in reports) {
            assertEquals(grr.fingerprint, r["spec"])
            assertTrue(Values.text(r["value"]) in domain, r.toString())
        }
        assertTrue("encoded ${domain.size} values with grr" in run.err, run.err)
    }

    @Test
    fun aValuesFileAndDashForStandardInputAreRead() {
        val value = Values.text(grr.domain()[0])
        val values = File(dir, "values.txt").apply { writeText("$value\n$value\n") }
        assertEquals(2, run("--spec", specFile.path, values.path).out.lines().count { it.isNotEmpty() })
        assertEquals(1, run("--spec", specFile.path, "-", stdin = "$value\n".toByteArray()).out.lines().count { it.isNotEmpty() })
    }

    @Test
    fun aValueOutsideTheDomainNamesItsLine() {
        val value = Values.text(grr.domain()[0])
        failsWithOneLine(run("--spec", specFile.path, stdin = "$value\nnot-a-value\n".toByteArray()), "line 2", "not in the domain")
    }

    @Test
    fun inputThatIsNotUtf8IsRefusedNamingLineAndByte() {
        val value = Values.text(grr.domain()[0])
        val bytes = "$value\n".toByteArray() + byteArrayOf(0x61, 0xff.toByte(), 0x0a)
        failsWithOneLine(run("--spec", specFile.path, stdin = bytes), "line 2", "0xff", "column 2")
    }

    @Test
    fun badArgumentsAreOneLineErrors() {
        failsWithOneLine(run(), "usage")
        failsWithOneLine(run("--spec"), "--spec needs a value")
        failsWithOneLine(run("--spec", specFile.path, "--colour", "red"), "unknown option")
        failsWithOneLine(run("--spec", File(dir, "missing.json").path), "no such file")
        failsWithOneLine(run("--spec", specFile.path, "a.txt", "b.txt"), "usage")
        val bad = File(dir, "bad.json").apply { writeText("""{"mechanism":"nope","epsilon":1.0}""") }
        failsWithOneLine(run("--spec", bad.path), "unknown mechanism")
    }

    @Test
    fun aGridSpecWithoutItsTableIsRefused() {
        val piecewise = Vectors.specs.values.firstOrNull { it.mechanism == "piecewise" } ?: return
        val file = File(dir, "piecewise.json").apply { writeText(piecewise.canonicalJson) }
        failsWithOneLine(run("--spec", file.path, stdin = "0.5\n".toByteArray()), "sampling table")
    }

    @Test
    fun aSpecOfNumbersReadsEachLineAsANumber() {
        // 1BitMean's encoder takes numbers only (Python's check_numeric_value): the command parses the text
        val onebit = Vectors.specs.values.firstOrNull { it.mechanism == "onebitmean" } ?: return
        val file = File(dir, "onebitmean.json").apply { writeText(onebit.canonicalJson) }
        val low = Values.text(onebit.fields["low"])
        val run = run("--spec", file.path, stdin = " $low \n$low\n".toByteArray())
        assertEquals(0, run.status, run.err)
        assertEquals(2, run.out.lines().count { it.isNotEmpty() })
        failsWithOneLine(run("--spec", file.path, stdin = "$low\nabc\n".toByteArray()), "line 2", "not a number")
    }

    @Test
    fun stateAndBudgetOptionsGoTogetherAsTheTypeScriptClientsDo() {
        val state = File(dir, "state").path
        failsWithOneLine(run("--spec", specFile.path, "--state", state), "--state and --client go together")
        failsWithOneLine(run("--spec", specFile.path, "--budget", "1"), "--budget needs --state")
        failsWithOneLine(run("--spec", specFile.path, "--state", state, "--client", "a", "--composition", "optimal"), "go with --budget")
        failsWithOneLine(run("--spec", specFile.path, "--state", state, "--client", ""), "--client is empty")
        failsWithOneLine(run("--spec", specFile.path, "--state", state, "--client", "a", "--budget", "lots"), "--budget must be a number")
        failsWithOneLine(run("--spec", specFile.path, "--state", state, "--client", "a", "--budget", "-1"), "budget epsilon")
    }

    @Test
    fun aClientsBudgetRefusesValuesOnceSpentAndIsKeptAcrossRuns() {
        val value = Values.text(grr.domain()[0])
        val epsilon = grr.fields["epsilon"] as Double
        val state = File(dir, "budgeted")
        val three = "$value\n$value\n$value\n".toByteArray()
        val first = run("--spec", specFile.path, "--state", state.path, "--client", "alice", "--budget", (1.5 * epsilon).toString(), stdin = three)
        assertEquals(3, first.status, first.err) // one report fits the budget; the other two are refused
        assertEquals(1, first.out.lines().count { it.isNotEmpty() })
        assertTrue("2 lines refused" in first.err, first.err)
        assertTrue(FileStateStorage(state).fileOf(StateKey.ledger("alice")).toFile().isFile)
        // the ledger is enforced without --budget too, and a different budget is refused
        val again = run("--spec", specFile.path, "--state", state.path, "--client", "alice", stdin = three)
        assertEquals(3, again.status, again.err)
        assertEquals("", again.out)
        failsWithOneLine(run("--spec", specFile.path, "--state", state.path, "--client", "alice", "--budget", (9 * epsilon).toString(), stdin = three), "budget")
        // another client has its own ledger; no budget and no ledger: nothing is charged nor created
        assertEquals(0, run("--spec", specFile.path, "--state", state.path, "--client", "bob", stdin = three).status)
        assertTrue(!FileStateStorage(state).fileOf(StateKey.ledger("bob")).toFile().exists())
    }

    @Test
    fun aMemoizedClientsSecretIsCreatedOnceAndKept() {
        val rappor = Vectors.specs.values.firstOrNull { it.mechanism == "rappor" } ?: return
        val file = File(dir, "rappor.json").apply { writeText(rappor.canonicalJson) }
        val state = File(dir, "rappor-state")
        val value = rappor.fields["domain"]?.let { Values.text((it as List<*>)[0]) } ?: "v1"
        val first = run("--spec", file.path, "--state", state.path, "--client", "1.0", stdin = "$value\n".toByteArray())
        assertEquals(0, first.status, first.err)
        val stateFile = FileStateStorage(state).fileOf(StateKey.state("1")).toFile() // "1.0" and "1" are one client
        val secret = stateFile.readBytes()
        val second = run("--spec", file.path, "--state", state.path, "--client", "1", stdin = "$value\n".toByteArray())
        assertEquals(0, second.status, second.err)
        assertTrue(secret.contentEquals(stateFile.readBytes()))
        // one client: its cohort, stored with its secret, is in both reports
        assertEquals(Json.parseObject(first.out.trim())["cohort"], Json.parseObject(second.out.trim())["cohort"])
    }

    @Test
    fun listMechanismsPrintsTheRegistry() {
        val run = run("--list-mechanisms")
        assertEquals(0, run.status)
        assertEquals(Registry.ENCODED, run.out.trimEnd('\n').split('\n'))
    }
}
